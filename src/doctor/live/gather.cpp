// SPDX-License-Identifier: Apache-2.0
#include "doctor/live/gather.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "doctor/kernel_log.h"
#include "doctor/live/kernel_log_source.h"
#include "doctor/live/probe.h"
#include "doctor/live/store_input.h"
#include "health/report.h"
#include "host/bounded.h"
#include "host/processes.h"
#include "kmsg/record.h"
#include "netproc/snapshot.h"
#include "serving/engines.h"
#include "serving/scrape.h"
#include "serving/vram_book.h"
#include "store/access.h"
#include "store/db.h"
#include "store/events.h"
#include "store/listen_ports.h"
#include "store/query.h"
#include "store/schema.h"
#include "store/sealed.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::doctor {
namespace {

constexpr double kUserHz = 100;  // USER_HZ: /proc's jiffies are in these on every Linux ABI

struct TaskTimes {
  std::string comm;
  char state = '?';
  std::uint64_t jiffies = 0;
  std::optional<std::string> wchan;
};

struct ProcTimes {
  bool exists = false;
  std::string comm;
  std::uint64_t jiffies = 0;
  std::map<std::int64_t, TaskTimes> tasks;
};

ProcTimes read_proc_times(const FileSystem& fs, std::uint32_t pid) {
  ProcTimes p;
  auto stat = fs.read_file(fmt::format("/proc/{}/stat", pid));
  if (!stat) return p;
  auto parsed = host::parse_proc_pid_stat(*stat);
  if (!parsed) return p;
  p.exists = true;
  p.comm = parsed->comm;
  p.jiffies = parsed->utime + parsed->stime;
  auto tids = fs.list_dir(fmt::format("/proc/{}/task", pid));
  if (!tids) return p;
  for (const auto& tid_text : *tids) {
    auto tid = parse_i64(tid_text);
    if (!tid) continue;
    auto ts = fs.read_file(fmt::format("/proc/{}/task/{}/stat", pid, *tid));
    if (!ts) continue;
    auto tp = host::parse_proc_pid_stat(*ts);
    if (!tp) continue;
    TaskTimes t;
    t.comm = tp->comm;
    t.state = tp->state;
    t.jiffies = tp->utime + tp->stime;
    if (auto w = fs.read_file(fmt::format("/proc/{}/task/{}/wchan", pid, *tid))) {
      std::string wchan(trim(*w));
      if (!wchan.empty() && wchan != "0") t.wchan = wchan;
    }
    p.tasks.emplace(*tid, std::move(t));
  }
  return p;
}

std::vector<std::uint32_t> gpu_pids(const std::vector<nvml::GpuSnapshot>& samples) {
  std::vector<std::uint32_t> pids;
  for (const auto& s : samples) {
    for (const auto& g : s.gpus) {
      for (const auto& p : g.processes) pids.push_back(p.pid);
    }
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

TimeNs read_taken_at(const RootFs& fs, TimeNs fallback) {
  auto text = fs.read_file("/.cardiac/taken_at");
  if (!text) return fallback;
  auto v = parse_i64(trim(*text));
  return v ? *v : fallback;
}

// The boot time a captured tree recorded: "btime" in its /proc/stat (seconds since the epoch).
std::optional<TimeNs> captured_boot_time(const RootFs& fs) {
  auto text = fs.read_file("/proc/stat");
  if (!text) return std::nullopt;
  for (auto line : split_lines(*text)) {
    if (line.substr(0, 6) != "btime ") continue;
    auto v = parse_i64(trim(line.substr(6)));
    if (v && *v > 0 && *v < kmsg::kMaxWallNs / kNsPerSec) return *v * kNsPerSec;
  }
  return std::nullopt;
}

// The year of a file's last change: a year-less syslog stamp in it most likely has that year.
std::optional<int> year_of_mtime(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  time_t secs = st.st_mtime;
  tm utc{};
  if (gmtime_r(&secs, &utc) == nullptr) return std::nullopt;
  return utc.tm_year + 1900;
}

// Tells the user's mistake (no such directory, or one with no proc/ in it: kNotFound or
// kInvalidArgument) from a tree that is there but cannot be read (kPermission or kIo).
Status check_host_tree(const std::string& root) {
  const std::string context = "--root " + root;
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) return fail(Error::io(root, errno).with_context(context));
  if (!S_ISDIR(st.st_mode)) return fail(Error::invalid("not a directory", context));
  const std::string proc = root + "/proc";
  if (::stat(proc.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return fail(
          Error::invalid("no proc/ directory under it (and no t0/, t1/ snapshots)", context));
    }
    return fail(Error::io(proc, errno).with_context(context));
  }
  DIR* dir = ::opendir(proc.c_str());
  if (dir == nullptr) return fail(Error::io(proc, errno).with_context(context));
  ::closedir(dir);
  return {};
}

}  // namespace

std::vector<std::string> snapshot_series(const std::string& dir) {
  RootFs fs(dir);
  if (fs.exists("/proc")) return {};
  std::vector<std::string> out;
  for (int i = 0;; ++i) {
    std::string name = fmt::format("t{}", i);
    if (!fs.exists("/" + name + "/proc")) break;
    out.push_back(fmt::format("{}/{}", dir, name));
  }
  return out;
}

namespace {

using ProcTable = std::map<std::uint32_t, ProcTimes>;

ProcTable read_proc_table(const FileSystem& fs, const std::vector<std::uint32_t>& pids) {
  ProcTable t;
  for (auto pid : pids) t.emplace(pid, read_proc_times(fs, pid));
  return t;
}

std::vector<ProcessActivity> activity_between(const ProcTable& before, const ProcTable& after,
                                              double dt_s) {
  std::vector<ProcessActivity> out;
  for (const auto& [pid, b] : after) {
    auto found = before.find(pid);
    ProcTimes a = found == before.end() ? ProcTimes{} : found->second;
    ProcessActivity p;
    p.pid = pid;
    p.exists = b.exists;
    p.comm = b.exists ? b.comm : a.comm;
    if (a.exists && b.exists && dt_s > 0) {
      auto pct = [dt_s](std::uint64_t from, std::uint64_t to) {
        return to >= from ? 100.0 * static_cast<double>(to - from) / kUserHz / dt_s : 0.0;
      };
      p.cpu_percent = pct(a.jiffies, b.jiffies);
      for (const auto& [tid, t] : b.tasks) {
        auto it = a.tasks.find(tid);
        ThreadActivity th;
        th.tid = tid;
        th.comm = t.comm;
        th.state = t.state;
        th.wchan = t.wchan;
        th.cpu_percent = it == a.tasks.end() ? 0 : pct(it->second.jiffies, t.jiffies);
        p.threads.push_back(std::move(th));
      }
      std::stable_sort(p.threads.begin(), p.threads.end(),
                       [](const ThreadActivity& x, const ThreadActivity& y) {
                         return x.cpu_percent > y.cpu_percent;
                       });
    }
    out.push_back(std::move(p));
  }
  return out;
}

// The network probes on a thread of their own, started before the sampling window and taken
// after it: they measure the network, not this machine's GPUs or load, so the two do not
// disturb each other, and a window at least as long as the probes (10 × 100 ms) hides them.
// The probe thread shares nothing with the caller but `fraction_` (atomic) and the result,
// which the future hands over once.
class BackgroundProbes {
 public:
  BackgroundProbes(std::vector<std::string> targets, std::optional<std::string> gateway,
                   const ProbeOptions& options, const Clock& clock) {
    auto work = [this, targets = std::move(targets), gateway = std::move(gateway), options,
                 &clock] {
      return run_probes(targets, gateway, options, clock, [this](double f) { fraction_.store(f); });
    };
    try {
      result_ = std::async(std::launch::async, std::move(work));
    } catch (const std::system_error&) {
      // Out of threads: the probes run in take(), after the window, as they would unthreaded.
      result_ = std::async(std::launch::deferred, std::move(work));
    }
  }
  BackgroundProbes(const BackgroundProbes&) = delete;
  BackgroundProbes& operator=(const BackgroundProbes&) = delete;
  // The future's destructor waits for the thread, so `this` outlives every use of it there.
  ~BackgroundProbes() = default;

