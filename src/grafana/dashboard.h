// SPDX-License-Identifier: Apache-2.0
// cardiac's Grafana dashboard: one structured description (rows of panels, each with its PromQL
// targets, and the template variables) that `cardiac export grafana-dashboard` renders as
// Grafana JSON and that tests iterate to run every query against a real Prometheus.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cardiac::grafana {

// Which metric names the queries read: cardiac's own families, or dcgm-exporter's names (what
// an agent with `metrics_compat = "dcgm"` also exports, and dcgm-exporter itself).
enum class Naming { kNative, kDcgm };

enum class PanelType { kTimeseries, kStat, kTable, kStateTimeline, kBarGauge };

struct Target {
  std::string expr;
  std::string legend;    // Grafana's legendFormat ("{{instance}} GPU {{gpu}}")
  bool instant = false;  // one value per series (tables, stats), not a range
};

struct Panel {
  std::string title;
  std::string description;
  PanelType type = PanelType::kTimeseries;
  std::string unit;  // Grafana unit id: "percentunit", "bytes", "celsius", "watt", "hertz"...
  int width = 12;    // of Grafana's 24 columns
  int height = 8;
  bool health_mapping = false;  // 0 OK, 1 WARN, 2 FAIL as green/yellow/red text
  bool up_mapping = false;      // 1 up, 0 down/lost
  std::vector<Target> targets;
};

struct Row {
  std::string title;
  std::vector<Panel> panels;
};

// A query variable: Grafana fills it from `label_values(...)`; multi-select with "All".
struct Variable {
  std::string name;
  std::string label;
  std::string query;  // label_values(SELECTOR, LABEL)
};

struct Options {
  Naming naming = Naming::kNative;
  // Grafana data source UID; empty: a `datasource` variable (type prometheus) that the user
  // picks, so the same file works through the UI's Import and through provisioning.
  std::string datasource;
  std::string job = "cardiac";  // Prometheus job that scrapes the agents
  std::string title = "cardiac: GPU fleet";
  std::string uid = "cardiac-gpu-fleet";
};

struct Dashboard {
  std::vector<Variable> variables;
  std::vector<Row> rows;
  // Panels of the native dashboard that have no counterpart under the chosen naming, as
  // "<row> / <panel>: <reason>".
  std::vector<std::string> left_out;
};

// The panels and variables for `o` (naming and job decide the queries).
Dashboard dashboard(const Options& o);

// Grafana's dashboard JSON (schemaVersion of Grafana 11): rows and panels with unique ids and
// grid positions, the template variables, every panel and target on the data source.
nlohmann::json render_dashboard(const Dashboard& d, const Options& o);

// The `label_values(SELECTOR, LABEL)` parts of a variable query; false when it is not one.
bool parse_label_values(const std::string& query, std::string* selector, std::string* label);

}  // namespace cardiac::grafana
