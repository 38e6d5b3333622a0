// SPDX-License-Identifier: Apache-2.0
// Microbenchmarks of one status sample (NVML reads, the worker round trip, host, report, JSON)
// and of what the agent does with it: the rules, one /metrics scrape (render, gzip, brotli).
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/security_watch.h"
#include "alloc_count.h"
#include "cli/status_text.h"
#include "core/clock.h"
#include "core/malloc_tuning.h"
#include "health/report.h"
#include "host/host.h"
#include "metrics/exposition.h"
#include "nvml/gpu_json.h"
#include "nvml/gpu_wire.h"
#include "nvml/library.h"
#include "nvml/reader.h"
#include "platform/fs.h"
#include "rules/defaults.h"
#include "rules/engine.h"
#include "server/encoding.h"
#include "telemetry/gpu_collector.h"
#include "telemetry/gpu_worker.h"
#include "telemetry/worker_progress.h"

namespace {

using namespace cardiac;

constexpr const char* kFakeNvml = CARDIAC_BENCH_FAKE_NVML;
constexpr const char* kCardiacExe = CARDIAC_BENCH_CARDIAC_EXE;
constexpr unsigned kExpectedGpus = 8;

std::string source_path(const char* relative) {
  return std::string(CARDIAC_SOURCE_DIR) + relative;
}

std::string fixture_root() {
  return source_path("/tests/fixtures/hosts/debian-gpu-8x");
}

// The fake reads its scenario from the environment at nvmlInit; the worker inherits it.
void use_healthy_scenario() {
  setenv("CARDIAC_FAKE_NVML_SCENARIO",
         source_path("/tests/fixtures/scenarios/healthy-8xh100.json").c_str(), 1);
}

// User + system CPU of this whole process, in nanoseconds.
std::int64_t self_cpu_ns() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ns = [](const timeval& tv) {
    return static_cast<std::int64_t>(tv.tv_sec) * kNsPerSec +
           static_cast<std::int64_t>(tv.tv_usec) * kNsPerUs;
  };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

struct ProcStat {
  std::string comm;
  pid_t ppid = -1;
  std::int64_t cpu_ns = 0;  // utime + stime, clock-tick resolution
};

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat st;
  st.comm = text.substr(open + 1, close - open - 1);
  // Fields after the command: state(3) ppid(4) … utime(14) stime(15).
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f && fields.size() < 13;) fields.push_back(f);
  if (fields.size() < 13) return std::nullopt;
  st.ppid = static_cast<pid_t>(std::stol(fields[1]));
  const long hz = sysconf(_SC_CLK_TCK);
  st.cpu_ns = (std::stoll(fields[11]) + std::stoll(fields[12])) * (kNsPerSec / hz);
  return st;
}

// CPU time of another process: /proc/<pid>/schedstat (ns, exact) when the kernel has it,
// otherwise utime + stime from /proc/<pid>/stat (clock ticks).
std::optional<std::int64_t> process_cpu_ns(pid_t pid) {
  std::ifstream sched("/proc/" + std::to_string(pid) + "/schedstat");
  long long run_ns = 0;
  if (sched >> run_ns) return run_ns;
  if (auto st = read_proc_stat(pid)) return st->cpu_ns;
  return std::nullopt;
}

// The NVML worker: our child process running the cardiac binary. -1 when none is found.
pid_t find_worker_pid() {
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return -1;
  pid_t found = -1;
  const pid_t self = getpid();
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    auto st = read_proc_stat(static_cast<pid_t>(pid));
    // cardiac itself, or cardiac-nvml-worker (comm keeps 15 characters).
    if (st && st->ppid == self && st->comm.starts_with("cardiac")) {
      found = static_cast<pid_t>(pid);
      break;
    }
  }
  closedir(dir);
  return found;
}

telemetry::GpuCollectorOptions collector_options() {
  telemetry::GpuCollectorOptions o;
  o.executable = kCardiacExe;
  o.nvml_lib = kFakeNvml;
  return o;
}

// Sets a per-iteration average counter.
void set_avg_us(benchmark::State& state, const char* name, std::int64_t total_ns) {
  state.counters[name] =
      benchmark::Counter(static_cast<double>(total_ns) / 1e3, benchmark::Counter::kAvgIterations);
}

