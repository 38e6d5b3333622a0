// SPDX-License-Identifier: Apache-2.0
// The metric table itself, and the Markdown reference generated from it.
#include "metrics/registry.h"

#include "metrics/config_info.h"

#include "core/format.h"

namespace cardiac::metrics {

// The rows, split by subject: registry_gpu.cpp and registry_host.cpp.
std::vector<MetricDef> gpu_metric_rows();
std::vector<MetricDef> host_metric_rows();
std::vector<MetricDef> queue_metric_rows();
std::vector<MetricDef> config_metric_rows();  // config_info.cpp

const std::vector<MetricDef>& metric_registry() {
  static const std::vector<MetricDef> kTable = [] {
    auto r = gpu_metric_rows();
    auto h = host_metric_rows();
    r.insert(r.end(), h.begin(), h.end());
    auto q = queue_metric_rows();
    r.insert(r.end(), q.begin(), q.end());
    auto c = config_metric_rows();
    r.insert(r.end(), c.begin(), c.end());
    return r;
  }();
  return kTable;
}

std::string_view metric_type_name(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kGauge:
      break;
  }
  return "gauge";
}

std::vector<std::string_view> native_labels(Scope s) {
  static constexpr std::string_view kGpuLabels[] = {"gpu", "uuid", "pci_bus_id", "model",
                                                    "hostname"};
  std::vector<std::string_view> gpu(std::begin(kGpuLabels), std::end(kGpuLabels));
  switch (s) {
    case Scope::kGpu:
    case Scope::kLastXid:
      return gpu;
    case Scope::kClockEvent:
      gpu.emplace_back("reason");
      return gpu;
    case Scope::kXidCount:
      gpu.emplace_back("xid");
      return gpu;
    case Scope::kFaultCount:
      gpu.emplace_back("class");
      return gpu;
    case Scope::kGpuJob:
      gpu.emplace_back("job");
      gpu.emplace_back("source");
      return gpu;
    case Scope::kFilesystem:
      return {"hostname", "mountpoint", "device", "fstype"};
    case Scope::kNic:
      return {"hostname", "interface"};
    case Scope::kQueueState:
      return {"hostname", "state"};
    case Scope::kQueueUser:
      return {"hostname", "user"};
    case Scope::kNodeConfig: {
      std::vector<std::string_view> l{"hostname"};
      for (const auto& [label, key] : node_config_labels()) l.push_back(label);
      return l;
    }
    case Scope::kGpuConfig:
      for (const auto& [label, key] : gpu_config_labels()) gpu.push_back(label);
      return gpu;
    case Scope::kReport:
    case Scope::kAgent:
    case Scope::kQueue:
    case Scope::kQueueWait:
      break;
  }
  return {"hostname"};
}

std::vector<std::string_view> dcgm_labels() {
  // render_metrics.go's order; both spellings of the host label, since dashboards written
  // before dcgm-exporter #655 use "Hostname" and newer ones "hostname".
  return {"gpu",       "UUID",     "pci_bus_id", "device",
          "modelName", "Hostname", "hostname",   "DCGM_FI_DRIVER_VERSION"};
}

namespace {
// A Markdown table cell must not contain a raw '|' or a line break.
std::string cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::string metrics_reference_markdown() {
  std::string out =
      "# Metrics\n\n"
      "Generated from the metric registry (`src/metrics/registry.cpp`); do not edit by hand.\n"
      "A value the device or host does not offer is absent: no series, never 0.\n\n"
      "| Name | Type | Unit | Labels | Help | Source | dcgm-exporter name |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const auto& m : metric_registry()) {
    std::string dcgm = "-";
    if (!m.dcgm.name.empty()) {
      dcgm = fmt::format("`{}` ({}, {})", m.dcgm.name, metric_type_name(m.dcgm.type),
                         cell(m.dcgm.unit));
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", m.name, metric_type_name(m.type),
                       m.unit.empty() ? "-" : m.unit, fmt::join(native_labels(m.scope), ", "),
                       cell(m.help), cell(m.source), dcgm);
  }
  out += fmt::format(
      "\nWith `metrics_compat = \"dcgm\"` each metric that has a dcgm-exporter name is also "
      "emitted "
      "under that name, in dcgm-exporter's unit, with the labels {} (`pci_bus_id` in "
      "dcgm-exporter's `00000000:3B:00.0` form).\n",
      fmt::join(dcgm_labels(), ", "));
  return out;
}

}  // namespace cardiac::metrics
