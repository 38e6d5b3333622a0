// SPDX-License-Identifier: Apache-2.0
// render_metrics over a hand-built report: key lines, absence, escaping, grammar, compat.
#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "metrics/tests/grammar.h"
#include "metrics/tests/support.h"

// GCC before 13 warns about members left out of a designated initializer even when they
// have default member initializers (GCC bug 96868); the rows rely on those defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cardiac::metrics {
namespace {

using testing::full_input;
using testing::grammar_violations;
using testing::two_gpu_report;

const std::string kGpu0 =
    R"(gpu="0",uuid="GPU-11111111-2222-3333-4444-555555555555",pci_bus_id="0000:18:00.0",)"
    R"(model="NVIDIA H100 80GB HBM3",hostname="node-1")";
const std::string kGpu1 = R"(gpu="1",pci_bus_id="0000:2a:00.0",hostname="node-1")";
const std::string kDcgm0 =
    R"(gpu="0",UUID="GPU-11111111-2222-3333-4444-555555555555",pci_bus_id="00000000:18:00.0",)"
    R"(device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",hostname="node-1",)"
    R"(DCGM_FI_DRIVER_VERSION="550.54.15")";

std::set<std::string> lines_of(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.insert(l);
  return out;
}

std::string render(bool compat) {
  static const auto report = two_gpu_report();
  return render_metrics(full_input(report), {.hostname = "node-1", .compat_dcgm = compat});
}

TEST(Exposition, KeyLinesForTwoGpusOneLost) {
  auto lines = lines_of(render(false));
  for (const std::string& want : std::vector<std::string>{
           "cardiac_gpu_up{" + kGpu0 + "} 1",
           "cardiac_gpu_up{" + kGpu1 + "} 0",
           "cardiac_gpu_health{" + kGpu1 + "} 2",
           "cardiac_gpu_temperature_celsius{" + kGpu0 + "} 45",
           "cardiac_gpu_utilization_ratio{" + kGpu0 + "} 0.87",
           "cardiac_gpu_power_watts{" + kGpu0 + "} 312.5",
           "cardiac_gpu_energy_joules_total{" + kGpu0 + "} 123456.789",
           "cardiac_gpu_sm_clock_hertz{" + kGpu0 + "} 1980000000",
           "cardiac_gpu_memory_used_bytes{" + kGpu0 + "} 1073741824",
           "cardiac_gpu_sample_duration_seconds{" + kGpu0 + "} 0.0015",
           "cardiac_gpu_clock_event_reason{" + kGpu0 + R"(,reason="hw_thermal_slowdown"} 1)",
           "cardiac_gpu_clock_event_reason{" + kGpu0 + R"(,reason="gpu_idle"} 0)",
           "cardiac_gpu_xid_errors_total{" + kGpu0 + R"(,xid="79"} 2)",
           "cardiac_gpu_xid_errors_total{" + kGpu1 + R"(,xid="48"} 1)",
           "cardiac_gpu_last_xid{" + kGpu0 + "} 79",
           "# TYPE cardiac_gpu_xid_errors_total counter",
           "# TYPE cardiac_gpu_temperature_celsius gauge",
           R"(cardiac_host_load1{hostname="node-1"} 1.5)",
           R"(cardiac_host_memory_total_bytes{hostname="node-1"} 549755813888)",
           R"(cardiac_host_filesystem_used_bytes{hostname="node-1",mountpoint="/data \"x\"",)"
           R"(device="/dev/nvme0n1p2",fstype="ext4"} 600)",
           R"(cardiac_host_network_receive_bytes_total{hostname="node-1",interface="eth0"} 1000)",
           R"(cardiac_host_network_speed_bytes{hostname="node-1",interface="eth0"} 12500000000)",
           R"(cardiac_host_dstate_processes{hostname="node-1"} 0)",
           R"(cardiac_host_cpus{hostname="node-1"} 2)",
           R"(cardiac_nvml_available{hostname="node-1"} 1)",
           R"(cardiac_agent_samples_total{hostname="node-1"} 42)",
           R"(cardiac_agent_missed_samples_total{hostname="node-1"} 0)",
           R"(cardiac_agent_worker_restarts_total{hostname="node-1"} 1)",
           R"(cardiac_agent_sample_duration_seconds{hostname="node-1"} 0.25)",
           R"(cardiac_agent_last_sample_timestamp_seconds{hostname="node-1"} 1764694800.5)",
       }) {
    EXPECT_TRUE(lines.count(want)) << "missing: " << want;
  }
}

