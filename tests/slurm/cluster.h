// SPDX-License-Identifier: Apache-2.0
// A real one-machine Slurm cluster for a test: munged, slurmctld and two slurmd (nodes n1, n2,
// eight fake GPUs each: /dev/null clones made with mknod, as gres.conf wants character
// devices), all on loopback with free ports, in a private temporary directory (state, spool,
// logs, configuration) removed afterwards. Recipe: ../shared/reference/scheduling.md §1.7.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "platform/subprocess.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::slurm_e2e {

using e2e::eventually;
using e2e::read_text;
using e2e::RunResult;

// The programs the cluster needs, or the first one missing.
inline std::string missing_slurm_program() {
  for (const char* p : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd",
                        "/usr/bin/scontrol", "/usr/bin/sbatch", "/usr/bin/munge"}) {
    if (::access(p, X_OK) != 0) return p;
  }
  return "";
}

using e2e::run_program;

struct ClusterOptions {
  // slurm.conf lines added at the end (Prolog=, HealthCheckProgram=, …).
  std::string extra_conf;
};

class SlurmCluster {
 public:
  explicit SlurmCluster(const ClusterOptions& options) {
    char tmpl[] = "/tmp/cardiac-slurm-XXXXXX";
    dir_ = mkdtemp(tmpl);
    // munged insists that everyone may traverse to its socket.
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all |
                                           std::filesystem::perms::group_exec |
                                           std::filesystem::perms::others_exec);
    for (const char* d : {"munge", "run", "state", "spool/n1", "spool/n2", "log", "dev"}) {
      std::filesystem::create_directories(dir_ + "/" + d);
    }
    std::filesystem::permissions(dir_ + "/munge", std::filesystem::perms::owner_all);
    std::filesystem::permissions(dir_ + "/run", std::filesystem::perms::owner_all |
                                                    std::filesystem::perms::group_read |
                                                    std::filesystem::perms::group_exec |
                                                    std::filesystem::perms::others_read |
                                                    std::filesystem::perms::others_exec);
    for (int i = 0; i < 8; ++i) {
      std::string dev = dir_ + "/dev/nvidia" + std::to_string(i);
      ::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3));
    }
    write_munge_key();
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    host_ = host;
    ctld_port_ = e2e::free_port();
    const int slurmd_port = e2e::free_port();
    node_ports_ = {e2e::free_port(), e2e::free_port()};
    std::ofstream conf(conf_path());
    conf << "ClusterName=cardiactest\n"
         << "SlurmctldHost=" << host_ << "(127.0.0.1)\n"
         << "SlurmctldPort=" << ctld_port_ << "\n"
         << "SlurmdPort=" << slurmd_port << "\n"
         << "AuthType=auth/munge\n"
         // A short credential lifetime: a requeued job may start again this long + 1 s later.
         << "AuthInfo=socket=" << munge_socket() << ",cred_expire=10\n"
         << "SlurmUser=root\n"
         << "StateSaveLocation=" << dir_ << "/state\n"
         << "SlurmdSpoolDir=" << dir_ << "/spool/%n\n"
         << "SlurmctldPidFile=" << dir_ << "/run/slurmctld.pid\n"
         << "SlurmdPidFile=" << dir_ << "/run/slurmd-%n.pid\n"
         << "SlurmctldLogFile=" << dir_ << "/log/slurmctld.log\n"
         << "SlurmdLogFile=" << dir_ << "/log/slurmd-%n.log\n"
         << "ProctrackType=proctrack/linuxproc\n"
         << "TaskPlugin=task/none\n"
         << "JobAcctGatherType=jobacct_gather/none\n"
         << "AccountingStorageType=accounting_storage/none\n"
         << "SchedulerType=sched/backfill\n"
         // A failed prolog requeues its job without holding it.
         << "SchedulerParameters=nohold_on_prolog_fail\n"
         << "SelectType=select/cons_tres\n"
         << "SelectTypeParameters=CR_Core\n"
         << "GresTypes=gpu\n"
         << "ReturnToService=2\n"
         << "SlurmdTimeout=30\n"
         << "MailProg=/bin/true\n"
         << options.extra_conf << "NodeName=n[1-2] NodeHostname=" << host_
         << " NodeAddr=127.0.0.1 Port=[" << node_ports_[0] << "," << node_ports_[1]
         << "] CPUs=2 RealMemory=500 Gres=gpu:8\n"
         << "PartitionName=gpu Nodes=n[1-2] Default=YES MaxTime=10 State=UP\n";
    conf.close();
    std::ofstream(dir_ + "/gres.conf")
        << "NodeName=n[1-2] Name=gpu File=" << dir_ << "/dev/nvidia[0-7]\n";
  }

  ~SlurmCluster() { stop(); }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // munged, slurmctld, both slurmd, until both nodes are idle and responding.
  bool start() {
    if (!spawn_daemon(
            {"/usr/sbin/munged", "-F", "--socket=" + munge_socket(),
             "--key-file=" + dir_ + "/munge/munge.key", "--log-file=" + dir_ + "/log/munged.log",
             "--pid-file=" + dir_ + "/run/munged.pid", "--seed-file=" + dir_ + "/munge/seed"})) {
      return false;
    }
    munged_ = std::move(daemons_.back());
    daemons_.pop_back();
    if (!eventually([&] { return std::filesystem::exists(munge_socket()); }, 10)) return false;
    if (!spawn_daemon({"/usr/sbin/slurmctld", "-D", "-c", "-f", conf_path()})) return false;
    for (const char* node : {"n1", "n2"}) {
      if (!spawn_daemon({"/usr/sbin/slurmd", "-D", "-N", node, "-f", conf_path()})) return false;
    }
    return eventually(
        [&] {
          auto r = scontrol({"show", "node", "--oneliner"});
          return r.exit_code == 0 && count(r.out, "State=IDLE ") == 2;
        },
        60);
  }

  // `scontrol shutdown`, then SIGKILL to whatever is left; munged last.
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    run_program({"/usr/bin/scancel", "--full", "--partition=gpu"}, env());
    run_program({"/usr/bin/scontrol", "shutdown"}, env());
    for (auto& d : daemons_) {
      if (!d.wait_exit_within(10 * kNsPerSec)) {
        ::kill(-d.pid(), SIGKILL);  // its process group: slurmscriptd, slurmstepd
        d.wait();
      }
    }
    if (munged_.running()) {
      munged_.signal(SIGTERM);
      if (!munged_.wait_exit_within(5 * kNsPerSec)) munged_.signal(SIGKILL);
      munged_.wait();
    }
    if (std::getenv("CARDIAC_KEEP_SLURM") == nullptr) std::filesystem::remove_all(dir_);
  }

  // The environment every Slurm client and hook of this cluster needs.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> env() const {
    return {{"SLURM_CONF", conf_path()}};
  }
  RunResult scontrol(std::vector<std::string> args) const {
    args.insert(args.begin(), "/usr/bin/scontrol");
    return run_program(std::move(args), env());
  }
  RunResult sbatch(std::vector<std::string> args) const {
    args.insert(args.begin(), "/usr/bin/sbatch");
    return run_program(std::move(args), env());
  }

  // `scontrol show node NODE` as "STATE|REASON" ("IDLE+DRAIN|cardiac: …").
  [[nodiscard]] std::string node_state(const std::string& node) const {
    auto r = scontrol({"show", "node", "--oneliner", node});
    std::string state = field(r.out, "State");
    std::string reason;
    if (auto at = r.out.find(" Reason="); at != std::string::npos) {
      reason = r.out.substr(at + 8);
      if (auto stamp = reason.rfind(" ["); stamp != std::string::npos) reason.resize(stamp);
    }
    return state + "|" + reason;
  }
  [[nodiscard]] std::string job_field(const std::string& id, const std::string& key) const {
    return field(scontrol({"show", "job", "--oneliner", id}).out, key);
  }

  // A hook wrapper as slurm.conf runs it: slurm.conf names a program without arguments, so a
  // site writes a two-line script. Each node reads its own agent's configuration,
  // <dir>/<node>.toml (a link the test makes).
  void write_hook(const std::string& name, const std::string& hook) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n"
                        << "export SLURM_CONF=" << conf_path() << "\n"
                        << "exec " << CARDIAC_BINARY << " slurm " << hook << " --config " << dir_
                        << "/$SLURMD_NODENAME.toml --scontrol /usr/bin/scontrol --timeout 10s >>"
                        << dir_ << "/log/" << name << "-$SLURMD_NODENAME.log 2>&1\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all |
                                           std::filesystem::perms::group_read |
                                           std::filesystem::perms::others_read);
  }
  // The directory is known only once the cluster runs, so slurm.conf names a hook as
  // kHookPlaceholder: point it at <dir>/<name> and have slurmctld re-read the file. Returns
  // scontrol's exit code.
  static constexpr const char* kHookPlaceholder = "/tmp/placeholder";
  [[nodiscard]] int point_hook_at(const std::string& name) const {
    std::string conf = read_text(conf_path());
    const std::string from = kHookPlaceholder;
    conf.replace(conf.find(from), from.size(), dir_ + "/" + name);
    std::ofstream(conf_path(), std::ios::trunc) << conf;
    return scontrol({"reconfigure"}).exit_code;
  }
  // Node `node`'s hooks read the configuration at `config`.
  void config_for(const std::string& node, const std::string& config) const {
    std::filesystem::remove(dir_ + "/" + node + ".toml");
    std::filesystem::create_symlink(config, dir_ + "/" + node + ".toml");
  }

  [[nodiscard]] const std::string& dir() const { return dir_; }
  [[nodiscard]] std::string conf_path() const { return dir_ + "/slurm.conf"; }
  [[nodiscard]] std::string log(const std::string& name) const {
    return read_text(dir_ + "/log/" + name);
  }
  // Everything a failing test wants to see.
  [[nodiscard]] std::string logs() const {
    std::string s;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/log", ec)) {
      std::string text = read_text(e.path());
      if (text.size() > 3000) text = "…" + text.substr(text.size() - 3000);
      s += "==> " + e.path().string() + "\n" + text + "\n";
    }
    return s;
  }

  static std::string field(const std::string& line, const std::string& key) {
    const std::string k = " " + key + "=";
    std::string padded = " " + line;
    auto at = padded.find(k);
    if (at == std::string::npos) return "";
    at += k.size();
    auto end = padded.find_first_of(" \n", at);
    return padded.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }

 private:
  static std::size_t count(const std::string& s, const std::string& part) {
    std::size_t n = 0;
    for (auto at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
    return n;
  }
  [[nodiscard]] std::string munge_socket() const { return dir_ + "/run/munge.sock"; }
  void write_munge_key() const {
    std::random_device rd;
    std::string key(1024, '\0');
    for (auto& c : key) c = static_cast<char>(rd());
    const std::string path = dir_ + "/munge/munge.key";
    std::ofstream(path, std::ios::binary) << key;
    std::filesystem::permissions(
        path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  // In the foreground (-D / -F), its standard error into log/<name>.stderr.
  bool spawn_daemon(std::vector<std::string> argv) {
    SpawnOptions o;
    std::string name = std::filesystem::path(argv[0]).filename().string();
    if (argv.size() > 3 && argv[2] == "-N") name += "-" + argv[3];
    o.argv = std::move(argv);
    o.env = env();
    o.pipe_stdin = false;
    o.pipe_stdout = false;
    const std::string err = dir_ + "/log/" + name + ".stderr";
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) o.pass_fds = {{fd, 2}};
    auto c = Child::spawn(o);
    if (fd >= 0) ::close(fd);
    if (!c) return false;
    daemons_.push_back(std::move(*c));
    return true;
  }

  std::string dir_;
  std::string host_;
  int ctld_port_ = 0;
  std::vector<int> node_ports_;
  Child munged_;
  std::vector<Child> daemons_;
  bool stopped_ = false;
};

}  // namespace cardiac::slurm_e2e