  // Waits for the probes (ProbeOptions::deadline bounds them), reporting how far they are.
  std::vector<ProbeResult> take(const Progress& progress) {
    using namespace std::chrono_literals;
    while (result_.wait_for(100ms) == std::future_status::timeout) {
      if (progress) progress("probing", fraction_.load());
    }
    if (progress) progress("probing", 1.0);
    return result_.get();
  }

 private:
  std::atomic<double> fraction_{0};
  std::future<std::vector<ProbeResult>> result_;
};

}  // namespace

std::vector<ProcessActivity> process_activity(const FileSystem& before, const FileSystem& after,
                                              const std::vector<std::uint32_t>& pids, double dt_s) {
  return activity_between(read_proc_table(before, pids), read_proc_table(after, pids), dt_s);
}

namespace {

// /proc/<pid>/cmdline of every GPU process, so the checks can tell an inference engine.
void read_cmdlines(const FileSystem& fs, DoctorInput& in) {
  std::vector<std::uint32_t> pids = gpu_pids(in.gpu_samples);
  for (const auto& p : in.process_vram) pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  for (auto pid : pids) {
    if (auto raw = fs.read_file(fmt::format("/proc/{}/cmdline", pid)); raw && !raw->empty()) {
      in.process_cmdlines.emplace_back(pid, serving::cmdline_text(*raw));
    }
  }
}

// The top talkers over the window, or a note saying why there are none.
void read_traffic(const FileSystem& fs, const std::optional<netproc::Snapshot>& before,
                  const std::optional<netproc::Snapshot>& after, const GatherOptions& o,
                  DoctorInput& in, std::vector<std::string>& skipped) {
  if (o.offline) {
    skipped.emplace_back("traffic: --offline, per-process traffic is read live only");
    return;
  }
  if (!before || !after) {
    if (o.root != "/") skipped.emplace_back("traffic: read on the live root (/) only");
    return;
  }
  if (after->taken_at - before->taken_at < kNsPerSec) {
    skipped.emplace_back("traffic: a window under 1 s gives no per-process rates");
    return;
  }
  const auto* last = in.last_host();
  in.traffic = netproc::rate(
      *before, *after,
      netproc::pick_link(fs, last != nullptr ? last->nics : std::vector<host::NetDevice>{},
                         in.rates ? in.rates->nics : std::vector<host::NetRates>{}));
  for (const auto& n : in.traffic->notes) skipped.push_back("traffic: " + n);
}

std::vector<serving::EngineStats> scrape_engines(const GatherOptions& o, const Clock& clock) {
  std::vector<serving::EngineStats> out;
  for (const auto& url : o.engines) {
    out.push_back(serving::scrape_engine(url, {.timeout = o.engine_timeout}, clock.now()));
  }
  return out;
}

}  // namespace

Result<DoctorInput> gather(const GatherOptions& o, const Clock& clock, const Sleeper& sleep,
                           const Progress& progress, std::vector<std::string>& skipped) {
  DoctorInput in;
  in.offline = o.offline;
  in.config = o.config;
  in.now = clock.now();
  // Offline on captured files only, the report is a function of those files: no time of this
  // machine goes into it (the capture's own .cardiac/taken_at, or none), so the same input
  // gives the same report byte for byte.
  const bool captured = o.offline && o.db.empty();
  if (captured) in.now = 0;

  // The host: a captured series, one captured tree, or the live machine.
  std::vector<std::shared_ptr<RootFs>> series_fs;
  for (const auto& dir : snapshot_series(o.root)) {
    series_fs.push_back(std::make_shared<RootFs>(dir));
  }
  std::shared_ptr<RootFs> fs;
  if (!series_fs.empty()) {
    TimeNs t = captured ? 0 : in.now - static_cast<TimeNs>(series_fs.size() - 1) * kNsPerSec;
    for (const auto& sfs : series_fs) {
      TimeNs at = read_taken_at(*sfs, t);
      in.host_samples.push_back(host::collect_host(*sfs, at));
      t += kNsPerSec;
    }
    fs = series_fs.back();
  } else {
    fs = std::make_shared<RootFs>(o.root);
    if (auto readable = check_host_tree(o.root); !readable) return fail(readable.error());
  }
  in.fs = fs;
  auto read_host = [&]() {
    const TimeNs at = captured ? read_taken_at(*fs, 0) : clock.now();
    if (auto snap = host::collect_host_within(fs, at, o.nvml_timeout)) return *snap;
    host::HostSnapshot late;
    late.taken_at = at;
    late.timed_out = true;
    return late;
  };

  // History first: with the agent's samples there is no need to wait for a window.
  std::optional<store::Db> db;
  if (!o.db.empty()) {
    if (!std::filesystem::exists(o.db)) {
      return fail(Error::not_found("no such file", "--db " + o.db));
    }
    // Read-only: the doctor looks at the agent's store and never writes into it.
    auto opened = store::open_store_read_only(o.db, store::StoreFile::kInput);
    if (!opened) return fail(opened.error().with_context("--db " + o.db));
    db.emplace(std::move(*opened));
    auto hist = snapshots_from_store(*db, in.now - o.history);
    if (!hist) return fail(hist.error().with_context("--db " + o.db));
    in.gpu_samples = std::move(*hist);
    auto series = history_from_store(*db, in.now, o.history);
    if (!series) return fail(series.error().with_context("--db " + o.db));
    in.history = std::move(*series);
    auto incidents = incidents_from_store(*db, in.now - kIncidentLookback);
    if (!incidents) return fail(incidents.error().with_context("--db " + o.db));
    in.incidents = std::move(*incidents);
    read_process_book(o.db, in, skipped);
    auto ports = store::listen_ports(*db);
    if (!ports) return fail(ports.error().with_context("--db " + o.db));
    if (!ports->empty()) {
      std::vector<SeenListenPort> seen;
      for (const auto& p : *ports) seen.push_back({p.proto, p.port, p.first_seen, p.last_seen});
      in.seen_listen_ports = std::move(seen);
    }
  }

  // Inference engines: read once now and once after the sampling window (preemptions rising).
  std::vector<serving::EngineStats> engines_first;
  const TimeNs engines_read_at = clock.monotonic();
  if (!o.offline) engines_first = scrape_engines(o, clock);

  // Network probes: the configured targets and the default gateway, running while the window
  // samples and the kernel log is read; their results are taken at the end.
  std::optional<BackgroundProbes> probes;
  std::optional<std::string> probes_skipped;  // listed last, after the sources read meanwhile
  if (!o.offline && !o.no_probe) {
    std::optional<std::string> gateway;
    if (o.gateway.empty()) {
      gateway = default_gateway(*fs);
    } else if (o.gateway != "none") {
      gateway = o.gateway;
    }
    if (o.probe_targets.empty() && !gateway) {
      probes_skipped = "network: no --probe targets and no default gateway";
    } else {
      probes.emplace(o.probe_targets, gateway, ProbeOptions{}, clock);
    }
  } else if (o.offline) {
    probes_skipped = "network: --offline, no probes sent";
  }

  // Live GPU samples through the isolated worker, with host snapshots alongside.
  bool live_host = series_fs.empty();
  ProcTable live_before;
  TimeNs live_before_at = 0;
  // Traffic by process: socket counters at the window's start and end (netlink reads this
  // machine's kernel, so only with its own root).
  const bool live_traffic = !o.offline && live_host && o.root == "/";
  std::optional<netproc::Snapshot> traffic_before;
  std::optional<netproc::Snapshot> traffic_after;
  if (!o.offline) {
    telemetry::GpuCollectorOptions copts;
    copts.executable = o.executable;
    copts.nvml_lib = o.nvml_lib;
    copts.timeout = o.nvml_timeout;
    telemetry::GpuCollector collector(copts, clock);
    bool have_history = !in.gpu_samples.empty();
    DurationNs window = have_history ? 0 : o.window;
    TimeNs start = clock.monotonic();
    for (int i = 0;; ++i) {
      if (progress) {
        double done = window > 0 ? static_cast<double>(clock.monotonic() - start) /
                                       static_cast<double>(window)
                                 : 1.0;
        progress("sampling", std::min(1.0, done));
      }
      if (live_host) in.host_samples.push_back(read_host());
      auto snap = collector.sample();
      health::name_gpu_processes(*fs, snap);
      in.gpu_samples.push_back(std::move(snap));
      if (i == 0 && live_host) {
        live_before = read_proc_table(*fs, gpu_pids(in.gpu_samples));
        live_before_at = in.host_samples.back().taken_at;
        if (live_traffic) traffic_before = netproc::take_snapshot(*fs, clock.monotonic());
      }
      if (clock.monotonic() - start + o.sample_interval > window) break;
      sleep(o.sample_interval);
    }
    if (live_host) in.host_samples.push_back(read_host());
    if (traffic_before) traffic_after = netproc::take_snapshot(*fs, clock.monotonic());
    if (progress) progress("sampling", 1.0);
  } else if (live_host) {
    in.host_samples.push_back(read_host());
  }
  if (!engines_first.empty()) {
    std::vector<serving::EngineStats> engines_last;
    if (clock.monotonic() - engines_read_at >= kNsPerSec) engines_last = scrape_engines(o, clock);
    for (std::size_t i = 0; i < engines_first.size(); ++i) {
      EngineRead r{.first = std::move(engines_first[i])};
      if (i < engines_last.size()) r.last = std::move(engines_last[i]);
      in.engines.push_back(std::move(r));
    }
  } else if (o.offline && !o.engines.empty()) {
    skipped.emplace_back("serving: --offline, inference engines not read");
  }
  if (!o.offline && in.gpu_samples.empty()) skipped.emplace_back("gpu: no samples taken");
  if (o.offline && o.db.empty()) skipped.emplace_back("gpu: --offline, NVML not asked");

  // Rates and what the GPU-holding processes did over the window.
  if (in.host_samples.size() >= 2 &&
      in.host_samples.back().taken_at > in.host_samples.front().taken_at) {
    in.rates = host::compute_rates(in.host_samples.front(), in.host_samples.back());
  }
  read_traffic(*fs, traffic_before, traffic_after, o, in, skipped);
  auto pids = gpu_pids(in.gpu_samples);
  if (!pids.empty() && !series_fs.empty()) {
    double dt = in.rates ? in.rates->interval_s : 0;
    in.gpu_processes = process_activity(*series_fs.front(), *fs, pids, dt);
  } else if (!pids.empty()) {
    // Processes that appeared after the first sample have no "before": no CPU figure.
    double dt = static_cast<double>(in.host_samples.back().taken_at - live_before_at) / 1e9;
    in.gpu_processes = activity_between(live_before, read_proc_table(*fs, pids), dt);
  }

  read_cmdlines(*fs, in);

  // Signs of compromise: every process's executable, user and sockets, /etc/passwd.
  in.security = read_security_facts(*fs, pids);
  if (in.security->exe_unreadable > 0) {
    const std::size_t n = in.security->exe_unreadable;
    skipped.push_back(
        fmt::format("security: the executable{} of {} process{} could not be read "
                    "(run as root to see {})",
                    n == 1 ? "" : "s", n, n == 1 ? "" : "es", n == 1 ? "it" : "them"));
  }

  // The kernel log.
  // A log file may come from any machine: its times come from its own stamps, from the boot
  // time the captured --root recorded, or nowhere (monotonic stamps only) — never from this
  // machine's clock or uptime. The live log is this machine's: its reader takes the clocks.
  KernelLogOptions kopts;
  kopts.year_hint = o.year_hint;
  if (kopts.year_hint == 0 && !o.kmsg_file.empty()) {
    kopts.year_hint = year_of_mtime(o.kmsg_file).value_or(0);
  } else if (kopts.year_hint == 0) {
    time_t secs = static_cast<time_t>(clock.now() / kNsPerSec);
    tm utc{};
    gmtime_r(&secs, &utc);
    kopts.year_hint = utc.tm_year + 1900;
  }
  if (!o.kmsg_file.empty() && o.root != "/") kopts.boot_time_ns = captured_boot_time(*fs);
  std::optional<KernelLog> klog;
  if (!o.kmsg_file.empty()) {
    auto read = read_kernel_log_file(o.kmsg_file, kopts);
    if (!read) return fail(read.error().with_context("--kmsg"));
    klog = std::move(*read);
    in.kmsg_source = o.kmsg_file;
  } else if (!o.offline && !o.no_kmsg) {
    auto read = read_live_kernel_log(clock, kopts);
    if (read) {
      in.kmsg_source = read->source;
      klog = std::move(*read);
    } else {
      skipped.push_back("kernel log: " + read.error().what());
    }
  } else if (!o.no_kmsg && !db) {
    skipped.emplace_back("kernel log: --offline without --kmsg FILE");
  }
  if (klog) {
    in.kmsg_read =
        KernelLogRead{klog->lines,       klog->log_lines,  klog->long_lines, klog->first_long_line,
                      klog->compression, klog->read_notes, klog->binary,     klog->bytes};
    in.events = std::move(klog->events);
    in.boots = std::move(klog->boots);
    in.event_context = std::move(klog->context);
  } else if (db) {
    auto stored = store::events_since(*db, in.now - kStoredEventsLookback, 100000);
    if (!stored) return fail(stored.error().with_context("--db " + o.db));
    in.events = events_from_store(*stored);
    in.kmsg_source = "store:" + o.db;
  }

  if (probes) in.probes = probes->take(progress);
  if (probes_skipped) skipped.push_back(std::move(*probes_skipped));
  in.now = captured ? (in.host_samples.empty() ? 0 : in.host_samples.back().taken_at) : clock.now();
  return in;
}

}  // namespace cardiac::doctor