TEST(Exposition, ConfigInfoSeriesCarryTheFactsAsLabels) {
  auto report = two_gpu_report();
  auto in = full_input(report);
  std::string without = render_metrics(in, {.hostname = "node-1"});
  EXPECT_EQ(without.find("config_info"), std::string::npos);  // no facts read: no series
  in.config = testing::two_gpu_config();
  std::string text = render_metrics(in, {.hostname = "node-1"});
  EXPECT_NE(text.find("# TYPE cardiac_node_config_info gauge\n"
                      "cardiac_node_config_info{hostname=\"node-1\",driver=\"550.54.15\","
                      "cuda=\"12.4\",kernel=\"6.1.0-18-amd64\",os=\"debian 12\","
                      "nccl=\"2.21.5\",cudnn=\"absent\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cardiac_gpu_config_info{gpu=\"1\","), std::string::npos) << text;
  EXPECT_NE(text.find("persistence=\"on\",ecc=\"on\",mig=\"off\",power_limit_w=\"500\","
                      "pcie=\"gen5x16\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(grammar_violations(text), std::vector<std::string>{});
  // Before the first sample the GPUs are labelled by index and host alone.
  in.report = nullptr;
  text = render_metrics(in, {.hostname = "node-1"});
  EXPECT_NE(text.find("cardiac_gpu_config_info{gpu=\"0\",hostname=\"node-1\",persistence="),
            std::string::npos)
      << text;
}

TEST(Exposition, OneJobInfoSeriesPerGpuAndJob) {
  const std::string text = render(false);
  auto lines = lines_of(text);
  EXPECT_TRUE(lines.count("cardiac_gpu_job_info{" + kGpu0 + R"(,job="123",source="slurm"} 1)"))
      << text;
  EXPECT_TRUE(lines.count("cardiac_gpu_job_info{" + kGpu0 + R"(,job="7",source="cardiac"} 1)"))
      << text;
  std::size_t series = 0;
  for (const auto& l : lines) series += l.rfind("cardiac_gpu_job_info{", 0) == 0;
  EXPECT_EQ(series, 2u) << "two processes of job 123 are one series; the lost GPU has none";
  // Never a job label on the other GPU series, and no dcgm-exporter twin.
  for (const auto& l : lines_of(render(true))) {
    if (l.rfind("cardiac_gpu_job_info", 0) != 0) {
      EXPECT_EQ(l.find("job=\""), std::string::npos) << l;
    }
  }
}

TEST(Exposition, QueueHeldGpusCarryTheirCardiacJob) {
  const auto report = two_gpu_report();
  auto in = full_input(report);
  in.queue = QueueMetrics{};
  in.queue->gpu_jobs[0] = {7, 9};  // 7 is also found from GPU 0's process: one series
  in.queue->gpu_jobs[1] = {11};    // the lost GPU: held by the queue all the same
  in.queue->gpu_jobs[5] = {12};    // not in the report: no series
  const std::string text = render_metrics(in, {.hostname = "node-1"});
  std::size_t series = 0;
  for (const auto& l : lines_of(text)) series += l.rfind("cardiac_gpu_job_info{", 0) == 0;
  EXPECT_EQ(series, 4u) << text;
  auto lines = lines_of(text);
  EXPECT_TRUE(lines.count("cardiac_gpu_job_info{" + kGpu0 + R"(,job="9",source="cardiac"} 1)"));
  EXPECT_TRUE(lines.count("cardiac_gpu_job_info{" + kGpu1 + R"(,job="11",source="cardiac"} 1)"));
}

TEST(Exposition, AbsentValuesProduceNoSeries) {
  std::string text = render(false);
  // Never read at all: no family.
  for (std::string_view family :
       {"cardiac_gpu_fan_speed_ratio", "cardiac_gpu_memory_reserved_bytes",
        "cardiac_gpu_performance_state", "cardiac_host_swap_total_bytes",
        "cardiac_host_cpu_busy_ratio", "cardiac_gpu_retired_pages_sbe"}) {
    EXPECT_EQ(text.find(family), std::string::npos) << family;
  }
  // The lost GPU has only its state series and fault counts, no readings, no last Xid.
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.find(kGpu1 + "}") == std::string::npos && l.find(kGpu1 + ",") == std::string::npos) {
      continue;
    }
    EXPECT_TRUE(l.starts_with("cardiac_gpu_up{") || l.starts_with("cardiac_gpu_health{") ||
                l.starts_with("cardiac_gpu_sample_duration_seconds{") ||
                l.starts_with("cardiac_gpu_xid_errors_total{") ||
                l.starts_with("cardiac_gpu_kernel_faults_total{"))
        << l;
  }
}

