// SPDX-License-Identifier: Apache-2.0
// Signs of compromise: executables deleted from disk or run from a temporary directory, a GPU
// busy for someone who is neither a job nor allowed (and mining on it), ports that began to
// listen, and accounts other than root with UID 0. Each finding says how to isolate the host,
// keep the evidence, scan it and when to reinstall.
#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <map>
#include <regex>
#include <set>

#include "core/strings.h"
#include "doctor/checks/checks.h"
#include "doctor/checks/util.h"

namespace cardiac::doctor {
namespace {

using check_util::evidence;
using check_util::make_finding;

constexpr std::string_view kDeletedSuffix = " (deleted)";
constexpr std::array<std::string_view, 3> kTempDirs = {"/tmp/", "/dev/shm/", "/var/tmp/"};
// Miner names as they appear in an executable's or a process's name.
constexpr std::array<std::string_view, 16> kMinerNames = {
    "xmrig",   "ethminer",     "t-rex",     "trex",         "lolminer", "nbminer",
    "gminer",  "phoenixminer", "nanominer", "teamredminer", "bminer",   "cpuminer",
    "ccminer", "xmr-stak",     "minerd",    "srbminer"};
constexpr std::array<std::string_view, 3> kStratum = {"stratum+tcp://", "stratum+ssl://",
                                                      "stratum2+tcp://"};
// Ports mining pools listen on (stratum): a GPU process connected to one is mining.
constexpr std::array<unsigned, 10> kPoolPorts = {3333,  4444,  5555,  6666,  7777,
                                                 14433, 14444, 20535, 45560, 45700};
constexpr unsigned kBusyPercent = 70;   // GPU utilization that counts as busy
constexpr double kMostOfWindow = 0.8;   // share of the samples it must be busy in
constexpr std::size_t kMinSamples = 3;  // fewer samples say nothing about "for long"
constexpr std::size_t kMaxListed = 20;  // evidence lines per finding
// The store's port history becomes a baseline once the agent has watched this long, and a
// port first seen since then stays "new" for a week.
constexpr DurationNs kLearnTime = 3600 * kNsPerSec;
constexpr DurationNs kNewFor = 7 * 86400 * kNsPerSec;

std::string exe_path(const std::string& link) {
  if (link.ends_with(kDeletedSuffix)) return link.substr(0, link.size() - kDeletedSuffix.size());
  return link;
}

bool in_temp_dir(std::string_view path) {
  return std::any_of(kTempDirs.begin(), kTempDirs.end(),
                     [&](std::string_view d) { return path.starts_with(d); });
}

std::string base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "pid 777 (xmrig, user nobody): /tmp/.x/xmrig -o stratum+tcp://…"
std::string describe_process(const HostProcess& p) {
  std::string who = fmt::format("pid {} ({}", p.pid, p.comm.empty() ? "?" : p.comm);
  if (!p.user.empty()) {
    who += ", user " + p.user;
  } else if (p.uid) {
    who += fmt::format(", uid {}", *p.uid);
  }
  who += ")";
  if (p.exe) who += ", executable " + *p.exe;
  if (!p.cmdline.empty()) who += ": " + p.cmdline;
  return who;
}

// Keep-the-evidence and clean-up steps every finding about a process shares.
void add_process_actions(Finding& f, const std::vector<std::uint32_t>& pids) {
  const std::string pid = pids.size() == 1 ? std::to_string(pids[0]) : "<pid>";
  f.actions.push_back(fmt::format(
      "Preserve the evidence before stopping anything: `mkdir -p /root/evidence && "
      "cp /proc/{0}/exe /root/evidence/{0}.exe; cat /proc/{0}/cmdline /proc/{0}/environ | tr '\\0' "
      "' ' > /root/evidence/{0}.cmdline; ls -l /proc/{0}/fd > /root/evidence/{0}.fd; ss -tunap > "
      "/root/evidence/sockets.txt; cardiac doctor --json > /root/evidence/doctor.json`",
      pid));
  f.actions.push_back(fmt::format(
      "Stop it (`kill -STOP {0}` to freeze it for a memory dump with `gcore {0}`, then `kill -KILL "
      "{0}`) and look for how it came back: `crontab -l -u <user>`, `ls -la /etc/cron* "
      "/etc/systemd/system ~<user>/.ssh/authorized_keys`, `systemctl list-units --type=service`",
      pid));
}

void add_scan_and_reinstall(Finding& f) {
  f.actions.emplace_back(
      "Scan the host: `rkhunter --check --sk`, `clamscan -ri /tmp /dev/shm /var/tmp /home /root`, "
      "and check the installed files against the packages (`debsums -c` on Debian/Ubuntu, "
      "`rpm -Va` on RHEL)");
  f.actions.emplace_back(
      "If it was not yours, the host cannot be trusted again: reinstall it from a known-good "
      "image, rotate every credential that was on it (SSH keys, API tokens, cardiac's "
      "api-token), and only then return it to service");
}

void add_isolate(Finding& f, std::string_view reason) {
  f.actions.push_back(fmt::format(
      "Isolate the host: keep new work off it (`scontrol update nodename=$(hostname -s) "
      "state=drain reason=\"{0}\"` on Slurm; `for g in $(nvidia-smi --query-gpu=index "
      "--format=csv,noheader); do cardiac fence add $g --reason \"{0}\"; done` for cardiac's "
      "queue) and cut it from the network but for your own SSH session",
      reason));
}

// --- executables ---------------------------------------------------------------------------

void check_deleted_executables(const SecurityFacts& s, std::vector<Finding>& out) {
  std::vector<const HostProcess*> gone;
  std::vector<const HostProcess*> replaced;
  for (const auto& p : s.processes) {
    if (!p.exe || !p.exe->ends_with(kDeletedSuffix)) continue;
    const std::string path = exe_path(*p.exe);
    // After a package upgrade a daemon still runs the old file while the new one is in place:
    // the same path exists again. A path that is gone, or memfd (never on disk), is not that.
    const bool memfd = path.starts_with("/memfd:");
    (p.exe_replaced && !memfd && !in_temp_dir(path) ? replaced : gone).push_back(&p);
  }
  if (gone.empty() && replaced.empty()) return;
  const bool warn = !gone.empty();
  const auto& list = warn ? gone : replaced;
  Finding f = make_finding(
      "security.deleted_executable", Category::kSecurity,
      warn ? Severity::kWarning : Severity::kInfo, warn ? Confidence::kMedium : Confidence::kLow,
      {},
      warn ? fmt::format("{} process{} run{} an executable deleted from disk", list.size(),
                         list.size() == 1 ? "" : "es", list.size() == 1 ? "s" : "")
           : fmt::format("{} process{} still run{} an executable that was replaced on disk",
                         list.size(), list.size() == 1 ? "" : "es", list.size() == 1 ? "s" : ""),
      warn ? "A process whose executable was deleted after it started (or that never had one "
             "on disk: memfd) hides what it is: malware deletes its binary so that a scan of the "
             "disk finds nothing. The running copy is still readable through /proc/<pid>/exe."
           : "A file of the same name is on disk again, which is what a package upgrade does to "
             "a running daemon: most likely harmless, the process runs the old version until it "
             "restarts.");
  std::vector<std::uint32_t> pids;
  for (std::size_t i = 0; i < list.size() && i < kMaxListed; ++i) {
    f.evidence.push_back(evidence("process", describe_process(*list[i]), std::nullopt,
                                  fmt::format("/proc/{}/exe", list[i]->pid)));
    pids.push_back(list[i]->pid);
  }
  if (warn) {
    f.actions.emplace_back(
        "Find out whose it is: `ps -o pid,user,lstart,cmd -p <pid>`; a program you know that "
        "was upgraded under it is harmless (restart it), anything else treat as an intrusion");
    add_isolate(f, "security: deleted executable");
    add_process_actions(f, pids);
    add_scan_and_reinstall(f);
  } else {
    f.actions.emplace_back(
        "Restart each listed service so that it runs the new version (`systemctl restart "
        "<unit>`; `systemctl status <pid>` names the unit), or `needrestart -r l` to list them");
    f.actions.emplace_back(
        "If no upgrade explains it (`grep -h \" upgrade \" /var/log/dpkg.log*`), treat it as "
        "an intrusion: see docs/runbooks/security.deleted_executable.md");
  }
  out.push_back(std::move(f));
}

void check_temp_executables(const SecurityFacts& s, std::vector<Finding>& out) {
  std::vector<const HostProcess*> list;
  for (const auto& p : s.processes) {
    if (p.exe && in_temp_dir(exe_path(*p.exe))) list.push_back(&p);
  }
  if (list.empty()) return;
  Finding f = make_finding(
      "security.tmp_executable", Category::kSecurity, Severity::kWarning, Confidence::kHigh, {},
      fmt::format("{} process{} run{} from /tmp, /dev/shm or /var/tmp", list.size(),
                  list.size() == 1 ? "" : "es", list.size() == 1 ? "s" : ""),
      "Programs are installed under /usr, /opt or a home directory; a process whose executable "
      "is in a world-writable temporary directory is how a dropped payload (a miner, a "
      "backdoor) runs after an intrusion.");
  std::vector<std::uint32_t> pids;
  for (std::size_t i = 0; i < list.size() && i < kMaxListed; ++i) {
    f.evidence.push_back(evidence("process", describe_process(*list[i]), std::nullopt,
                                  fmt::format("/proc/{}/exe", list[i]->pid)));
    pids.push_back(list[i]->pid);
  }
  f.actions.emplace_back(
      "Find out whose it is: `ps -o pid,user,lstart,cmd -p <pid>`, `ls -la $(dirname "
      "$(readlink /proc/<pid>/exe))`; a test build you ran yourself is harmless");
  add_isolate(f, "security: executable in a temporary directory");
  add_process_actions(f, pids);
  add_scan_and_reinstall(f);
  out.push_back(std::move(f));
}

// --- accounts ------------------------------------------------------------------------------

void check_uid0_accounts(const SecurityFacts& s, std::vector<Finding>& out) {
  std::vector<const Uid0Account*> others;
  for (const auto& a : s.uid0_accounts) {
    if (a.name != "root") others.push_back(&a);
  }
  if (others.empty()) return;
  std::vector<std::string> names;
  for (const auto* a : others) names.push_back(a->name);
  Finding f = make_finding(
      "security.uid0_account", Category::kSecurity, Severity::kCritical, Confidence::kHigh, {},
      fmt::format("Account{} other than root with UID 0: {}", others.size() == 1 ? "" : "s",
                  fmt::join(names, ", ")),
      "Any account with UID 0 is root under another name: whoever logs in with it has full "
      "control of the host, and logs name it instead of root. An intruder adds one as a "
      "backdoor; no distribution ships one.");
  for (const auto* a : others) {
    f.evidence.push_back(
        evidence("reading", a->text, std::nullopt, fmt::format("/etc/passwd:{}", a->line)));
  }
  f.actions.push_back(fmt::format(
      "Preserve the evidence: `mkdir -p /root/evidence && cp -a /etc/passwd /etc/shadow "
      "/etc/group /root/evidence/ && last -F > /root/evidence/last.txt && lastlog > "
      "/root/evidence/lastlog.txt`; when and how it was added: `journalctl -t useradd -t "
      "usermod`, `grep -E '{}' /var/log/auth.log*`",
      fmt::join(names, "|")));
  f.actions.push_back(fmt::format(
      "Lock it at once (`usermod -L -e 1 {0}` and remove its keys from `~{0}/.ssh/"
      "authorized_keys`), then delete the line with `vipw` (`userdel` would remove root's "
      "files too: it shares UID 0)",
      names.front()));
  add_isolate(f, "security: UID 0 account");
  add_scan_and_reinstall(f);
  out.push_back(std::move(f));
}

// --- GPUs ----------------------------------------------------------------------------------

bool pattern_matches(const std::string& pattern, const std::string& text) {
  if (text.empty()) return false;
  if (pattern.starts_with("re:")) {
    try {
      return std::regex_search(text, std::regex(pattern.substr(3), std::regex::extended));
    } catch (const std::regex_error&) {
      return false;  // the configuration loader refuses a bad one; a hand-built input may not
    }
  }
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

bool allowed_gpu_command(const DoctorConfig& c, const HostProcess* p, const std::string& name) {
  for (const auto& pattern : c.allowed_gpu_commands) {
    if (pattern_matches(pattern, name)) return true;
    if (p == nullptr) continue;
    if (pattern_matches(pattern, p->cmdline) || pattern_matches(pattern, p->comm)) return true;
    if (p->exe && pattern_matches(pattern, exe_path(*p->exe))) return true;
  }
  return false;
}

// Why we think it mines: each sign a piece of evidence.
std::vector<Evidence> mining_signs(const SecurityFacts& s, const HostProcess* p,
                                   const std::string& name) {
  std::vector<Evidence> signs;
  if (p == nullptr) return signs;
  const std::string cmd = to_lower(p->cmdline);
  for (auto proto : kStratum) {
    if (cmd.find(proto) != std::string::npos) {
      signs.push_back(
          evidence("process",
                   fmt::format("its command line names a mining pool ({}…): {}", proto, p->cmdline),
                   std::nullopt, fmt::format("/proc/{}/cmdline", p->pid)));
      break;
    }
  }
  std::set<std::string> names = {to_lower(name), to_lower(p->comm)};
  if (p->exe) names.insert(to_lower(base_name(exe_path(*p->exe))));
  if (!p->cmdline.empty())
    names.insert(to_lower(base_name(p->cmdline.substr(0, p->cmdline.find(' ')))));
  for (const auto& n : names) {
    auto miner = std::find_if(kMinerNames.begin(), kMinerNames.end(), [&](std::string_view m) {
      return !n.empty() && n.find(m) != std::string::npos;
    });
    if (miner != kMinerNames.end()) {
      signs.push_back(evidence("process",
                               fmt::format("\"{}\" is the name of a known miner ({})", n, *miner),
                               std::nullopt, fmt::format("/proc/{}/exe", p->pid)));
      break;
    }
  }
  for (const auto& sock : s.sockets) {
    if (sock.family() != "tcp" || (sock.state != 0x01 && sock.state != 0x02)) continue;
    if (std::find(kPoolPorts.begin(), kPoolPorts.end(), sock.remote_port) == kPoolPorts.end()) {
      continue;
    }
    if (sock.remote_address.starts_with("127.") || sock.remote_address == "::1") continue;
    if (!std::binary_search(p->socket_inodes.begin(), p->socket_inodes.end(), sock.inode)) {
      continue;
    }
    signs.push_back(
        evidence("process",
                 fmt::format("connected to {}:{}, a mining-pool port ({} {}:{}, {})",
                             sock.remote_address, sock.remote_port, sock.proto, sock.local_address,
                             sock.local_port, sock.state == 0x01 ? "established" : "connecting"),
                 std::nullopt, fmt::format("/proc/net/{} inode {}", sock.proto, sock.inode)));
  }
  return signs;
}

struct GpuUse {
  std::vector<unsigned> gpus;
  GpuRef first_gpu;
  std::string name;
  std::vector<Evidence> utilization;  // one per GPU, with its series
};

void check_gpu_intruders(const DoctorInput& in, std::vector<Finding>& out) {
  const SecurityFacts& s = *in.security;
  const GpuMap map(in);
  std::map<std::uint32_t, GpuUse> busy;  // pid → where it kept a GPU busy
  for (const auto& w : check_util::gpu_windows(in)) {
    if (w.ok.size() < kMinSamples) continue;
    std::map<std::uint32_t, std::size_t> busy_samples;
    std::map<std::uint32_t, std::string> names;
    std::set<std::uint32_t> in_job;
    Evidence util;
    for (const auto& sample : w.ok) {
      const auto& r = *sample.reading;
      const unsigned u = r.utilization_gpu.value_or(0);
      util.series.emplace_back(sample.time, static_cast<double>(u));
      for (const auto& p : r.processes) {
        if (!p.job.empty()) in_job.insert(p.pid);
        if (!p.name.empty()) names[p.pid] = p.name;
        if (u >= kBusyPercent) ++busy_samples[p.pid];
      }
    }
    for (const auto& [pid, n] : busy_samples) {
      if (static_cast<double>(n) < kMostOfWindow * static_cast<double>(w.ok.size())) continue;
      if (in_job.contains(pid)) continue;
      const HostProcess* hp = s.process(pid);
      if (hp != nullptr && !hp->job.empty()) continue;
      const std::string name = names[pid];
      if (allowed_gpu_command(in.config, hp, name)) continue;
      GpuUse& use = busy[pid];
      if (use.gpus.empty()) use.first_gpu = check_util::gpu_ref(w.last(), map);
      use.gpus.push_back(w.index);
      use.name = name;
      Evidence e = evidence(
          "reading",
          fmt::format("GPU {} at {} % utilization or more in {} of {} samples while pid {} held it",
                      w.index, kBusyPercent, n, w.ok.size(), pid),
          w.ok.back().time);
      e.metric = fmt::format("GPU {} utilization", w.index);
      e.unit = "%";
      e.series = util.series;
      e.threshold = kBusyPercent;
      use.utilization.push_back(std::move(e));
    }
  }
  for (auto& [pid, use] : busy) {
    const HostProcess* hp = s.process(pid);
    auto signs = mining_signs(s, hp, use.name);
    const bool mining = !signs.empty();
    const std::string who = hp != nullptr ? fmt::format("pid {} ({})", pid, hp->comm)
                                          : fmt::format("pid {} ({})", pid, use.name);
    Finding f = make_finding(
        mining ? "security.gpu_cryptojacking" : "security.unknown_gpu_process", Category::kSecurity,
        mining ? Severity::kCritical : Severity::kWarning,
        mining ? (signs.size() > 1 ? Confidence::kHigh : Confidence::kMedium) : Confidence::kMedium,
        use.first_gpu,
        mining ? fmt::format("{} is mining cryptocurrency on {} GPU{}", who, use.gpus.size(),
                             use.gpus.size() == 1 ? "" : "s")
               : fmt::format("{} keeps {} GPU{} busy outside any job", who, use.gpus.size(),
                             use.gpus.size() == 1 ? "" : "s"),
        mining ? "A process that is neither a Slurm job, a cardiac queue job nor on [security] "
                 "allowed_gpu_commands kept the GPU busy for most of the window, and it shows "
                 "the signs of a miner: GPU cryptojacking, someone else's code burning the GPUs "
                 "(and the power bill) for their wallet."
               : "A process that is neither a Slurm job, a cardiac queue job nor on [security] "
                 "allowed_gpu_commands kept the GPU busy for most of the window. It may be a "
                 "user working around the scheduler, or an intruder's program: find out which.");
    f.evidence.push_back(
        hp != nullptr
            ? evidence("process", describe_process(*hp), std::nullopt, fmt::format("/proc/{}", pid))
            : evidence("process", fmt::format("{}: no longer in /proc", who), std::nullopt));
    for (auto& e : signs) f.evidence.push_back(std::move(e));
    for (auto& e : use.utilization) f.evidence.push_back(std::move(e));
    if (!mining) {
      f.actions.push_back(fmt::format(
          "Find out whose it is: `ps -o pid,user,lstart,cmd -p {0}`, `cat /proc/{0}/cgroup`; a "
          "known service that may use the GPU outside the scheduler goes on `[security] "
          "allowed_gpu_commands` in cardiac.toml (a glob, or \"re:\" and a regular expression, "
          "matched against its command line, executable and name)",
          pid));
      f.actions.emplace_back(
          "If nobody owns it, treat it as an intrusion: the steps below, as in "
          "docs/runbooks/security.gpu_cryptojacking.md");
    }
    add_isolate(f, mining ? "security: GPU cryptojacking" : "security: unknown GPU process");
    if (mining) {
      f.actions.emplace_back(
          "Block the pool before it is stopped, so it cannot hand over to a second copy: "
          "`iptables -I OUTPUT -p tcp -d <pool address> -j REJECT` for each connection above");
    }
    add_process_actions(f, {pid});
    add_scan_and_reinstall(f);
    out.push_back(std::move(f));
  }
}

// --- listening ports -----------------------------------------------------------------------

bool allowed_port(const DoctorConfig& c, std::string_view family, unsigned port) {
  return std::any_of(
      c.allowed_listen_ports.begin(), c.allowed_listen_ports.end(), [&](const ListenPortRule& r) {
        return (r.proto.empty() || r.proto == family) && port >= r.low && port <= r.high;
      });
}

void check_listening_ports(const DoctorInput& in, std::vector<Finding>& out) {
  const SecurityFacts& s = *in.security;
  // Without a baseline every port would be "new": nothing to compare with, no finding.
  const bool have_store = in.seen_listen_ports && !in.seen_listen_ports->empty();
  if (in.config.allowed_listen_ports.empty() && !have_store) return;
  std::map<std::pair<std::string, unsigned>, TimeNs> seen;  // (family, port) → first seen
  TimeNs watching_since = 0;
  if (have_store) {
    watching_since = in.seen_listen_ports->front().first_seen;
    for (const auto& p : *in.seen_listen_ports) {
      watching_since = std::min(watching_since, p.first_seen);
      seen[{p.proto, p.port}] = p.first_seen;
    }
  }
  auto known = [&](std::string_view family, unsigned port) {
    if (allowed_port(in.config, family, port)) return true;
    if (!have_store) return false;
    auto it = seen.find({std::string(family), port});
    if (it == seen.end()) return false;
    // Seen while the agent was still learning the host, or long enough ago to be its normal.
    return it->second <= watching_since + kLearnTime || it->second + kNewFor < in.now;
  };
  struct NewPort {
    std::vector<const SocketEntry*> sockets;
    const HostProcess* owner = nullptr;
  };
  std::map<std::pair<std::string, unsigned>, NewPort> fresh;
  for (const auto& sock : s.sockets) {
    if (!sock.listening()) continue;
    const std::string family(sock.family());
    // An unconnected UDP socket on an ephemeral port is a client's (a resolver's query), not a
    // service.
    if (family == "udp" && sock.local_port >= s.ephemeral_low &&
        sock.local_port <= s.ephemeral_high) {
      continue;
    }
    if (known(family, sock.local_port)) continue;
    const HostProcess* owner = s.owner(sock.inode);
    // A job's ports (NCCL's bootstrap, torch.distributed's store) are the job's business.
    if (owner != nullptr && !owner->job.empty()) continue;
    NewPort& np = fresh[{family, sock.local_port}];
    np.sockets.push_back(&sock);
    if (np.owner == nullptr) np.owner = owner;
  }
  if (fresh.empty()) return;
  std::vector<std::string> ports;
  for (const auto& [key, np] : fresh) ports.push_back(fmt::format("{}/{}", key.first, key.second));
  Finding f = make_finding(
      "security.new_listening_port", Category::kSecurity, Severity::kWarning, Confidence::kMedium,
      {},
      fmt::format("New listening port{}: {}", ports.size() == 1 ? "" : "s", fmt::join(ports, ", ")),
      fmt::format("{} not in [security] allowed_listen_ports{}. A port that begins to listen "
                  "without a change you know of is how a backdoor or a bind shell waits for its "
                  "owner.",
                  ports.size() == 1 ? "This port is" : "These ports are",
                  have_store ? " and the agent had not seen it listening before" : ""));
  std::vector<std::uint32_t> pids;
  std::size_t listed = 0;
  for (const auto& [key, np] : fresh) {
    if (listed++ == kMaxListed) break;
    std::vector<std::string> on;
    for (const auto* sock : np.sockets)
      on.push_back(fmt::format("{}:{}", sock->local_address, sock->local_port));
    std::string text = fmt::format("{} {} listening", key.first, fmt::join(on, ", "));
    if (np.owner != nullptr) {
      text += ", " + describe_process(*np.owner);
      pids.push_back(np.owner->pid);
    } else {
      text += fmt::format(", owner unknown (uid {}; no process's fd holds socket inode {})",
                          np.sockets.front()->uid, np.sockets.front()->inode);
    }
    f.evidence.push_back(evidence("reading", text, std::nullopt,
                                  fmt::format("/proc/net/{}", np.sockets.front()->proto)));
  }
  f.actions.push_back(fmt::format(
      "Find out what it is: `ss -tulpn 'sport = :{}'`, `ps -o pid,user,lstart,cmd -p <pid>`; a "
      "service you installed goes on `[security] allowed_listen_ports` in cardiac.toml",
      fresh.begin()->first.second));
  f.actions.push_back(fmt::format(
      "If it is not yours, close it from outside first: `iptables -I INPUT -p {} --dport {} -j "
      "DROP`",
      fresh.begin()->first.first, fresh.begin()->first.second));
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  add_isolate(f, "security: new listening port");
  add_process_actions(f, pids);
  add_scan_and_reinstall(f);
  out.push_back(std::move(f));
}

}  // namespace

void check_security(const DoctorInput& in, std::vector<Finding>& out) {
  if (!in.security) return;
  check_deleted_executables(*in.security, out);
  check_temp_executables(*in.security, out);
  check_uid0_accounts(*in.security, out);
  check_gpu_intruders(in, out);
  check_listening_ports(in, out);
}

}  // namespace cardiac::doctor