// Copies the cardiac status command's process naming (cli/cmd_status.cpp).
// In-process NVML reads through the fake, as the worker makes them (with its progress hook).
// `encode` adds an encoding of each reading: the worker's line (nvml/gpu_wire.h), i.e. all of its
// per-sample work except the pipe write, or the JSON object it sent before that line existed.
enum class Encode { kNone, kWire, kJson };
void nvml_in_process(benchmark::State& state, Encode encode) {
  use_healthy_scenario();
  auto lib = nvml::Library::open(kFakeNvml);
  if (!lib) {
    state.SkipWithError(("cannot open the fake NVML: " + lib.error().message).c_str());
    return;
  }
  auto progress = telemetry::WorkerProgress::create();
  nvml::CallHook hook;
  if (progress) {
    hook = [p = progress->get()](int device, std::string_view fn) { p->publish(device, fn); };
  }
  nvml::Reader reader(**lib, SystemClock::instance(), hook);
  auto system = reader.init();
  if (!system) {
    state.SkipWithError(("nvmlInit failed: " + system.error().message).c_str());
    return;
  }
  if (system->device_count != kExpectedGpus) {
    state.SkipWithError("the healthy scenario does not have 8 GPUs");
    return;
  }
  const std::int64_t cpu0 = self_cpu_ns();
  for (auto _ : state) {
    for (unsigned i = 0; i < system->device_count; ++i) {
      nvml::GpuReading g = reader.read_device(i);
      if (encode == Encode::kJson) {
        std::string line = nlohmann::json{{"type", "gpu"}, {"gpu", nvml::to_json(g)}}.dump();
        benchmark::DoNotOptimize(line.data());
      } else if (encode == Encode::kWire) {
        std::string line(telemetry::kGpuLinePrefix);
        nvml::append_wire(g, line);
        benchmark::DoNotOptimize(line.data());
      } else {
        benchmark::DoNotOptimize(g.index);
      }
    }
  }
  set_avg_us(state, "cpu_us", self_cpu_ns() - cpu0);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * system->device_count);
}

void BM_NvmlReadAllDevices_InProcess(benchmark::State& state) {
  nvml_in_process(state, Encode::kNone);
}
BENCHMARK(BM_NvmlReadAllDevices_InProcess)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

void BM_NvmlReadAndEncode_InProcess(benchmark::State& state) {
  nvml_in_process(state, Encode::kWire);
}
BENCHMARK(BM_NvmlReadAndEncode_InProcess)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

void BM_NvmlReadAndEncodeJson_InProcess(benchmark::State& state) {
  nvml_in_process(state, Encode::kJson);
}
BENCHMARK(BM_NvmlReadAndEncodeJson_InProcess)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

