// SPDX-License-Identifier: Apache-2.0
// The dashboard's server side: a 7-day chart for each of 8 GPUs read from a store holding a week
// of 1 s samples (rolled up as the agent does), through the same reads and view model as
// GET /api/v1/dashboard/chart, serialized to JSON. Also the overview's view model.
//
// `cardiac_dashboard_bench --seed DIR` instead writes DIR/cardiac.db, a week of 8 GPUs ending
// now, for bench/dashboard_load.sh to start an agent on (the browser side of the figures).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dashboard/chart.h"
#include "dashboard/overview.h"
#include "store/query.h"
#include "store/retention.h"
#include "store/schema.h"
#include "store/writer.h"

namespace {

using cardiac::TimeNs;
namespace store = cardiac::store;
namespace dashboard = cardiac::dashboard;

constexpr TimeNs kSec = 1'000'000'000;
constexpr std::int64_t kWeek = 7 * 86'400;
constexpr unsigned kGpus = 8;

// A week of every chart metric of 8 GPUs at 1 s, ending at `end`, rolled up as the agent's
// maintenance thread would have (minutes to the last whole hour, hours to the last day).
cardiac::Status seed(store::Db& db, TimeNs end) {
  const auto& metrics = dashboard::chart_metrics(false);
  store::SampleWriter w(db, 1 << 20);
  const TimeNs start = end - kWeek * kSec;
  for (std::int64_t sec = 0; sec < kWeek; ++sec) {
    const TimeNs t = start + sec * kSec;
    for (unsigned g = 0; g < kGpus; ++g) {
      const double h = static_cast<double>((sec * 2654435761LL + g * 97) % 9) - 4;
      for (std::size_t m = 0; m < metrics.size(); ++m) {
        // Plausible magnitudes; throttling (0x40) for one minute in each hour.
        double v = metrics[m] == "gpu_clock_event_reasons" ? (sec % 3600 < 60 ? 64 : 0)
                                                           : 100.0 * static_cast<double>(m + 1) + h;
        CARDIAC_TRY(w.append(metrics[m], g, t, v));
      }
    }
    if (sec % 600 == 599) CARDIAC_TRY(w.flush());
  }
  CARDIAC_TRY(w.flush());
  const auto horizon = store::rollup_horizon(end);
  auto r = store::roll_up(db, horizon.minutes, horizon.hours);
  if (!r) return cardiac::fail(r.error());
  return {};
}

// What the agent's backend does for one chart request.
std::string chart_json(const store::Db& db, unsigned gpu, TimeNs until) {
  auto range = dashboard::parse_chart_range("7d");
  dashboard::ChartInput in;
  in.gpu = static_cast<int>(gpu);
  in.range = *range;
  in.until = until;
  store::HistoryQuery q;
  q.gpu = gpu;
  q.since = dashboard::grid_start(until, *range);
  q.until = until;
  q.step = range->step;
  for (const auto& metric : dashboard::chart_metrics(false)) {
    q.metric = metric;
    auto h = store::history(db, q);
    auto& s = in.series[metric];
    if (!h) {
      s.error = h.error().what();
      continue;
    }
    for (const auto& p : h->points) s.points.push_back({p.time, p.avg, p.min, p.max});
  }
  return dashboard::chart(in).dump();
}

struct WeekStore {
  std::string dir;
  TimeNs end = 0;
  WeekStore() {
    char tmpl[] = "/tmp/cardiac-dashboard-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    end = 1'780'000'000 * kSec + 1234 * kSec;
    auto db = store::open_store(dir + "/cardiac.db");
    if (!db || !seed(*db, end)) {
      std::fprintf(stderr, "seeding the store failed\n");
      std::abort();
    }
  }
  ~WeekStore() { std::filesystem::remove_all(dir); }
};

// All 8 GPUs' 7-day charts, one after another on one reader connection (as the agent's).
void BM_DashboardChartWeek8Gpus(benchmark::State& state) {
  static WeekStore week;  // about 40 M samples: built once
  auto reader = store::Db::open(week.dir + "/cardiac.db", store::query_options());
  if (!reader) {
    state.SkipWithError(reader.error().what().c_str());
    return;
  }
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (unsigned g = 0; g < kGpus; ++g) bytes += chart_json(*reader, g, week.end).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_DashboardChartWeek8Gpus)->Unit(benchmark::kMillisecond);

// The overview's view model on the gpu-lost status (8 GPUs, 2 firing alerts).
void BM_DashboardOverview(benchmark::State& state) {
  dashboard::OverviewInput in;
  nlohmann::json gpus = nlohmann::json::array();
  for (int i = 0; i < 8; ++i) {
    gpus.push_back({{"index", i},
                    {"verdict", "OK"},
                    {"health", "ok"},
                    {"reasons", {}},
                    {"utilization_gpu", 97},
                    {"memory_used", 7e10},
                    {"temperature", 56}});
  }
  in.status = {{"verdict", "FAIL"}, {"gpus", gpus}, {"host", {{"verdict", "OK"}}}};
  in.alerts = dashboard::Part::ok(
      nlohmann::json::array({{{"id", 1}, {"state", "firing"}, {"rule", "gpu_lost"}},
                             {{"id", 2}, {"state", "firing"}, {"rule", "gpu_fenced"}}}));
  in.events = dashboard::Part::ok(nlohmann::json::array());
  in.incidents = dashboard::Part::ok(nlohmann::json::array());
  for (auto _ : state) benchmark::DoNotOptimize(dashboard::overview(in).dump());
}
BENCHMARK(BM_DashboardOverview)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--seed") {
    const TimeNs now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    std::filesystem::create_directories(argv[2]);
    auto db = store::open_store(std::string(argv[2]) + "/cardiac.db");
    if (!db) {
      std::fprintf(stderr, "%s\n", db.error().what().c_str());
      return 1;
    }
    auto st = seed(*db, now);
    if (!st) {
      std::fprintf(stderr, "%s\n", st.error().what().c_str());
      return 1;
    }
    std::printf("seeded %s/cardiac.db: a week of %u GPUs ending now\n", argv[2], kGpus);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
