// SPDX-License-Identifier: Apache-2.0
// The dashboard's structure as Grafana needs it, and that every query reads only metric
// families the agent exports (native, or its dcgm-exporter names in compat mode).
#include "grafana/dashboard.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "metrics/registry.h"

namespace cardiac::grafana {
namespace {

using nlohmann::json;

json rendered(Naming n, const std::string& datasource = "") {
  Options o;
  o.naming = n;
  o.datasource = datasource;
  return render_dashboard(dashboard(o), o);
}

// Series names a PromQL expression reads: what is left once strings, label matchers, ranges
// and grouping lists are taken out, less functions (followed by '('), keywords and numbers.
std::set<std::string> metric_names(std::string expr) {
  for (const char* strip :
       {R"re("[^"]*")re", R"re(\{[^}]*\})re", R"re(\[[^\]]*\])re",
        R"re(\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))re"}) {
    expr = std::regex_replace(expr, std::regex(strip), " ");
  }
  static const std::regex kName(R"re(([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\(?))re");
  static const std::set<std::string> kKeywords = {"and", "or", "unless", "bool", "offset"};
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kName);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    if ((*it)[2].length() == 0 && !kKeywords.count(name)) out.insert(name);
  }
  return out;
}

// Every series name the agent can export: native families (with a histogram's _bucket, _sum
// and _count) and the dcgm-exporter names.
std::set<std::string> exported(Naming n) {
  std::set<std::string> out = {"up"};  // Prometheus' own, per target
  for (const auto& m : metrics::metric_registry()) {
    if (n == Naming::kDcgm) {
      if (!m.dcgm.name.empty()) out.insert(std::string(m.dcgm.name));
      continue;
    }
    out.insert(std::string(m.name));
    if (m.type == metrics::MetricType::kHistogram) {
      for (const char* s : {"_bucket", "_sum", "_count"}) out.insert(std::string(m.name) + s);
    }
  }
  return out;
}

class BothNamings : public ::testing::TestWithParam<Naming> {};

TEST_P(BothNamings, PanelsHaveUniqueIdsDatasourceAndGridPos) {
  const json d = rendered(GetParam());
  EXPECT_EQ(d["schemaVersion"], 39);
  EXPECT_FALSE(d["uid"].get<std::string>().empty());
  std::set<int> ids;
  // Cells taken, so that no two panels overlap.
  std::set<std::pair<int, int>> cells;
  ASSERT_FALSE(d["panels"].empty());
  for (const auto& p : d["panels"]) {
    const std::string title = p.value("title", "");
    ASSERT_TRUE(p.contains("id")) << title;
    EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << "duplicate id in " << title;
    ASSERT_TRUE(p.contains("gridPos")) << title;
    const auto& g = p["gridPos"];
    EXPECT_GE(g["x"].get<int>(), 0) << title;
    EXPECT_LE(g["x"].get<int>() + g["w"].get<int>(), 24) << title;
    for (int x = g["x"]; x < g["x"].get<int>() + g["w"].get<int>(); ++x) {
      for (int y = g["y"]; y < g["y"].get<int>() + g["h"].get<int>(); ++y) {
        EXPECT_TRUE(cells.insert({x, y}).second) << title << " overlaps at " << x << "," << y;
      }
    }
    if (p["type"] == "row") continue;
    EXPECT_EQ(p["datasource"]["type"], "prometheus") << title;
    EXPECT_EQ(p["datasource"]["uid"], "${datasource}") << title;
    ASSERT_FALSE(p["targets"].empty()) << title;
    std::set<std::string> refs;
    for (const auto& t : p["targets"]) {
      EXPECT_TRUE(refs.insert(t["refId"].get<std::string>()).second) << title;
      EXPECT_EQ(t["datasource"], p["datasource"]) << title;
      EXPECT_FALSE(t["expr"].get<std::string>().empty()) << title;
    }
  }
}

TEST_P(BothNamings, QueriesReadOnlyExportedFamilies) {
  const std::set<std::string> names = exported(GetParam());
  const json d = rendered(GetParam());
  for (const auto& p : d["panels"]) {
    for (const auto& t : p.value("targets", json::array())) {
      const std::string expr = t["expr"];
      const auto used = metric_names(expr);
      EXPECT_FALSE(used.empty()) << p["title"] << ": " << expr;
      for (const auto& n : used) {
        EXPECT_TRUE(names.count(n)) << p["title"] << " reads " << n << ", not exported";
      }
    }
  }
}