// The parent's side of one 8-GPU sample: decoding the readings the worker sent, as its line
// (what the collector does) or as the JSON objects it used to get.
void decode_readings(benchmark::State& state, Encode form) {
  use_healthy_scenario();
  auto lib = nvml::Library::open(kFakeNvml);
  if (!lib) {
    state.SkipWithError(("cannot open the fake NVML: " + lib.error().message).c_str());
    return;
  }
  nvml::Reader reader(**lib, SystemClock::instance());
  auto system = reader.init();
  if (!system) {
    state.SkipWithError(("nvmlInit failed: " + system.error().message).c_str());
    return;
  }
  std::vector<std::string> lines;
  for (unsigned i = 0; i < system->device_count; ++i) {
    nvml::GpuReading g = reader.read_device(i);
    std::string line;
    if (form == Encode::kJson) {
      line = nlohmann::json{{"type", "gpu"}, {"gpu", nvml::to_json(g)}}.dump();
    } else {
      nvml::append_wire(g, line);
    }
    lines.push_back(std::move(line));
  }
  for (auto _ : state) {
    for (const auto& line : lines) {
      if (form == Encode::kJson) {
        auto j = nlohmann::json::parse(line);
        auto g = nvml::gpu_reading_from_json(j["gpu"]);
        benchmark::DoNotOptimize(g->index);
      } else {
        auto g = nvml::gpu_reading_from_wire(line);
        benchmark::DoNotOptimize(g->index);
      }
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * lines.size());
}

void BM_DecodeReadingsWire(benchmark::State& state) {
  decode_readings(state, Encode::kWire);
}
BENCHMARK(BM_DecodeReadingsWire)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

void BM_DecodeReadingsJson(benchmark::State& state) {
  decode_readings(state, Encode::kJson);
}
BENCHMARK(BM_DecodeReadingsJson)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

// One full sample of 8 GPUs through the worker process and its pipe. Wall time is the
// benchmark time; parent_cpu_us is this process (getrusage), worker_cpu_us the worker
// (/proc/<pid>/schedstat), both averaged over the iterations of a run.
void BM_GpuCollectorSample(benchmark::State& state) {
  use_healthy_scenario();
  telemetry::GpuCollector collector(collector_options(), SystemClock::instance());
  nvml::GpuSnapshot first = collector.sample();  // starts the worker: not part of a sample
  if (!first.available || first.gpus.size() != kExpectedGpus) {
    state.SkipWithError(("the first sample failed: " + first.error).c_str());
    return;
  }
  const pid_t worker = find_worker_pid();
  const auto worker0 = worker > 0 ? process_cpu_ns(worker) : std::nullopt;
  const std::int64_t cpu0 = self_cpu_ns();
  for (auto _ : state) {
    nvml::GpuSnapshot snap = collector.sample();
    benchmark::DoNotOptimize(snap.gpus.data());
  }
  set_avg_us(state, "parent_cpu_us", self_cpu_ns() - cpu0);
  const auto worker1 = worker > 0 ? process_cpu_ns(worker) : std::nullopt;
  if (worker0 && worker1) set_avg_us(state, "worker_cpu_us", *worker1 - *worker0);
  if (collector.stats().worker_starts != 1 || collector.stats().timeouts != 0) {
    state.SkipWithError("the worker restarted or timed out during the run");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kExpectedGpus);
}
BENCHMARK(BM_GpuCollectorSample)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(0.2);

// What a single `cardiac status` pays for the worker: spawn, exec, dlopen, nvmlInit, one
// sample, quit.
void BM_GpuCollectorColdStart(benchmark::State& state) {
  use_healthy_scenario();
  const std::int64_t cpu0 = self_cpu_ns();
  for (auto _ : state) {
    telemetry::GpuCollector collector(collector_options(), SystemClock::instance());
    nvml::GpuSnapshot snap = collector.sample();
    if (snap.gpus.size() != kExpectedGpus) {
      state.SkipWithError(("sample failed: " + snap.error).c_str());
      break;
    }
  }
  set_avg_us(state, "parent_cpu_us", self_cpu_ns() - cpu0);
}
BENCHMARK(BM_GpuCollectorColdStart)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.2);

void host_collect(benchmark::State& state, const std::string& root) {
  RootFs fs(root);
  std::size_t errors = 0;
  for (auto _ : state) {
    host::HostSnapshot snap = host::collect_host(fs, SystemClock::instance().now());
    errors = snap.errors.size();
    benchmark::DoNotOptimize(snap.taken_at);
  }
  state.counters["errors"] = static_cast<double>(errors);
}

void BM_HostCollect_Fixture(benchmark::State& state) {
  host_collect(state, fixture_root());
}
BENCHMARK(BM_HostCollect_Fixture)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

void BM_HostCollect_Live(benchmark::State& state) {
  host_collect(state, "/");
}
BENCHMARK(BM_HostCollect_Live)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

// One scan of the agent's security watch over this machine (agent/security_watch.h): every
// process's /proc entries, the sockets, /etc/passwd, and the traffic snapshot (netlink). The
// agent does this once per [security] watch_interval (1 min), so a scan's CPU time over 60 s is
// its share of a core.
void BM_SecurityWatchScan_Live(benchmark::State& state) {
  const cardiac::SystemClock& clock = cardiac::SystemClock::instance();
  cardiac::agent::SecurityWatchOptions o;
  o.every = 1;  // every add() scans
  cardiac::agent::SecurityWatch watch(o, std::make_shared<cardiac::RootFs>("/"), clock);
  cardiac::nvml::GpuSnapshot gpus;
  gpus.available = true;
  std::vector<cardiac::rules::Point> points;
  for (auto _ : state) {
    points.clear();
    watch.add(gpus, cardiac::agent::HostView{}, std::nullopt, clock.now(), points);
    benchmark::DoNotOptimize(points);
  }
  state.counters["findings"] = static_cast<double>(watch.findings().size());
}
BENCHMARK(BM_SecurityWatchScan_Live)->Unit(benchmark::kMillisecond)->MinTime(0.5);

