// SPDX-License-Identifier: Apache-2.0
// Grafana's dashboard JSON from the structured description: layout, ids, data source,
// template variables and the per-type panel options Grafana 11 writes itself.
#include <regex>

#include "grafana/dashboard.h"

namespace cardiac::grafana {
namespace {

using nlohmann::json;

// Grafana 11.0's dashboard schema version; older versions import it too and migrate forward.
constexpr int kSchemaVersion = 39;
constexpr int kColumns = 24;

const char* type_name(PanelType t) {
  switch (t) {
    case PanelType::kTimeseries:
      return "timeseries";
    case PanelType::kStat:
      return "stat";
    case PanelType::kTable:
      return "table";
    case PanelType::kStateTimeline:
      return "state-timeline";
    case PanelType::kBarGauge:
      return "bargauge";
  }
  return "timeseries";
}

json datasource(const Options& o) {
  return {{"type", "prometheus"}, {"uid", o.datasource.empty() ? "${datasource}" : o.datasource}};
}

json value_text(const std::string& text, const std::string& color, int index) {
  return {{"text", text}, {"color", color}, {"index", index}};
}

json mappings(const Panel& p) {
  json m = json::array();
  if (p.health_mapping) {
    m.push_back({{"type", "value"},
                 {"options",
                  {{"0", value_text("OK", "green", 0)},
                   {"1", value_text("WARN", "yellow", 1)},
                   {"2", value_text("FAIL", "red", 2)}}}});
  }
  if (p.up_mapping) {
    m.push_back(
        {{"type", "value"},
         {"options", {{"0", value_text("lost", "red", 0)}, {"1", value_text("up", "green", 1)}}}});
  }
  return m;
}

json thresholds(const Panel& p) {
  json steps = json::array({{{"color", "green"}, {"value", nullptr}}});
  if (p.health_mapping) {
    steps.push_back({{"color", "yellow"}, {"value", 1}});
    steps.push_back({{"color", "red"}, {"value", 2}});
  } else if (p.up_mapping) {
    steps =
        json::array({{{"color", "red"}, {"value", nullptr}}, {{"color", "green"}, {"value", 1}}});
  }
  return {{"mode", "absolute"}, {"steps", steps}};
}

json options(const Panel& p) {
  switch (p.type) {
    case PanelType::kStat:
      return {{"reduceOptions", {{"calcs", {"lastNotNull"}}, {"fields", ""}, {"values", false}}},
              {"colorMode", "value"},
              {"graphMode", "none"},
              {"textMode", "auto"}};
    case PanelType::kTable:
      return {{"showHeader", true}, {"cellHeight", "sm"}};
    case PanelType::kStateTimeline:
      return {{"showValue", "auto"},
              {"mergeValues", true},
              {"rowHeight", 0.9},
              {"legend", {{"showLegend", false}}}};
    case PanelType::kBarGauge:
      return {{"displayMode", "basic"}, {"orientation", "horizontal"}};
    case PanelType::kTimeseries:
      break;
  }
  return {{"legend", {{"displayMode", "list"}, {"placement", "bottom"}, {"showLegend", true}}},
          {"tooltip", {{"mode", "multi"}, {"sort", "desc"}}}};
}

json target(const Target& t, const Panel& p, const Options& o, int index) {
  json j = {{"refId", std::string(1, static_cast<char>('A' + index))},
            {"datasource", datasource(o)},
            {"editorMode", "code"},
            {"expr", t.expr},
            {"legendFormat", t.legend.empty() ? "__auto" : t.legend},
            {"range", !t.instant},
            {"instant", t.instant}};
  // A table shows one row per series with its labels as columns.
  if (p.type == PanelType::kTable) j["format"] = "table";
  return j;
}

json variable(const Variable& v, const Options& o) {
  return {{"name", v.name},
          {"label", v.label},
          {"type", "query"},
          {"datasource", datasource(o)},
          {"definition", v.query},
          {"query", {{"query", v.query}, {"refId", "PrometheusVariableQueryEditor-VariableQuery"}}},
          {"refresh", 2},  // on time range change: nodes come and go
          {"multi", true},
          {"includeAll", true},
          {"current", {{"selected", true}, {"text", {"All"}}, {"value", {"$__all"}}}},
          {"sort", 3},  // numerical ascending: GPU 2 before GPU 10
          {"hide", 0},
          {"options", json::array()}};
}

}  // namespace

bool parse_label_values(const std::string& query, std::string* selector, std::string* label) {
  static const std::regex kForm(R"(^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$)");
  std::smatch m;
  if (!std::regex_match(query, m, kForm)) return false;
  *selector = m[1];
  *label = m[2];
  return true;
}

json render_dashboard(const Dashboard& d, const Options& o) {
  json panels = json::array();
  int id = 1;
  int y = 0;
  for (const auto& row : d.rows) {
    panels.push_back({{"id", id++},
                      {"type", "row"},
                      {"title", row.title},
                      {"collapsed", false},
                      {"gridPos", {{"h", 1}, {"w", kColumns}, {"x", 0}, {"y", y}}},
                      {"panels", json::array()}});
    y += 1;
    // Left to right, wrapping at 24 columns; a line is as tall as its tallest panel.
    int x = 0;
    int line_height = 0;
    for (const auto& p : row.panels) {
      const int w = std::min(p.width, kColumns);
      if (x + w > kColumns) {
        y += line_height;
        x = 0;
        line_height = 0;
      }
      json targets = json::array();
      for (std::size_t i = 0; i < p.targets.size(); ++i) {
        targets.push_back(target(p.targets[i], p, o, static_cast<int>(i)));
      }
      panels.push_back(
          {{"id", id++},
           {"type", type_name(p.type)},
           {"title", p.title},
           {"description", p.description},
           {"datasource", datasource(o)},
           {"gridPos", {{"h", p.height}, {"w", w}, {"x", x}, {"y", y}}},
           {"fieldConfig",
            {{"defaults",
              {{"unit", p.unit.empty() ? "none" : p.unit},
               {"mappings", mappings(p)},
               {"thresholds", thresholds(p)},
               {"color",
                {{"mode", p.health_mapping || p.up_mapping || p.type == PanelType::kStat
                              ? "thresholds"
                              : "palette-classic"}}}}},
             {"overrides", json::array()}}},
           {"options", options(p)},
           {"targets", targets}});
      x += w;
      line_height = std::max(line_height, p.height);
    }
    y += line_height;
  }

  json vars = json::array();
  if (o.datasource.empty()) {
    vars.push_back({{"name", "datasource"},
                    {"label", "Data source"},
                    {"type", "datasource"},
                    {"query", "prometheus"},
                    {"current", json::object()},
                    {"hide", 0},
                    {"refresh", 1},
                    {"options", json::array()}});
  }
  for (const auto& v : d.variables) vars.push_back(variable(v, o));

  return {{"title", o.title},
          {"uid", o.uid},
          {"description",
           o.naming == Naming::kDcgm
               ? "GPU fleet over dcgm-exporter's metric names (cardiac agents with "
                 "metrics_compat = \"dcgm\", or dcgm-exporter). Generated by `cardiac export "
                 "grafana-dashboard --compat dcgm`."
               : "GPU fleet health, per-node GPUs, Xids and faults, throttling and the job "
                 "queue from cardiac agents. Generated by `cardiac export grafana-dashboard`."},
          {"tags", {"cardiac", "gpu", "nvidia"}},
          {"editable", true},
          {"graphTooltip", 1},
          {"schemaVersion", kSchemaVersion},
          {"version", 1},
          {"refresh", "30s"},
          {"time", {{"from", "now-6h"}, {"to", "now"}}},
          {"timezone", "browser"},
          {"templating", {{"list", vars}}},
          {"annotations", {{"list", json::array()}}},
          {"links", json::array()},
          {"panels", panels}};
}

}  // namespace cardiac::grafana
