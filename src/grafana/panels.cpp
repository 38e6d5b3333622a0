// SPDX-License-Identifier: Apache-2.0
// The dashboard's content: every row, panel and query, native and dcgm-exporter forms side by
// side, so that one table decides what both dashboards show.
#include <string_view>

#include "grafana/dashboard.h"
#include "promrules/fleet_rules.h"

namespace cardiac::grafana {
namespace {

// One query in both namings; an empty form has no counterpart under that naming.
struct Query {
  Query(std::string n, std::string d, std::string l, bool i = false)
      : native(std::move(n)), dcgm(std::move(d)), legend(std::move(l)), instant(i) {}
  std::string native;
  std::string dcgm;
  std::string legend;
  bool instant;
};

struct PanelDef {
  PanelDef(Panel p, std::vector<Query> q, std::string gap = "")
      : panel(std::move(p)), queries(std::move(q)), dcgm_gap(std::move(gap)) {}
  Panel panel;  // without targets
  std::vector<Query> queries;
  std::string dcgm_gap;  // why the panel has no dcgm-exporter form, when it has none
};

struct RowDef {
  std::string title;
  std::vector<PanelDef> panels;
};

// Series selectors with the dashboard's variables. `$instance` is Prometheus' target label,
// so two agents on one host (same `hostname`) are still two nodes.
std::string node(std::string_view metric, std::string_view extra = "") {
  std::string s = std::string(metric) + "{instance=~\"$instance\"";
  if (!extra.empty()) s += ", " + std::string(extra);
  return s + "}";
}
std::string gpu(std::string_view metric, std::string_view extra = "") {
  std::string s = std::string(metric) + "{instance=~\"$instance\", gpu=~\"$gpu\"";
  if (!extra.empty()) s += ", " + std::string(extra);
  return s + "}";
}

constexpr const char* kGpuLegend = "{{instance}} GPU {{gpu}}";

Panel panel(std::string title, std::string description, PanelType type, std::string unit,
            int width = 12, int height = 8) {
  Panel p;
  p.title = std::move(title);
  p.description = std::move(description);
  p.type = type;
  p.unit = std::move(unit);
  p.width = width;
  p.height = height;
  return p;
}

RowDef fleet_row(const std::string& job) {
  const std::string up = "up{job=\"" + job + "\"}";
  Panel health = panel("GPU health by node",
                       "cardiac's verdict of each GPU (cardiac_gpu_health): OK, WARN or FAIL; "
                       "`cardiac status` on the node says why.",
                       PanelType::kStateTimeline, "", 24, 10);
  health.health_mapping = true;
  Panel health_now = panel(
      "GPU health now", "Every GPU of the selected nodes with its verdict, model and PCI bus id.",
      PanelType::kTable, "", 12, 8);
  health_now.health_mapping = true;
  Panel host = panel("Host and inventory health",
                     "cardiac_host_health (memory, disks, CPU, D-state tasks, NICs) and "
                     "cardiac_inventory_health (NVML usable, NVML against the PCI bus).",
                     PanelType::kStateTimeline, "", 12, 8);
  host.health_mapping = true;
  return {
      "Fleet overview",
      {
          {panel("Nodes reporting", "Agents whose /metrics Prometheus scraped last time.",
                 PanelType::kStat, "none", 4, 4),
           {{"count(" + up + " == 1) or vector(0)", "count(" + up + " == 1) or vector(0)", "",
             true}}},
          {panel("Nodes down", "Targets of the job that did not answer the last scrape.",
                 PanelType::kStat, "none", 4, 4),
           {{"count(" + up + " == 0) or vector(0)", "count(" + up + " == 0) or vector(0)", "",
             true}}},
          {panel("GPUs", "GPUs the agents report, answering or not.", PanelType::kStat, "none", 4,
                 4),
           {{"count(cardiac_gpu_up)", "count(DCGM_FI_DEV_GPU_TEMP)", "", true}}},
          {panel("GPUs answering", "GPUs that answered NVML in the latest sample.",
                 PanelType::kStat, "none", 4, 4),
           {{"sum(cardiac_gpu_up)", "", "", true}},
           "dcgm-exporter has no per-GPU liveness series"},
          {panel("Unhealthy GPUs", "GPUs whose verdict is WARN or FAIL.", PanelType::kStat, "none",
                 4, 4),
           {{"count(cardiac_gpu_health > 0) or vector(0)", "", "", true}},
           "no health verdict among dcgm-exporter's default metrics"},
          {panel("Failed GPUs", "GPUs whose verdict is FAIL (lost, fell off the bus, ...).",
                 PanelType::kStat, "none", 4, 4),
           {{"count(cardiac_gpu_health == 2) or vector(0)", "", "", true}},
           "no health verdict among dcgm-exporter's default metrics"},
          {health,
           {{"max by (instance, gpu) (" + node("cardiac_gpu_health") + ")", "", kGpuLegend}},
           "no health verdict among dcgm-exporter's default metrics"},
          {health_now,
           {{"max by (instance, gpu, model, pci_bus_id) (" + node("cardiac_gpu_health") + ")", "",
             "", true}},
           "no health verdict among dcgm-exporter's default metrics"},
          {host,
           {{"max by (instance) (" + node("cardiac_host_health") + ")", "", "{{instance}} host"},
            {"max by (instance) (" + node("cardiac_inventory_health") + ")", "",
             "{{instance}} inventory"}},
           "dcgm-exporter judges no host"},
          {panel("GPUs per node", "GPUs each node reports; a drop is a GPU gone from the bus.",
                 PanelType::kTimeseries, "none"),
           {{"count by (instance) (" + node("cardiac_gpu_up") + ")",
             "count by (instance) (" + node("DCGM_FI_DEV_GPU_TEMP") + ")", "{{instance}}"}}},
      }};
}

RowDef gpu_row() {
  return {
      "GPUs of the selected nodes",
      {
          {panel("Utilization", "Fraction of time a kernel ran on the GPU.", PanelType::kTimeseries,
                 "percentunit"),
           {{gpu("cardiac_gpu_utilization_ratio"), gpu("DCGM_FI_DEV_GPU_UTIL") + " / 100",
             kGpuLegend}}},
          {panel("Memory bandwidth utilization",
                 "Fraction of time device memory was read or written.", PanelType::kTimeseries,
                 "percentunit"),
           {{gpu("cardiac_gpu_memory_utilization_ratio"),
             gpu("DCGM_FI_DEV_MEM_COPY_UTIL") + " / 100", kGpuLegend}}},
          {panel("Memory used", "Frame-buffer memory in use.", PanelType::kTimeseries, "bytes"),
           {{gpu("cardiac_gpu_memory_used_bytes"), gpu("DCGM_FI_DEV_FB_USED") + " * 1048576",
             kGpuLegend}}},
          {panel("Memory used (fraction)", "Frame-buffer memory in use over the total.",
                 PanelType::kTimeseries, "percentunit"),
           {{gpu("cardiac_gpu_memory_used_bytes") + " / " + gpu("cardiac_gpu_memory_total_bytes"),
             gpu("DCGM_FI_DEV_FB_USED") + " / (" + gpu("DCGM_FI_DEV_FB_USED") + " + " +
                 gpu("DCGM_FI_DEV_FB_FREE") + ")",
             kGpuLegend}}},
          {panel("Temperature", "GPU core temperature and the GPU's own slowdown threshold.",
                 PanelType::kTimeseries, "celsius"),
           {{gpu("cardiac_gpu_temperature_celsius"), gpu("DCGM_FI_DEV_GPU_TEMP"), kGpuLegend},
            {gpu("cardiac_gpu_slowdown_temperature_celsius"), "",
             "{{instance}} GPU {{gpu}} slowdown"}}},
          {panel("Power", "Board power draw and the enforced power limit.", PanelType::kTimeseries,
                 "watt"),
           {{gpu("cardiac_gpu_power_watts"), gpu("DCGM_FI_DEV_POWER_USAGE"), kGpuLegend},
            {gpu("cardiac_gpu_power_limit_watts"), "", "{{instance}} GPU {{gpu}} limit"}}},
          {panel("Clocks", "SM and memory clocks.", PanelType::kTimeseries, "hertz"),
           {{gpu("cardiac_gpu_sm_clock_hertz"), gpu("DCGM_FI_DEV_SM_CLOCK") + " * 1000000",
             "{{instance}} GPU {{gpu}} SM"},
            {gpu("cardiac_gpu_memory_clock_hertz"), gpu("DCGM_FI_DEV_MEM_CLOCK") + " * 1000000",
             "{{instance}} GPU {{gpu}} memory"}}},
          {panel("Energy rate", "Power averaged from the energy counter.", PanelType::kTimeseries,
                 "watt"),
           {{"rate(" + gpu("cardiac_gpu_energy_joules_total") + "[$__rate_interval])",
             "rate(" + gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") + "[$__rate_interval]) / 1000",
             kGpuLegend}}},
          {panel("PCIe throughput", "PCIe transmit and receive over NVML's sampling window.",
                 PanelType::kTimeseries, "Bps"),
           {{gpu("cardiac_gpu_pcie_transmit_bytes_per_second"), "", "{{instance}} GPU {{gpu}} tx"},
            {gpu("cardiac_gpu_pcie_receive_bytes_per_second"), "", "{{instance}} GPU {{gpu}} rx"}},
           "cardiac exports no DCGM_FI_PROF_PCIE_* field"},
      }};
}

RowDef fault_row() {
  Panel up = panel("GPU answering",
                   "1 while the GPU answers NVML; 0 when it is lost (fell off the bus), needs a "
                   "reset, errored or hung.",
                   PanelType::kStateTimeline, "", 24, 8);
  up.up_mapping = true;
  return {
      "Xids and faults",
      {
          {panel("Xid errors since the agent started",
                 "Xid errors per GPU and code from the kernel log and NVML events; the count "
                 "restarts with the agent.",
                 PanelType::kTable, "none"),
           {{"sum by (instance, gpu, xid) (" + node("cardiac_gpu_xid_errors_total") + ")", "", "",
             true}},
           "dcgm-exporter counts no Xids by default (DCGM_EXP_XID_ERRORS_COUNT is opt-in)"},
          {panel("Xid rate", "Xid errors per second, by node and code.", PanelType::kTimeseries,
                 "short"),
           {{"sum by (instance, xid) (rate(" + node("cardiac_gpu_xid_errors_total") +
                 "[$__rate_interval]))",
             "", "{{instance}} Xid {{xid}}"}},
           "dcgm-exporter counts no Xids by default"},
          {panel("Last Xid per GPU", "Code of the most recent Xid of each GPU that had one.",
                 PanelType::kTable, "none"),
           {{gpu("cardiac_gpu_last_xid") + " > 0", gpu("DCGM_FI_DEV_XID_ERRORS") + " > 0", "",
             true}}},
          {panel("Kernel-log faults in the time range",
                 "GPU faults by class of cardiac's catalog (xid_critical, fallen_off_bus, "
                 "reset_required, nvlink_fatal, sxid_fatal).",
                 PanelType::kTable, "none"),
           {{"sum by (instance, gpu, class) (increase(" + node("cardiac_gpu_kernel_faults_total") +
                 "[$__range]))",
             "", "", true}},
           "dcgm-exporter classes no kernel-log faults"},
          {panel("Fell off the bus",
                 "Xid 79 and the driver's \"fallen off the bus\" lines in the "
                 "time range.",
                 PanelType::kStat, "none", 6, 8),
           {{"sum(increase(" + node("cardiac_gpu_kernel_faults_total", "class=\"fallen_off_bus\"") +
                 "[$__range])) or vector(0)",
             "", "", true}},
           "dcgm-exporter classes no kernel-log faults"},
          {panel("GPUs lost", "GPUs that stopped answering NVML (cardiac_gpu_up 0).",
                 PanelType::kStat, "none", 6, 8),
           {{"count(" + node("cardiac_gpu_up") + " == 0) or vector(0)", "", "", true}},
           "dcgm-exporter has no per-GPU liveness series"},
          {panel("ECC errors", "Volatile (since driver load) ECC errors.", PanelType::kTimeseries,
                 "short"),
           {{gpu("cardiac_gpu_ecc_volatile_uncorrected_errors_total"),
             gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"), "{{instance}} GPU {{gpu}} uncorrected"},
            {gpu("cardiac_gpu_ecc_volatile_corrected_errors_total"),
             gpu("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"), "{{instance}} GPU {{gpu}} corrected"}}},
          {panel("ECC errors, lifetime", "Aggregate ECC errors over the life of the GPU.",
                 PanelType::kTimeseries, "short"),
           {{gpu("cardiac_gpu_ecc_aggregate_uncorrected_errors_total"),
             gpu("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"), "{{instance}} GPU {{gpu}} uncorrected"},
            {gpu("cardiac_gpu_ecc_aggregate_corrected_errors_total"),
             gpu("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"), "{{instance}} GPU {{gpu}} corrected"}}},
          {panel("Row remapping (Ampere and later)",
                 "Rows remapped after memory errors; pending waits for a GPU reset, failure "
                 "needs service.",
                 PanelType::kTimeseries, "short"),
           {{gpu("cardiac_gpu_remapped_rows_uncorrectable"),
             gpu("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
             "{{instance}} GPU {{gpu}} uncorrectable"},
            {gpu("cardiac_gpu_remapped_rows_correctable"),
             gpu("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"), "{{instance}} GPU {{gpu}} correctable"},
            {gpu("cardiac_gpu_remapped_rows_pending"), "", "{{instance}} GPU {{gpu}} pending"},
            {gpu("cardiac_gpu_remapped_rows_failure"), gpu("DCGM_FI_DEV_ROW_REMAP_FAILURE"),
             "{{instance}} GPU {{gpu}} failure"}}},
          {panel("Retired pages (before Ampere)",
                 "Pages retired after single- and double-bit errors; pending waits for a driver "
                 "reload.",
                 PanelType::kTimeseries, "short"),
           {{gpu("cardiac_gpu_retired_pages_dbe"), gpu("DCGM_FI_DEV_RETIRED_DBE"),
             "{{instance}} GPU {{gpu}} DBE"},
            {gpu("cardiac_gpu_retired_pages_sbe"), gpu("DCGM_FI_DEV_RETIRED_SBE"),
             "{{instance}} GPU {{gpu}} SBE"},
            {gpu("cardiac_gpu_retired_pages_pending"), gpu("DCGM_FI_DEV_RETIRED_PENDING"),
             "{{instance}} GPU {{gpu}} pending"}}},
          {panel("PCIe replays", "PCIe link-level retries per second.", PanelType::kTimeseries,
                 "short"),
           {{"rate(" + gpu("cardiac_gpu_pcie_replays_total") + "[$__rate_interval])",
             "rate(" + gpu("DCGM_FI_DEV_PCIE_REPLAY_COUNTER") + "[$__rate_interval])",
             kGpuLegend}}},
          {panel("PCIe link against its maximum",
                 "Current link width and generation over the widest and fastest the GPU and slot "
                 "support; below 1 is a degraded link.",
                 PanelType::kTimeseries, "percentunit"),
           {{gpu("cardiac_gpu_pcie_link_width") + " / " + gpu("cardiac_gpu_pcie_link_width_max"),
             "", "{{instance}} GPU {{gpu}} width"},
            {gpu("cardiac_gpu_pcie_link_generation") + " / " +
                 gpu("cardiac_gpu_pcie_link_generation_max"),
             "", "{{instance}} GPU {{gpu}} generation"}},
           "dcgm-exporter's default metrics have no PCIe link state"},
          {up,
           {{gpu("cardiac_gpu_up"), "", kGpuLegend}},
           "dcgm-exporter has no per-GPU liveness series"},
      }};
}

RowDef throttle_row() {
  const std::string reasons = "sum by (instance, reason) (" +
                              gpu("cardiac_gpu_clock_event_reason", "reason!=\"gpu_idle\"") + ")";
  return {"Throttling",
          {
              {panel("GPUs per clock-event reason",
                     "How many of the selected GPUs have each clock-event (throttle) reason "
                     "active.",
                     PanelType::kTimeseries, "short"),
               {{reasons, "", "{{instance}} {{reason}}"}},
               "cardiac exports no DCGM_EXP_CLOCK_EVENTS_COUNT"},
              {panel("GPUs slowed for heat or power",
                     "GPUs with a thermal or power-brake reason active (" +
                         promrules::thermal_power_reasons() +
                         "), per node: what the fleet rule cardiac_fleet_throttling counts.",
                     PanelType::kTimeseries, "short"),
               {{"sum by (instance) (max by (instance, gpu) (" +
                     gpu("cardiac_gpu_clock_event_reason",
                         "reason=~\"" + promrules::thermal_power_reasons() + "\"") +
                     "))",
                 "", "{{instance}}"}},
               "cardiac exports no DCGM_EXP_CLOCK_EVENTS_COUNT"},
              {panel("SM clock against its maximum", "Current SM clock over the part's maximum.",
                     PanelType::kTimeseries, "percentunit"),
               {{gpu("cardiac_gpu_sm_clock_hertz") + " / " + gpu("cardiac_gpu_sm_clock_max_hertz"),
                 "", kGpuLegend}},
               "dcgm-exporter's default metrics have no maximum clock"},
              {panel("Headroom to the slowdown temperature",
                     "Degrees left before the GPU slows its clocks for heat.",
                     PanelType::kTimeseries, "celsius"),
               {{gpu("cardiac_gpu_slowdown_temperature_celsius") + " - " +
                     gpu("cardiac_gpu_temperature_celsius"),
                 "", kGpuLegend}},
               "dcgm-exporter's default metrics have no slowdown threshold"},
          }};
}

RowDef queue_row() {
  const std::string gap = "cardiac's job queue has no dcgm-exporter counterpart";
  return {"Job queue",
          {
              {panel("Jobs waiting and running", "Jobs of cardiac's queue by state, per node.",
                     PanelType::kTimeseries, "short"),
               {{"sum by (instance, state) (" +
                     node("cardiac_queue_jobs", "state=~\"pending|held|running\"") + ")",
                 "", "{{instance}} {{state}}"}},
               gap},
              {panel("Queue GPUs",
                     "GPUs held by running jobs, those of them idle (below 10 % utilization), and "
                     "GPUs fenced off from new jobs.",
                     PanelType::kTimeseries, "short"),
               {{"sum by (instance) (" + node("cardiac_queue_gpus_allocated") + ")", "",
                 "{{instance}} allocated"},
                {"sum by (instance) (" + node("cardiac_queue_gpus_allocated_idle") + ")", "",
                 "{{instance}} allocated but idle"},
                {"sum by (instance) (" + node("cardiac_queue_gpus_fenced") + ")", "",
                 "{{instance}} fenced"}},
               gap},
              {panel("Wait before start (p50, p90)",
                     "Time from submit to a job's first start, over jobs started in each interval.",
                     PanelType::kTimeseries, "s"),
               {{"histogram_quantile(0.5, sum by (le, instance) (rate(" +
                     node("cardiac_queue_wait_seconds_bucket") + "[$__rate_interval])))",
                 "", "{{instance}} p50"},
                {"histogram_quantile(0.9, sum by (le, instance) (rate(" +
                     node("cardiac_queue_wait_seconds_bucket") + "[$__rate_interval])))",
                 "", "{{instance}} p90"}},
               gap},
              {panel("Jobs started", "Jobs that started in the time range, per node.",
                     PanelType::kStat, "none"),
               {{"sum by (instance) (increase(" + node("cardiac_queue_wait_seconds_count") +
                     "[$__range]))",
                 "", "{{instance}}", true}},
               gap},
              {panel("GPU time served by user", "GPU-seconds per second each user's jobs hold.",
                     PanelType::kTimeseries, "short", 24, 8),
               {{"sum by (user) (rate(" + node("cardiac_queue_user_gpu_seconds_total") +
                     "[$__rate_interval]))",
                 "", "{{user}}"}},
               gap},
          }};
}

std::string variable_query(const Options& o, std::string_view label) {
  const bool dcgm = o.naming == Naming::kDcgm;
  if (label == "instance") {
    return dcgm ? "label_values(DCGM_FI_DEV_GPU_TEMP, instance)"
                : "label_values(cardiac_agent_samples_total{job=\"" + o.job + "\"}, instance)";
  }
  return std::string("label_values(") + (dcgm ? "DCGM_FI_DEV_GPU_TEMP" : "cardiac_gpu_up") +
         "{instance=~\"$instance\"}, gpu)";
}

}  // namespace

Dashboard dashboard(const Options& o) {
  Dashboard d;
  d.variables = {{"instance", "Node", variable_query(o, "instance")},
                 {"gpu", "GPU", variable_query(o, "gpu")}};
  for (auto& def : {fleet_row(o.job), gpu_row(), fault_row(), throttle_row(), queue_row()}) {
    Row row{def.title, {}};
    for (const auto& p : def.panels) {
      Panel out = p.panel;
      for (const auto& q : p.queries) {
        const std::string& expr = o.naming == Naming::kDcgm ? q.dcgm : q.native;
        if (!expr.empty()) out.targets.push_back({expr, q.legend, q.instant});
      }
      if (out.targets.empty()) {
        d.left_out.push_back(def.title + " / " + out.title + ": " + p.dcgm_gap);
      } else {
        row.panels.push_back(std::move(out));
      }
    }
    if (!row.panels.empty()) d.rows.push_back(std::move(row));
  }
  return d;
}

}  // namespace cardiac::grafana
