// SPDX-License-Identifier: Apache-2.0
#include "fleet/view.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace cardiac::fleet {
namespace {

using nlohmann::json;

// The series the view reads, one instant query for all of them.
constexpr const char* kSeries[] = {
    "cardiac_gpu_health",
    "cardiac_gpu_up",
    "cardiac_gpu_utilization_ratio",
    "cardiac_gpu_memory_used_bytes",
    "cardiac_gpu_memory_total_bytes",
    "cardiac_gpu_temperature_celsius",
    "cardiac_gpu_power_watts",
    "cardiac_gpu_last_xid",
    "cardiac_gpu_xid_errors_total",
    "cardiac_host_health",
    "cardiac_inventory_health",
    "cardiac_nvml_available",
};

std::string label(const json& labels, const char* name) {
  if (!labels.is_object()) return {};
  auto it = labels.find(name);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<int> to_int(const std::string& s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// An instant sample's value ([time, "value"]); NaN when absent or not a number.
double value_of(const json& sample) {
  const json& v = sample.contains("value") ? sample["value"] : json();
  if (!v.is_array() || v.size() != 2 || !v[1].is_string()) return std::nan("");
  try {
    return std::stod(v[1].get<std::string>());
  } catch (const std::exception&) {
    return std::nan("");
  }
}

Verdict verdict_of(double v) {
  if (std::isnan(v)) return Verdict::kUnknown;
  if (v >= 2) return Verdict::kFail;
  if (v >= 1) return Verdict::kWarn;
  return Verdict::kOk;
}

Verdict worst(Verdict a, Verdict b) {
  return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

std::string host_of(const std::string& instance) {
  if (!instance.empty() && instance.front() == '[') {
    const auto end = instance.find(']');
    return end == std::string::npos ? instance : instance.substr(1, end - 1);
  }
  const auto colon = instance.rfind(':');
  return colon == std::string::npos ? instance : instance.substr(0, colon);
}

FleetGpu& gpu_of(FleetNode& node, int index) {
  for (FleetGpu& g : node.gpus) {
    if (g.index == index) return g;
  }
  FleetGpu& g = node.gpus.emplace_back();
  g.index = index;
  return g;
}

void read_sample(FleetNode& node, const json& sample) {
  const json& labels = sample.contains("metric") ? sample["metric"] : json();
  const std::string name = label(labels, "__name__");
  const double v = value_of(sample);
  if (node.hostname.empty()) node.hostname = label(labels, "hostname");
  if (name == "cardiac_host_health") {
    node.host = verdict_of(v);
    return;
  }
  if (name == "cardiac_inventory_health") {
    node.inventory = verdict_of(v);
    return;
  }
  if (name == "cardiac_nvml_available") {
    if (!std::isnan(v)) node.nvml = v >= 1;
    return;
  }
  const auto index = to_int(label(labels, "gpu"));
  if (!index) return;
  FleetGpu& g = gpu_of(node, *index);
  if (g.uuid.empty()) g.uuid = label(labels, "uuid");
  if (g.model.empty()) g.model = label(labels, "model");
  auto opt = [&]() { return std::isnan(v) ? std::nullopt : std::optional<double>(v); };
  if (name == "cardiac_gpu_health") {
    g.verdict = verdict_of(v);
  } else if (name == "cardiac_gpu_up") {
    g.answering = v >= 1;
  } else if (name == "cardiac_gpu_utilization_ratio") {
    g.utilization = opt();
  } else if (name == "cardiac_gpu_memory_used_bytes") {
    g.memory_used = opt();
  } else if (name == "cardiac_gpu_memory_total_bytes") {
    g.memory_total = opt();
  } else if (name == "cardiac_gpu_temperature_celsius") {
    g.temperature = opt();
  } else if (name == "cardiac_gpu_power_watts") {
    g.power = opt();
  } else if (name == "cardiac_gpu_last_xid") {
    g.last_xid = std::isnan(v) ? 0 : static_cast<int>(v);
  } else if (name == "cardiac_gpu_xid_errors_total") {
    if (auto code = to_int(label(labels, "xid")); code && !std::isnan(v) && v > 0) {
      g.xids[*code] += v;
    }
  }
}

FleetAlert alert_of(const json& a) {
  const json& labels = a.contains("labels") ? a["labels"] : json();
  const json& ann = a.contains("annotations") ? a["annotations"] : json();
  FleetAlert out;
  out.name = label(labels, "alertname");
  out.severity = label(labels, "severity");
  out.state = a.value("state", "");
  out.summary = label(ann, "description");
  if (out.summary.empty()) out.summary = label(ann, "summary");
  out.active_at = a.contains("activeAt") && a["activeAt"].is_string() ? a["activeAt"] : "";
  out.gpu = to_int(label(labels, "gpu"));
  return out;
}

// The GPU's state in words, from what Prometheus holds.
std::string gpu_reason(const FleetGpu& g, const std::vector<FleetAlert>& alerts) {
  if (g.verdict == Verdict::kUnknown) return "no health reading in Prometheus";
  std::string out = g.answering ? "" : "not answering NVML (lost, hung or needing a reset)";
  for (const FleetAlert& a : alerts) {
    if (a.gpu != g.index) continue;
    out += (out.empty() ? "" : "; ") + (a.summary.empty() ? a.name : a.summary);
  }
  if (!out.empty() || g.verdict == Verdict::kOk) return out;
  return fmt::format("{}: see `cardiac status` on the node",
                     g.verdict == Verdict::kFail ? "failing" : "degraded");
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "fail";
    case Verdict::kUnknown:
      break;
  }
  return "unknown";
}

std::string series_query(const std::string& job) {
  std::string names;
  for (const char* n : kSeries) names += (names.empty() ? "" : "|") + std::string(n);
  return fmt::format(R"({{__name__=~"{}",job="{}"}})", names, job);
}

FleetView build_view(const std::string& prometheus, const std::string& job, const json& targets,
                     const json& series, const json& alerts) {
  FleetView view{.prometheus = prometheus,
                 .job = job,
                 .nodes = {},
                 .fleet_alerts = {},
                 .verdict = Verdict::kUnknown};
  std::map<std::string, FleetNode> by_instance;
  if (targets.is_array()) {
    for (const json& t : targets) {
      if (!t.is_object() || t.value("scrapePool", "") != job) continue;
      const json& labels = t.contains("labels") ? t["labels"] : json();
      const std::string instance = label(labels, "instance");
      if (instance.empty()) continue;
      FleetNode& n = by_instance[instance];
      n.instance = instance;
      n.scraped = t.value("health", "") == "up";
      n.scrape_error = t.contains("lastError") && t["lastError"].is_string() ? t["lastError"] : "";
      n.last_scrape =
          t.contains("lastScrape") && t["lastScrape"].is_string() ? t["lastScrape"] : "";
    }
  }
  if (series.is_array()) {
    for (const json& s : series) {
      const json& labels = s.is_object() && s.contains("metric") ? s["metric"] : json();
      auto it = by_instance.find(label(labels, "instance"));
      // A series of a target Prometheus no longer lists is not this fleet's.
      if (it != by_instance.end()) read_sample(it->second, s);
    }
  }
  if (alerts.is_array()) {
    for (const json& a : alerts) {
      if (!a.is_object() || a.value("state", "") != "firing") continue;
      const json& labels = a.contains("labels") ? a["labels"] : json();
      auto it = by_instance.find(label(labels, "instance"));
      if (it != by_instance.end()) {
        it->second.alerts.push_back(alert_of(a));
      } else if (label(labels, "job").empty() || label(labels, "job") == job) {
        view.fleet_alerts.push_back(alert_of(a));
      }
    }
  }

  bool any_unknown = by_instance.empty();
  Verdict worst_known = Verdict::kOk;
  for (auto& [instance, n] : by_instance) {
    if (n.hostname.empty()) n.hostname = host_of(instance);
    std::sort(n.gpus.begin(), n.gpus.end(),
              [](const FleetGpu& a, const FleetGpu& b) { return a.index < b.index; });
    for (FleetGpu& g : n.gpus) g.reason = gpu_reason(g, n.alerts);
    if (!n.scraped) {
      // What Prometheus last held of it is gone or stale: say so, show no GPU as fine.
      n.verdict = Verdict::kUnknown;
      n.reason =
          "not scraped: " + (n.scrape_error.empty() ? "no successful scrape yet" : n.scrape_error);
      n.gpus.clear();
    } else if (n.host == Verdict::kUnknown && n.gpus.empty()) {
      n.verdict = Verdict::kUnknown;
      n.reason = "scraped, but no cardiac health series (is it a cardiac agent?)";
    } else {
      Verdict v = worst(n.host == Verdict::kUnknown ? Verdict::kOk : n.host,
                        n.inventory == Verdict::kUnknown ? Verdict::kOk : n.inventory);
      std::vector<std::string> parts;
      unsigned bad = 0;
      for (const FleetGpu& g : n.gpus) {
        v = worst(v, g.verdict);
        if (g.verdict != Verdict::kOk) ++bad;
      }
      if (n.nvml == false) parts.emplace_back("NVML not available");
      if (bad > 0) parts.push_back(fmt::format("{} of {} GPUs not OK", bad, n.gpus.size()));
      if (n.host == Verdict::kWarn || n.host == Verdict::kFail) {
        parts.push_back(fmt::format("host {}", verdict_name(n.host)));
      }
      if (n.inventory == Verdict::kWarn || n.inventory == Verdict::kFail) {
        parts.push_back(fmt::format("GPU inventory {}", verdict_name(n.inventory)));
      }
      n.verdict = v;
      for (const std::string& p : parts) n.reason += (n.reason.empty() ? "" : "; ") + p;
    }
    if (n.verdict == Verdict::kUnknown) {
      any_unknown = true;
    } else {
      worst_known = worst(worst_known, n.verdict);
    }
    view.nodes.push_back(std::move(n));
  }
  std::stable_sort(view.nodes.begin(), view.nodes.end(),
                   [](const FleetNode& a, const FleetNode& b) { return a.hostname < b.hostname; });
  // A fleet with a node nobody could read is not known to be fine; a failing node still shows.
  view.verdict = worst_known == Verdict::kFail ? Verdict::kFail
                 : any_unknown                 ? Verdict::kUnknown
                                               : worst_known;
  return view;
}

json to_json(const FleetView& view) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  auto alert = [](const FleetAlert& a) {
    json j = {{"name", a.name},
              {"severity", a.severity},
              {"state", a.state},
              {"summary", a.summary},
              {"active_at", a.active_at}};
    j["gpu"] = a.gpu ? json(*a.gpu) : json(nullptr);
    return j;
  };
  json nodes = json::array();
  std::map<std::string, unsigned> counts = {{"ok", 0}, {"warn", 0}, {"fail", 0}, {"unknown", 0}};
  unsigned gpus_total = 0;
  std::map<std::string, unsigned> gpu_counts = {
      {"ok", 0}, {"warn", 0}, {"fail", 0}, {"unknown", 0}};
  for (const FleetNode& n : view.nodes) {
    ++counts[verdict_name(n.verdict)];
    json gpus = json::array();
    for (const FleetGpu& g : n.gpus) {
      ++gpus_total;
      ++gpu_counts[verdict_name(g.verdict)];
      json xids = json::object();
      for (const auto& [code, count] : g.xids) xids[std::to_string(code)] = count;
      gpus.push_back({{"index", g.index},
                      {"uuid", g.uuid},
                      {"model", g.model},
                      {"verdict", verdict_name(g.verdict)},
                      {"answering", g.answering},
                      {"utilization", opt(g.utilization)},
                      {"memory_used_bytes", opt(g.memory_used)},
                      {"memory_total_bytes", opt(g.memory_total)},
                      {"temperature_celsius", opt(g.temperature)},
                      {"power_watts", opt(g.power)},
                      {"last_xid", g.last_xid},
                      {"xids", xids},
                      {"reason", g.reason}});
    }
    json alerts = json::array();
    for (const FleetAlert& a : n.alerts) alerts.push_back(alert(a));
    nodes.push_back({{"instance", n.instance},
                     {"hostname", n.hostname},
                     {"scraped", n.scraped},
                     {"scrape_error", n.scrape_error},
                     {"last_scrape", n.last_scrape},
                     {"verdict", verdict_name(n.verdict)},
                     {"host", verdict_name(n.host)},
                     {"inventory", verdict_name(n.inventory)},
                     {"nvml", n.nvml ? json(*n.nvml) : json(nullptr)},
                     {"reason", n.reason},
                     {"gpus", gpus},
                     {"alerts", alerts}});
  }
  json fleet_alerts = json::array();
  for (const FleetAlert& a : view.fleet_alerts) fleet_alerts.push_back(alert(a));
  return {{"schema", "cardiac.fleet/v1"},
          {"prometheus", view.prometheus},
          {"job", view.job},
          {"verdict", verdict_name(view.verdict)},
          {"nodes_by_verdict", counts},
          {"gpus", gpus_total},
          {"gpus_by_verdict", gpu_counts},
          {"nodes", nodes},
          {"fleet_alerts", fleet_alerts}};
}

}  // namespace cardiac::fleet