TEST(Exposition, NanAndMissingReportEmitOnlyWhatIsKnown) {
  ExpositionInput in;
  in.agent.sample_duration_seconds = std::numeric_limits<double>::quiet_NaN();
  in.agent.samples_total = 0;
  std::string text = render_metrics(in, {.hostname = "h"});
  EXPECT_EQ(text,
            "# HELP cardiac_agent_samples_total Samples taken since the agent started.\n"
            "# TYPE cardiac_agent_samples_total counter\n"
            "cardiac_agent_samples_total{hostname=\"h\"} 0\n");
}

TEST(Exposition, HelpAndTypeOncePerFamilyAndFamiliesSortedAndContiguous) {
  for (bool compat : {false, true}) {
    std::string text = render(compat);
    std::map<std::string, int> help, type;
    std::vector<std::string> order;  // family of each sample line, in output order
    std::istringstream in(text);
    std::string current;
    for (std::string l; std::getline(in, l);) {
      if (l.starts_with("# HELP ")) {
        current = l.substr(7, l.find(' ', 7) - 7);
        ++help[current];
        order.push_back(current);
      } else if (l.starts_with("# TYPE ")) {
        ++type[l.substr(7, l.find(' ', 7) - 7)];
      } else {
        std::string name = l.substr(0, l.find_first_of("{ "));
        EXPECT_EQ(name, current) << "sample outside its family: " << l;
      }
    }
    for (const auto& [name, n] : help) {
      EXPECT_EQ(n, 1) << name;
      EXPECT_EQ(type[name], 1) << name;
    }
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
    EXPECT_EQ(std::adjacent_find(order.begin(), order.end()), order.end());
  }
}

TEST(Exposition, EveryLineMatchesTheGrammar) {
  for (bool compat : {false, true}) {
    auto bad = grammar_violations(render(compat));
    EXPECT_TRUE(bad.empty()) << "first bad line: " << (bad.empty() ? "" : bad.front());
  }
}

TEST(Exposition, CompatNamesOnlyWhenAsked) {
  std::string native = render(false);
  EXPECT_EQ(native.find("DCGM_"), std::string::npos);
  auto lines = lines_of(render(true));
  for (const std::string& want : std::vector<std::string>{
           "DCGM_FI_DEV_GPU_TEMP{" + kDcgm0 + "} 45",
           "DCGM_FI_DEV_GPU_UTIL{" + kDcgm0 + "} 87",
           "DCGM_FI_DEV_FB_USED{" + kDcgm0 + "} 1024",
           "DCGM_FI_DEV_POWER_USAGE{" + kDcgm0 + "} 312.5",
           "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" + kDcgm0 + "} 123456789",
           "DCGM_FI_DEV_SM_CLOCK{" + kDcgm0 + "} 1980",
           "DCGM_FI_DEV_MEM_CLOCK{" + kDcgm0 + "} 2619",
           "DCGM_FI_DEV_XID_ERRORS{" + kDcgm0 + "} 79",
           "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter",
           "# TYPE DCGM_FI_DEV_GPU_TEMP gauge",
           // The native series stay next to the compat ones.
           "cardiac_gpu_temperature_celsius{" + kGpu0 + "} 45",
       }) {
    EXPECT_TRUE(lines.count(want)) << "missing: " << want;
  }
}