// One 8-GPU sample of the healthy scenario, taken once for a benchmark's input (the worker
// started and stopped around it); nullopt, with the benchmark skipped, when it failed.
std::optional<nvml::GpuSnapshot> healthy_sample(benchmark::State& state) {
  use_healthy_scenario();
  nvml::GpuSnapshot gpus;
  {
    telemetry::GpuCollector collector(collector_options(), SystemClock::instance());
    gpus = collector.sample();
  }
  if (gpus.gpus.size() != kExpectedGpus) {
    state.SkipWithError(("sample failed: " + gpus.error).c_str());
    return std::nullopt;
  }
  return gpus;
}

// Judging, JSON and text of a pre-collected 8-GPU snapshot and the fixture host. The input
// copies that build_report consumes are made with the timer paused.
void BM_BuildReportAndJson(benchmark::State& state) {
  auto sample = healthy_sample(state);
  if (!sample) return;
  const nvml::GpuSnapshot& gpus = *sample;
  RootFs fs(fixture_root());
  const host::HostSnapshot host_snap = host::collect_host(fs, SystemClock::instance().now());
  std::size_t json_bytes = 0;
  std::size_t text_bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    nvml::GpuSnapshot g = gpus;
    host::HostSnapshot h = host_snap;
    state.ResumeTiming();
    health::StatusReport report = health::build_report(std::move(g), std::move(h), nullptr);
    std::string json = health::to_json(report).dump(2);
    std::string text = cli::render_status_text(report, cli::TextStyle{});
    json_bytes = json.size();
    text_bytes = text.size();
    benchmark::DoNotOptimize(json.data());
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["json_bytes"] = static_cast<double>(json_bytes);
  state.counters["text_bytes"] = static_cast<double>(text_bytes);
}
BENCHMARK(BM_BuildReportAndJson)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

// The whole `cardiac status --json` frame minus worker start-up and NVML's own time (which
// runs in the worker): GPU sample through the pipe, process names, two host reads, report
// and JSON. The benchmark's CPU column is this thread; parent_cpu_us is the whole process.
// One steady-state sample as a long-running sampler takes it: every GPU through the worker,
// process names, one host collection with rates against the previous one, and the verdicts.
// `frame` adds what one `cardiac status` frame does on top: a second host read for CPU rates
// over the GPU sample, and the JSON text.
void full_sample(benchmark::State& state, const std::string& root, bool frame) {
  use_healthy_scenario();
  telemetry::GpuCollector collector(collector_options(), SystemClock::instance());
  if (collector.sample().gpus.size() != kExpectedGpus) {  // starts the worker
    state.SkipWithError("the first sample failed");
    return;
  }
  RootFs fs(root);
  host::HostSnapshot previous = host::collect_host(fs, SystemClock::instance().now());
  const pid_t worker = find_worker_pid();
  const auto worker0 = worker > 0 ? process_cpu_ns(worker) : std::nullopt;
  const std::int64_t cpu0 = self_cpu_ns();
  for (auto _ : state) {
    if (frame) previous = host::collect_host(fs, SystemClock::instance().now());
    nvml::GpuSnapshot gpus = collector.sample();
    health::name_gpu_processes(fs, gpus);
    host::HostSnapshot now = host::collect_host(fs, SystemClock::instance().now());
    host::HostRates rates = host::compute_rates(previous, now);
    previous = now;
    health::StatusReport report = health::build_report(std::move(gpus), std::move(now), &rates);
    if (frame) {
      std::string json = health::to_json(report).dump(2);
      benchmark::DoNotOptimize(json.data());
    }
    benchmark::DoNotOptimize(report.overall);
  }
  set_avg_us(state, "parent_cpu_us", self_cpu_ns() - cpu0);
  const auto worker1 = worker > 0 ? process_cpu_ns(worker) : std::nullopt;
  if (worker0 && worker1) set_avg_us(state, "worker_cpu_us", *worker1 - *worker0);
}

void BM_StatusFrame_Fixture(benchmark::State& state) {
  full_sample(state, fixture_root(), true);
}
BENCHMARK(BM_StatusFrame_Fixture)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

void BM_FullSampleCpu_Fixture(benchmark::State& state) {
  full_sample(state, fixture_root(), false);
}
BENCHMARK(BM_FullSampleCpu_Fixture)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

