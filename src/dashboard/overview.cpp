// SPDX-License-Identifier: Apache-2.0
#include "dashboard/overview.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "core/time.h"

namespace cardiac::dashboard {
namespace {

using nlohmann::json;

// A number member or null: the page prints "n/a" for null, never 0 (absent is not zero).
json number_or_null(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return nullptr;
  return *it;
}

json scaled(const json& obj, const char* key, double factor) {
  json v = number_or_null(obj, key);
  if (v.is_null()) return nullptr;
  return v.get<double>() * factor;
}

constexpr double kMilli = 1e-3;

// The GPUs the queue fenced, by index.
std::set<int> fenced_gpus(const std::optional<Part>& queue) {
  std::set<int> out;
  if (!queue || !queue->error.empty() || !queue->value.is_object()) return out;
  for (const auto& f : queue->value.value("fences", json::array())) {
    if (f.contains("gpu") && f["gpu"].is_number_integer()) out.insert(f["gpu"].get<int>());
  }
  return out;
}

json gpu_card(const json& g, const std::set<int>& fenced) {
  json card;
  card["index"] = g.value("index", -1);
  card["name"] = g.value("name", "");
  card["uuid"] = g.value("uuid", "");
  card["verdict"] = g.contains("verdict") ? g["verdict"] : json("UNKNOWN");
  card["class"] = verdict_class(g.value("verdict", json()));
  // "ok", "lost", "reset_required", ...: the page shows anything but "ok" in the card's head.
  card["health"] = g.value("health", "unknown");
  card["reason"] = reason_words(g);
  card["utilization_pct"] = number_or_null(g, "utilization_gpu");
  card["memory_used_bytes"] = number_or_null(g, "memory_used");
  card["memory_total_bytes"] = number_or_null(g, "memory_total");
  card["temperature_c"] = number_or_null(g, "temperature");
  card["temperature_slowdown_c"] = number_or_null(g, "temperature_slowdown");
  card["power_w"] = scaled(g, "power_usage_mw", kMilli);
  card["power_limit_w"] = scaled(g, "power_limit_mw", kMilli);
  card["throttle"] = g.value("clock_event_reason_names", json::array());
  card["fenced"] = fenced.contains(card["index"].get<int>());
  return card;
}

json host_summary(const json& h) {
  json out;
  out["verdict"] = h.contains("verdict") ? h["verdict"] : json("UNKNOWN");
  out["class"] = verdict_class(h.value("verdict", json()));
  out["reason"] = reason_words(h);
  const json& sys = h.value("system", json::object());
  out["hostname"] = sys.value("hostname", "");
  out["kernel"] = sys.value("kernel", "");
  out["uptime_s"] = number_or_null(sys, "uptime_s");
  out["cpu_cores"] = number_or_null(h.value("cpu", json::object()), "cores");
  out["load1"] = number_or_null(h.value("load", json::object()), "load1");
  const json& mem = h.value("memory", json::object());
  out["memory_total_bytes"] = number_or_null(mem, "total_bytes");
  out["memory_available_bytes"] = number_or_null(mem, "available_bytes");
  json fss = json::array();
  for (const auto& fs : h.value("filesystems", json::array())) {
    fss.push_back({{"mount_point", fs.value("mount_point", "")},
                   {"used_pct", number_or_null(fs, "used_pct")},
                   {"total_bytes", number_or_null(fs, "total_bytes")}});
  }
  out["filesystems"] = std::move(fss);
  json nics = json::array();
  for (const auto& n : h.value("nics", json::array())) {
    if (n.value("operstate", "") != "up") continue;  // down links carry nothing to chart
    nics.push_back({{"name", n.value("name", "")},
                    {"speed_mbps", number_or_null(n, "speed_mbps")},
                    {"rx_bytes_per_s", number_or_null(n, "rx_bytes_per_s")},
                    {"tx_bytes_per_s", number_or_null(n, "tx_bytes_per_s")},
                    {"util_pct", number_or_null(n, "util_pct")}});
  }
  out["nics"] = std::move(nics);
  return out;
}

// Alerts that need a person: firing, not resolved. Pending ones are counted apart.
json alert_part(const Part& p) {
  if (!p.error.empty()) return {{"error", p.error}};
  json firing = json::array();
  int pending = 0;
  for (const auto& a : p.value.is_array() ? p.value : json::array()) {
    std::string state = a.value("state", "");
    if (state == "pending") ++pending;
    if (state != "firing") continue;
    firing.push_back({{"id", a.value("id", std::int64_t{0})},
                      {"rule", a.value("rule", "")},
                      {"severity", a.value("severity", "")},
                      {"description", a.value("description", "")},
                      {"labels", a.value("labels", json::object())},
                      {"fired", a.value("fired", json())},
                      {"acked", a.value("acked", json())},
                      {"acked_by", a.value("acked_by", json())},
                      {"silenced", a.value("silenced", false)}});
  }
  return {{"firing", std::move(firing)}, {"pending", pending}};
}

// Events and incidents in one list, newest first, at most kTimelineEntries.
json timeline(const Part& events, const Part& incidents, json& errors) {
  json items = json::array();
  if (!events.error.empty()) {
    errors.push_back({{"part", "events"}, {"error", events.error}});
  } else {
    for (const auto& e : events.value.is_array() ? events.value : json::array()) {
      json item{{"type", "event"},
                {"time_ns", e.value("time_ns", std::int64_t{0})},
                {"kind", e.value("kind", "")},
                {"message", e.value("message", "")}};
      if (e.contains("gpu")) item["gpu"] = e["gpu"];
      if (e.contains("xid")) item["xid"] = e["xid"];
      items.push_back(std::move(item));
    }
  }
  if (!incidents.error.empty()) {
    errors.push_back({{"part", "incidents"}, {"error", incidents.error}});
  } else {
    for (const auto& i : incidents.value.is_array() ? incidents.value : json::array()) {
      json item{{"type", "incident"},
                {"time_ns", i.value("started_ns", std::int64_t{0})},
                {"kind", i.value("kind", "")},
                {"message", i.value("evidence", "")},
                {"gpu", i.value("gpu", -1)},
                {"open", !i.contains("ended_ns") || i["ended_ns"].is_null()}};
      if (i.contains("ended_ns") && !i["ended_ns"].is_null()) item["ended_ns"] = i["ended_ns"];
      items.push_back(std::move(item));
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const json& a, const json& b) {
    return a["time_ns"].get<std::int64_t>() > b["time_ns"].get<std::int64_t>();
  });
  if (items.size() > kTimelineEntries) items.erase(items.begin() + kTimelineEntries, items.end());
  for (auto& item : items) item["time"] = format_iso8601(item["time_ns"].get<std::int64_t>());
  return items;
}

}  // namespace

std::string verdict_class(const json& verdict) {
  if (!verdict.is_string()) return "unknown";
  const auto& v = verdict.get_ref<const std::string&>();
  if (v == "OK") return "ok";
  if (v == "WARN") return "warn";
  if (v == "FAIL") return "fail";
  return "unknown";
}

std::string reason_words(const json& item) {
  std::string out;
  for (const auto& r : item.value("reasons", json::array())) {
    std::string text = r.value("text", "");
    if (text.empty()) continue;
    if (!out.empty()) out += "; ";
    out += text;
  }
  if (!out.empty()) return out;
  if (item.value("verdict", "") == "OK") return "healthy";
  std::string detail = item.value("health_detail", "");
  return detail.empty() ? "no reading" : detail;
}

json overview(const OverviewInput& in) {
  json out;
  out["schema"] = "cardiac.dashboard.overview/v1";
  out["hostname"] = in.hostname;
  out["fleet"] = in.fleet;
  out["now"] = format_iso8601(in.now);
  json errors = json::array();

  const json& st = in.status;
  out["verdict"] = st.is_object() && st.contains("verdict") ? st["verdict"] : json("UNKNOWN");
  out["class"] = verdict_class(out["verdict"]);
  out["taken_at"] = st.is_object() ? st.value("taken_at", json()) : json();
  if (!st.is_object() || !st.contains("gpus")) {
    // Before the first sample the status is a placeholder with a message: no card at all
    // would read as a host without GPUs.
    std::string why = st.is_object() ? st.value("message", "") : "";
    errors.push_back({{"part", "status"}, {"error", why.empty() ? "no status" : why}});
  }

  const json& nvml = st.is_object() ? st.value("nvml", json::object()) : json::object();
  json gpu_part;
  if (nvml.contains("available") && !nvml.value("available", true)) {
    gpu_part["error"] = "NVML unavailable (" + nvml.value("error_kind", std::string("error")) +
                        "): " + nvml.value("error", std::string());
    errors.push_back({{"part", "gpus"}, {"error", gpu_part["error"]}});
  }
  gpu_part["device_count"] = number_or_null(nvml, "device_count");
  gpu_part["driver_version"] = nvml.value("driver_version", "");
  std::set<int> fenced = fenced_gpus(in.queue);
  json cards = json::array();
  for (const auto& g : st.is_object() ? st.value("gpus", json::array()) : json::array()) {
    cards.push_back(gpu_card(g, fenced));
  }
  gpu_part["cards"] = std::move(cards);
  out["gpus"] = std::move(gpu_part);

  if (st.is_object() && st.contains("host") && st["host"].is_object()) {
    out["host"] = host_summary(st["host"]);
  } else {
    out["host"] = {{"error", "no host reading"}};
  }

  out["alerts"] = alert_part(in.alerts);
  if (!in.alerts.error.empty()) errors.push_back({{"part", "alerts"}, {"error", in.alerts.error}});
  out["timeline"] = timeline(in.events, in.incidents, errors);

  if (!in.queue) {
    out["queue"] = nullptr;
  } else if (!in.queue->error.empty()) {
    out["queue"] = {{"error", in.queue->error}};
    errors.push_back({{"part", "queue"}, {"error", in.queue->error}});
  } else {
    out["queue"] = in.queue->value;
  }
  out["errors"] = std::move(errors);
  return out;
}

}  // namespace cardiac::dashboard