TEST(Exposition, XidsNotWatchedMeansNoXidSeries) {
  auto report = two_gpu_report();
  auto in = full_input(report);
  in.xids_watched = false;
  std::string text = render_metrics(in, {.hostname = "n", .compat_dcgm = true});
  EXPECT_EQ(text.find("xid"), std::string::npos);
  EXPECT_EQ(text.find("XID"), std::string::npos);
}

TEST(Exposition, FaultCountsStartAtZeroForEveryGpuAndClass) {
  auto report = two_gpu_report();
  auto in = full_input(report);
  in.fault_counts[{"0000:18:00.0", health::FaultClass::kFallenOffBus}] = 3;
  in.fault_counts[{"0000:c1:00.0", health::FaultClass::kSxidFatal}] = 1;  // an NVSwitch
  const auto lines = lines_of(render_metrics(in, {.hostname = "node-1"}));
  EXPECT_TRUE(
      lines.count("cardiac_gpu_kernel_faults_total{" + kGpu0 + R"(,class="fallen_off_bus"} 3)"));
  EXPECT_TRUE(
      lines.count("cardiac_gpu_kernel_faults_total{" + kGpu0 + R"(,class="xid_critical"} 0)"));
  EXPECT_TRUE(
      lines.count("cardiac_gpu_kernel_faults_total{" + kGpu1 + R"(,class="reset_required"} 0)"));
  EXPECT_TRUE(lines.count(
      R"(cardiac_gpu_kernel_faults_total{pci_bus_id="0000:c1:00.0",hostname="node-1",class="sxid_fatal"} 1)"));
  in.xids_watched = false;
  EXPECT_EQ(render_metrics(in, {.hostname = "node-1"}).find("kernel_faults"), std::string::npos);
}

TEST(Exposition, UnreadableKernelLogShowsNoZeroFaultCounts) {
  auto report = two_gpu_report();
  auto in = full_input(report);
  in.fault_counts[{"0000:18:00.0", health::FaultClass::kFallenOffBus}] = 3;  // NVML's Xid event
  in.agent.kmsg_up = 0;
  auto lines = lines_of(render_metrics(in, {.hostname = "node-1"}));
  EXPECT_TRUE(lines.count(R"(cardiac_kmsg_up{hostname="node-1"} 0)"));
  EXPECT_TRUE(
      lines.count("cardiac_gpu_kernel_faults_total{" + kGpu0 + R"(,class="fallen_off_bus"} 3)"));
  for (const auto& l : lines) {
    EXPECT_FALSE(l.starts_with("cardiac_gpu_kernel_faults_total{") && l.ends_with(" 0")) << l;
  }
  in.agent.kmsg_up = 1;
  lines = lines_of(render_metrics(in, {.hostname = "node-1"}));
  EXPECT_TRUE(lines.count(R"(cardiac_kmsg_up{hostname="node-1"} 1)"));
  EXPECT_TRUE(
      lines.count("cardiac_gpu_kernel_faults_total{" + kGpu0 + R"(,class="xid_critical"} 0)"));
}

TEST(Exposition, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escape_help("a\\b\"c\nd"), "a\\\\b\"c\\nd");
  auto report = two_gpu_report();
  report.gpus[0].reading.name = "odd \"GPU\"\\\nname";
  std::string text = render_metrics(full_input(report), {.hostname = "h\"1"});
  EXPECT_NE(text.find(R"(model="odd \"GPU\"\\\nname",hostname="h\"1")"), std::string::npos);
  EXPECT_TRUE(grammar_violations(text).empty());
}

TEST(Exposition, GrammarCheckerRejectsBadLines) {
  EXPECT_TRUE(grammar_violations("a_b{x=\"1\"} 2\n# TYPE a_b gauge\n").empty());
  for (const char* bad : {"1abc 2\n", "a{x=\"1\"}\n", "a{x=\"un\"escaped\"} 1\n", "a{9x=\"1\"} 1\n",
                          "a 1 2 3\n", "# TYPE a summary\n", "a NaN\n", "a 1"}) {
    EXPECT_FALSE(grammar_violations(bad).empty()) << bad;
  }
}