void BM_FullSampleCpu_Live(benchmark::State& state) {
  full_sample(state, "/", false);
}
BENCHMARK(BM_FullSampleCpu_Live)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

// One /metrics scrape of a new sample, as the agent serves it: the 8-GPU exposition with
// every GPU's fault counts, then its gzip form (what Prometheus asks for) or its brotli form (a
// browser's). The allocator is set as the agent sets it, so the figures carry its page faults.
std::optional<health::StatusReport> scrape_report(benchmark::State& state) {
  tune_malloc_for_agent();
  auto gpus = healthy_sample(state);
  if (!gpus) return std::nullopt;
  RootFs fs(fixture_root());
  return health::build_report(std::move(*gpus),
                              host::collect_host(fs, SystemClock::instance().now()), nullptr);
}

metrics::ExpositionInput scrape_input(const health::StatusReport& report) {
  metrics::ExpositionInput in;
  in.report = &report;
  in.agent.kmsg_up = 1;
  in.agent.samples_total = 3600;
  in.queue = metrics::QueueMetrics{};
  return in;
}

void BM_MetricsRender(benchmark::State& state) {
  auto report = scrape_report(state);
  if (!report) return;
  const metrics::ExpositionInput in = scrape_input(*report);
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = metrics::render_metrics(in, {.hostname = "node-1"});
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_MetricsRender)->Unit(benchmark::kMicrosecond)->MinTime(0.5);

// The same with the family buffers kept between renders, as the agent's ExpositionCache does.
void BM_MetricsRenderKept(benchmark::State& state) {
  auto report = scrape_report(state);
  if (!report) return;
  const metrics::ExpositionInput in = scrape_input(*report);
  metrics::RenderScratch scratch;
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = metrics::render_metrics(in, {.hostname = "node-1"}, scratch);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_MetricsRenderKept)->Unit(benchmark::kMicrosecond)->MinTime(0.5);

void metrics_encode(benchmark::State& state, server::ContentCoding coding) {
  auto report = scrape_report(state);
  if (!report) return;
  const std::string text = metrics::render_metrics(scrape_input(*report), {.hostname = "node-1"});
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto body = server::encode(text, coding);
    if (!body) {
      state.SkipWithError(body.error().what().c_str());
      return;
    }
    bytes = body->size();
    benchmark::DoNotOptimize(body->data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_MetricsGzip(benchmark::State& state) {
  metrics_encode(state, server::ContentCoding::kGzip);
}
BENCHMARK(BM_MetricsGzip)->Unit(benchmark::kMicrosecond)->MinTime(0.5);

void BM_MetricsBrotli(benchmark::State& state) {
  metrics_encode(state, server::ContentCoding::kBrotli);
}
BENCHMARK(BM_MetricsBrotli)->Unit(benchmark::kMicrosecond)->MinTime(0.5);

// The sampler's evaluate stage on one 8-GPU sample of a healthy node: the sample flattened
// into rule points and every default rule run over them, a second apart as the agent does.
void BM_RulesEvaluate(benchmark::State& state) {
  tune_malloc_for_agent();
  auto gpus = healthy_sample(state);
  if (!gpus) return;
  auto rules = rules::default_rules();
  if (!rules) {
    state.SkipWithError(rules.error().what().c_str());
    return;
  }
  RootFs fs(fixture_root());
  const host::HostSnapshot host = host::collect_host(fs, SystemClock::instance().now());
  rules::RuleEngine engine(std::move(*rules));
  TimeNs now = SystemClock::instance().now();
  rules::SampleView view;  // kept, as the sampler keeps it
  const std::uint64_t allocs_before = bench::allocations();
  for (auto _ : state) {
    now += kNsPerSec;
    rules::build_sample_view(view, *gpus, host, nullptr, now);
    auto transitions = engine.evaluate(view, now);
    benchmark::DoNotOptimize(transitions.data());
  }
  state.counters["points"] = static_cast<double>(view.points.size());
  state.counters["allocs"] =
      benchmark::Counter(static_cast<double>(bench::allocations() - allocs_before),
                         benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_RulesEvaluate)->Unit(benchmark::kMicrosecond)->MinTime(0.5);

}  // namespace

BENCHMARK_MAIN();