TEST_P(BothNamings, VariablesAreLabelValuesOfExportedSeries) {
  const std::set<std::string> names = exported(GetParam());
  const json d = rendered(GetParam());
  std::set<std::string> vars;
  for (const auto& v : d["templating"]["list"]) vars.insert(v["name"].get<std::string>());
  EXPECT_EQ(vars, (std::set<std::string>{"datasource", "instance", "gpu"}));
  for (const auto& v : d["templating"]["list"]) {
    if (v["type"] == "datasource") {
      EXPECT_EQ(v["query"], "prometheus");
      continue;
    }
    std::string selector, label;
    ASSERT_TRUE(parse_label_values(v["definition"], &selector, &label)) << v["definition"];
    EXPECT_EQ(label, v["name"].get<std::string>());
    const auto used = metric_names(selector);
    EXPECT_EQ(used.size(), 1u) << selector;
    for (const auto& n : used) EXPECT_TRUE(names.count(n)) << n;
  }
  // Every $variable a query uses is defined (or one of Grafana's own).
  static const std::regex kVar(R"(\$([a-zA-Z_]+))");
  for (const auto& p : d["panels"]) {
    for (const auto& t : p.value("targets", json::array())) {
      const std::string expr = t["expr"];
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kVar);
           it != std::sregex_iterator(); ++it) {
        const std::string v = (*it)[1];
        EXPECT_TRUE(vars.count(v) || v == "__rate_interval" || v == "__range")
            << p["title"] << " uses $" << v;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Grafana, BothNamings, ::testing::Values(Naming::kNative, Naming::kDcgm));

TEST(Grafana, NativeDashboardHasEveryRowAndLeavesNothingOut) {
  Options o;
  const Dashboard d = dashboard(o);
  EXPECT_TRUE(d.left_out.empty());
  std::vector<std::string> rows;
  for (const auto& r : d.rows) rows.push_back(r.title);
  EXPECT_EQ(rows, (std::vector<std::string>{"Fleet overview", "GPUs of the selected nodes",
                                            "Xids and faults", "Throttling", "Job queue"}));
}

TEST(Grafana, DcgmDashboardLeavesOutCardiacOnlyPanelsAndSaysWhy) {
  Options o;
  o.naming = Naming::kDcgm;
  const Dashboard d = dashboard(o);
  ASSERT_FALSE(d.left_out.empty());
  bool queue = false;
  for (const auto& s : d.left_out) {
    EXPECT_NE(s.find(": "), std::string::npos) << s;
    queue = queue || s.rfind("Job queue / ", 0) == 0;
  }
  EXPECT_TRUE(queue);
  for (const auto& r : d.rows) EXPECT_NE(r.title, "Job queue");
}

TEST(Grafana, FixedDatasourceReplacesTheVariable) {
  const json d = rendered(Naming::kNative, "prom-main");
  for (const auto& v : d["templating"]["list"]) EXPECT_NE(v["name"], "datasource");
  for (const auto& p : d["panels"]) {
    if (p["type"] != "row") {
      EXPECT_EQ(p["datasource"]["uid"], "prom-main");
    }
  }
}

TEST(Grafana, JobNameReachesTheQueries) {
  Options o;
  o.job = "gpu-agents";
  const json d = render_dashboard(dashboard(o), o);
  EXPECT_NE(d.dump().find(R"(up{job=\"gpu-agents\"})"), std::string::npos);
  EXPECT_EQ(d.dump().find(R"(job=\"cardiac\")"), std::string::npos);
}

TEST(Grafana, ParsesLabelValues) {
  std::string s, l;
  EXPECT_TRUE(parse_label_values("label_values(up{job=\"x\"}, instance)", &s, &l));
  EXPECT_EQ(s, "up{job=\"x\"}");
  EXPECT_EQ(l, "instance");
  EXPECT_FALSE(parse_label_values("query_result(up)", &s, &l));
  EXPECT_FALSE(parse_label_values("label_values(up)", &s, &l));
}

}  // namespace
}  // namespace cardiac::grafana