TEST(Exposition, FormatsValues) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(85899345920.0), "85899345920");
  EXPECT_EQ(format_value(0.5), "0.5");
  EXPECT_EQ(format_value(-2), "-2");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_value(1e300), "1e+300");
}

TEST(Exposition, DcgmBusIdForm) {
  EXPECT_EQ(dcgm_bus_id("0000:3b:00.0"), "00000000:3B:00.0");
  EXPECT_EQ(dcgm_bus_id("00000000:3B:00.0"), "00000000:3B:00.0");
  EXPECT_EQ(dcgm_bus_id(""), "");
}

TEST(Exposition, QueueSeriesAndTheWaitHistogram) {
  ExpositionInput in;
  QueueMetrics q;
  q.jobs_by_state = {{"pending", 2}, {"running", 1}};
  q.wait_bounds = {1, 60};
  q.wait_counts = {3, 1, 2};  // 3 waits <= 1 s, 1 <= 60 s, 2 above
  q.wait_sum_seconds = 500.5;
  q.gpus_allocated = 4;
  q.gpus_allocated_idle = 1;
  q.user_gpu_seconds = {{"alice", 7200}};
  in.queue = q;
  std::string text = render_metrics(in, {.hostname = "node-1"});
  auto lines = lines_of(text);
  for (const std::string& want : std::vector<std::string>{
           "# TYPE cardiac_queue_wait_seconds histogram",
           R"(cardiac_queue_wait_seconds_bucket{hostname="node-1",le="1"} 3)",
           R"(cardiac_queue_wait_seconds_bucket{hostname="node-1",le="60"} 4)",
           R"(cardiac_queue_wait_seconds_bucket{hostname="node-1",le="+Inf"} 6)",
           R"(cardiac_queue_wait_seconds_sum{hostname="node-1"} 500.5)",
           R"(cardiac_queue_wait_seconds_count{hostname="node-1"} 6)",
           R"(cardiac_queue_jobs{hostname="node-1",state="pending"} 2)",
           R"(cardiac_queue_gpus_allocated{hostname="node-1"} 4)",
           R"(cardiac_queue_gpus_allocated_idle{hostname="node-1"} 1)",
           "# TYPE cardiac_queue_user_gpu_seconds_total counter",
           R"(cardiac_queue_user_gpu_seconds_total{hostname="node-1",user="alice"} 7200)",
       }) {
    EXPECT_TRUE(lines.count(want)) << want << "\n" << text;
  }
  auto bad = grammar_violations(text);
  EXPECT_TRUE(bad.empty()) << bad.front();
  // Without a queue, no queue series at all.
  EXPECT_EQ(render(false).find("cardiac_queue_"), std::string::npos);
}

// Kept buffers change nothing in the text: the same input gives the same text as a fresh
// render, and a family an earlier render had but this input lacks does not come back.
TEST(Exposition, AKeptScratchRendersWhatAFreshRenderDoes) {
  static const auto report = two_gpu_report();
  RenderScratch scratch;
  ExpositionInput with_queue = full_input(report);
  QueueMetrics q;
  q.jobs_by_state = {{"pending", 2}};
  q.wait_bounds = {1};
  q.wait_counts = {1, 1};
  with_queue.queue = q;
  ExpositionInput without_queue = full_input(report);
  for (bool compat : {true, false}) {
    const ExpositionOptions opt{.hostname = "node-1", .compat_dcgm = compat};
    for (const auto* in : {&with_queue, &without_queue, &with_queue}) {
      EXPECT_EQ(render_metrics(*in, opt, scratch), render_metrics(*in, opt));
    }
  }
  EXPECT_EQ(render_metrics(without_queue, {.hostname = "node-1"}, scratch).find("cardiac_queue_"),
            std::string::npos);
}

}  // namespace
}  // namespace cardiac::metrics
