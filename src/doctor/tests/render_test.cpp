// SPDX-License-Identifier: Apache-2.0
// The doctor renderers: the JSON contract (docs/doctor.md), text, markdown, HTML and charts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>

#include "core/strings.h"
#include "doctor/render/charts.h"
#include "doctor/render/render.h"

namespace cardiac::doctor {
namespace {

using nlohmann::json;

constexpr TimeNs kT0 = 1'764'695'259'945'000'000;  // 2025-12-02T17:07:39.945Z
constexpr const char* kXidLine =
    "[Tue Dec  2 17:07:40 2025] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has "
    "fallen off the bus.";

Finding fell_off_bus() {
  Finding f;
  f.id = "xid.79";
  f.category = Category::kHardware;
  f.severity = Severity::kCritical;
  f.confidence = Confidence::kHigh;
  f.gpu.index = 3;
  f.gpu.pci_bus_id = "00000000:3B:00.0";  // NVML's form; the contract wants the short one
  f.gpu.uuid = "GPU-2b7f0000-1111-2222-3333-444455556666";
  f.gpu.name = "NVIDIA H100 80GB HBM3";
  f.title = "GPU 3 fell off the bus (Xid 79)";
  f.explanation = "The driver lost contact with the card.";
  Evidence log;
  log.kind = "log";
  log.text = kXidLine;
  log.time = kT0 + kNsPerSec;
  log.source = "kmsg:/var/log/kern.log:1234";
  f.evidence.push_back(log);
  f.actions = {"Drain the node", "Reset the GPU with nvidia-smi -r -i 3", "Reseat the card"};
  CrossCheckPlan plan;
  plan.steps = {"Swap the card with one from a healthy server", "Run a burn-in on both"};
  plan.outcomes = {
      {"the fault follows the card", "the card is faulty: RMA it"},
      {"the fault stays with the slot", "the server (riser, slot, power) is at fault"}};
  plan.physical_checks = {"Both 12V-2x6 power cables seated"};
  plan.environment = "16–25 °C inlet for air cooling";
  f.cross_check = plan;
  return f;
}

Finding slow_loader() {
  Finding f;
  f.id = "resources.data_loading";
  f.category = Category::kResources;
  f.severity = Severity::kWarning;
  f.confidence = Confidence::kLow;
  f.gpu.index = 0;
  f.title = "GPU 0 waits for data";
  f.explanation = "Utilization swings between idle and busy while one loader thread is at 100%.";
  Evidence util;
  util.kind = "reading";
  util.text = "utilization swings 2–97 %";
  util.source = "nvml";
  util.metric = "utilization_gpu";
  util.unit = "%";
  for (int i = 0; i < 10; ++i) {
    util.series.emplace_back(kT0 + i * kNsPerSec, i % 2 == 0 ? 2.0 : 97.0);
  }
  util.threshold = 90;
  f.evidence.push_back(util);
  f.actions = {"Raise num_workers", "Pin memory"};
  return f;
}

Finding host_note() {
  Finding f;
  f.id = "network.none";
  f.category = Category::kNetwork;
  f.severity = Severity::kInfo;
  f.title = "No network targets configured";
  return f;
}

kmsg::KernelEvent xid_event() {
  kmsg::KernelEvent e;
  e.kind = kmsg::EventKind::kXid;
  e.xid = 79;
  e.pci_bus_id = "0000:3b:00";  // the Xid line's form, without the function
  e.pid = 1234;
  e.process = "python";
  e.message = "GPU has fallen off the bus.";
  e.time_ns = kT0 + kNsPerSec;
  e.raw = kXidLine;
  return e;
}

kmsg::KernelEvent aer_event() {
  kmsg::KernelEvent e;
  e.kind = kmsg::EventKind::kAer;
  e.xid = 5;  // a stray value must not be written as an Xid
  e.pci_bus_id = "0000:3b:00.0";
  e.aer_severity = kmsg::AerSeverity::kCorrected;
  e.reporter = "0000:00:03.1";
  e.raw = "pcieport 0000:00:03.1: AER: Corrected error received: 0000:3b:00.0";
  return e;
}

Report full_report() {
  Report r;
  r.generated_at = kT0;
  r.hostname = "gpu-node-01";
  r.sources.kmsg = "/var/log/kern.log";
  r.sources.window = 10 * kNsPerSec;
  r.sources.gpu_samples = 10;
  r.sources.host_samples = 10;
  r.sources.skipped = {"network: no targets and no default gateway"};
  GpuRef g0;
  g0.index = 0;
  g0.pci_bus_id = "0000:18:00.0";
  g0.name = "NVIDIA H100 80GB HBM3";
  r.gpus.push_back(g0);
  r.gpus.push_back(fell_off_bus().gpu);
  r.findings = {fell_off_bus(), slow_loader(), host_note()};
  r.events = {xid_event(), aer_event()};
  return r;
}

Report quiet_report() {
  Report r = full_report();
  r.findings = {host_note()};
  r.events.clear();
  return r;
}

bool is_iso(const json& j) {
  static const std::regex kIso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  return j.is_string() && std::regex_match(j.get<std::string>(), kIso);
}

// Keys whose value is "" anywhere in `j`; the contract allows "" only for required text.
void collect_empty_keys(const json& j, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (v == "") out.push_back(k);
      collect_empty_keys(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collect_empty_keys(v, out);
  }
}

// ---- JSON ----------------------------------------------------------------------------------

TEST(DoctorJson, TopLevelAndSources) {
  json j = to_json(full_report());
  EXPECT_EQ(j["schema"], "cardiac.doctor/v1");
  EXPECT_EQ(j["generated_at"], "2025-12-02T17:07:39.945Z");
  EXPECT_EQ(j["hostname"], "gpu-node-01");
  const json& s = j["sources"];
  EXPECT_EQ(s["live"], true);
  EXPECT_EQ(s["root"], "/");
  EXPECT_EQ(s["kmsg"], "/var/log/kern.log");
  EXPECT_TRUE(s["db"].is_null());  // no store: null, not ""
  EXPECT_DOUBLE_EQ(s["window_s"].get<double>(), 10.0);
  EXPECT_EQ(s["gpu_samples"], 10);
  EXPECT_EQ(s["host_samples"], 10);
  EXPECT_EQ(s["skipped"], json::array({"network: no targets and no default gateway"}));
  for (const char* k : {"gpus", "findings", "events"}) EXPECT_TRUE(j[k].is_array()) << k;
}

TEST(DoctorJson, SummaryCountsPerSeverityAndCategory) {
  json s = to_json(full_report())["summary"];
  EXPECT_EQ(s["worst"], "critical");
  EXPECT_EQ(s["findings"], 3);
  EXPECT_EQ(s["problems"], 2);
  EXPECT_EQ(s["by_severity"], (json{{"info", 1}, {"warning", 1}, {"critical", 1}}));
  EXPECT_EQ(s["by_category"], (json{{"hardware", 1},
                                    {"driver", 0},
                                    {"resources", 1},
                                    {"network", 1},
                                    {"configuration", 0},
                                    {"security", 0}}));
  EXPECT_EQ(s["events"], 2);
  EXPECT_EQ(to_json(Report{})["summary"]["worst"], "info");
}

TEST(DoctorJson, GpusNormaliseBusIdAndUseNullForAbsent) {
  json g = to_json(full_report())["gpus"];
  ASSERT_EQ(g.size(), 2U);
  EXPECT_EQ(g[0]["index"], 0);
  EXPECT_TRUE(g[0]["uuid"].is_null());
  EXPECT_TRUE(g[0]["serial"].is_null());
  EXPECT_EQ(g[1]["pci_bus_id"], "0000:3b:00.0");
  Report r;
  GpuRef only_bus;
  only_bus.pci_bus_id = "0000:5d:00.0";
  r.gpus.push_back(only_bus);
  EXPECT_TRUE(to_json(r)["gpus"][0]["index"].is_null());  // unknown index is null, not 0
}

TEST(DoctorJson, FindingFields) {
  json f = to_json(full_report())["findings"][0];
  EXPECT_EQ(f["id"], "xid.79");
  EXPECT_EQ(f["category"], "hardware");
  EXPECT_EQ(f["severity"], "critical");
  EXPECT_EQ(f["confidence"], "high");
  EXPECT_EQ(f["gpu"]["index"], 3);
  EXPECT_EQ(f["gpu"]["pci_bus_id"], "0000:3b:00.0");
  EXPECT_EQ(f["gpu"]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(f["gpu"]["serial"].is_null());
  EXPECT_EQ(f["title"], "GPU 3 fell off the bus (Xid 79)");
  EXPECT_EQ(f["actions"], json::array({"Drain the node", "Reset the GPU with nvidia-smi -r -i 3",
                                       "Reseat the card"}));
  const json& cc = f["cross_check"];
  EXPECT_EQ(cc["steps"].size(), 2U);
  EXPECT_EQ(cc["outcomes"][0]["observation"], "the fault follows the card");
  EXPECT_EQ(cc["outcomes"][1]["meaning"], "the server (riser, slot, power) is at fault");
  EXPECT_EQ(cc["physical_checks"][0], "Both 12V-2x6 power cables seated");
  EXPECT_EQ(cc["environment"], "16–25 °C inlet for air cooling");
  json info = to_json(full_report())["findings"][2];
  EXPECT_TRUE(info["gpu"].is_null());  // host-wide finding
  EXPECT_TRUE(info["cross_check"].is_null());
  EXPECT_EQ(info["evidence"], json::array());
  EXPECT_EQ(info["actions"], json::array());
}

TEST(DoctorJson, EvidenceWithAndWithoutSeries) {
  json j = to_json(full_report());
  json log = j["findings"][0]["evidence"][0];
  EXPECT_EQ(log["kind"], "log");
  EXPECT_EQ(log["text"], kXidLine);
  EXPECT_TRUE(is_iso(log["time"]));
  EXPECT_EQ(log["source"], "kmsg:/var/log/kern.log:1234");
  EXPECT_TRUE(log["metric"].is_null());
  EXPECT_TRUE(log["unit"].is_null());
  EXPECT_TRUE(log["threshold"].is_null());
  EXPECT_EQ(log["series"], json::array());
  json util = j["findings"][1]["evidence"][0];
  EXPECT_TRUE(util["time"].is_null());
  EXPECT_EQ(util["metric"], "utilization_gpu");
  EXPECT_EQ(util["unit"], "%");
  EXPECT_EQ(util["threshold"], 90.0);
  ASSERT_EQ(util["series"].size(), 10U);
  EXPECT_EQ(util["series"][0][0], "2025-12-02T17:07:39.945Z");
  EXPECT_EQ(util["series"][1][1], 97.0);
}

TEST(DoctorJson, EventsContract) {
  json ev = to_json(full_report())["events"];
  ASSERT_EQ(ev.size(), 2U);
  EXPECT_EQ(ev[0]["kind"], "xid");
  EXPECT_TRUE(ev[0]["xid"].is_number_integer());
  EXPECT_EQ(ev[0]["xid"], 79);
  EXPECT_EQ(ev[0]["pci_bus_id"], "0000:3b:00.0");
  EXPECT_EQ(ev[0]["pid"], 1234);
  EXPECT_EQ(ev[0]["process"], "python");
  EXPECT_EQ(ev[0]["time"], "2025-12-02T17:07:40.945Z");
  EXPECT_EQ(ev[0]["raw"], kXidLine);
  for (const char* k : {"severity", "uuid", "serial", "gpu_instance", "compute_instance",
                        "reporter", "monotonic_us"}) {
    EXPECT_TRUE(ev[0].contains(k) && ev[0][k].is_null()) << k;
  }
  EXPECT_EQ(ev[1]["kind"], "aer");
  EXPECT_TRUE(ev[1]["xid"].is_null());
  EXPECT_TRUE(ev[1]["time"].is_null());
  EXPECT_TRUE(ev[1]["pid"].is_null());
  EXPECT_EQ(ev[1]["severity"], "corrected");
  EXPECT_EQ(ev[1]["reporter"], "0000:00:03.1");

  kmsg::KernelEvent mig = xid_event();
  mig.gpu_instance = 5;
  mig.compute_instance = 1;
  mig.pci_bus_id = "not a bus";
  json m = event_to_json(mig);
  EXPECT_EQ(m["gpu_instance"], 5);
  EXPECT_EQ(m["compute_instance"], 1);
  EXPECT_TRUE(m["pci_bus_id"].is_null());
  kmsg::KernelEvent sxid;
  sxid.kind = kmsg::EventKind::kSxid;
  sxid.xid = 12028;
  EXPECT_EQ(event_to_json(sxid)["xid"], 12028);
}

TEST(DoctorJson, NoEmptyStringsForAbsentValues) {
  Report r;
  r.sources.root = "/";
  Finding f;
  f.id = "x";
  f.title = "t";
  f.gpu.index = 1;
  f.evidence.emplace_back();
  f.cross_check = CrossCheckPlan{};
  r.findings.push_back(f);
  r.gpus.push_back(f.gpu);
  kmsg::KernelEvent e;
  e.kind = kmsg::EventKind::kHungTask;
  r.events.push_back(e);
  std::vector<std::string> empty;
  collect_empty_keys(to_json(r), empty);
  std::sort(empty.begin(), empty.end());
  // Required text stays a string even when a check left it empty; everything else is null.
  EXPECT_EQ(empty, (std::vector<std::string>{"explanation", "kind", "text"})) << to_json(r).dump(1);
}

TEST(DoctorJson, InvalidUtf8InLogsStillDumps) {
  Report r = full_report();
  r.events[0].raw = "NVRM: Xid \xff\xfe broken";
  r.findings[0].evidence[0].text = "bad \xc3 byte";
  std::string out;
  ASSERT_NO_THROW(out = to_json(r).dump());
  EXPECT_NE(out.find("NVRM: Xid \xEF\xBF\xBD\xEF\xBF\xBD broken"), std::string::npos);
  EXPECT_TRUE(json::accept(out));
}

// ---- text ----------------------------------------------------------------------------------

TEST(DoctorText, TitlesActionsAndStepsInOrder) {
  std::string t = render_text(full_report(), false);
  std::size_t pos = 0;
  for (const char* s :
       {"gpu-node-01", "Hardware", "[CRITICAL] GPU 3 (0000:3b:00.0): GPU 3 fell", kXidLine,
        "1. Drain the node", "2. Reset the GPU", "3. Reseat the card",
        "Cross-check:", "1. Swap the card", "If the fault follows the card: the card is faulty",
        "Resources", "[WARNING]", "GPU 0 waits for data", "1. Raise num_workers", "2. Pin memory",
        "Confidence: low", "Network", "[INFO]", "Summary: 1 critical, 1 warning, 1 info"}) {
    auto at = t.find(s, pos);
    ASSERT_NE(at, std::string::npos) << "missing or out of order: " << s << "\n" << t;
    pos = at;
  }
  EXPECT_EQ(t.find("No problems found"), std::string::npos);
  EXPECT_EQ(t.find('\033'), std::string::npos);  // no colour asked for
  EXPECT_NE(t.find("utilization_gpu: 2–97 % over 10 points, threshold 90 %"), std::string::npos);
}

TEST(DoctorText, CategoryWithWorstFindingComesFirst) {
  Report r;
  Finding net = host_note();
  net.severity = Severity::kCritical;
  Finding hw = slow_loader();
  hw.category = Category::kHardware;
  r.findings = {net, hw};
  std::string t = render_text(r, false);
  ASSERT_NE(t.find("Network"), std::string::npos);
  ASSERT_NE(t.find("Hardware"), std::string::npos);
  EXPECT_LT(t.find("Network"), t.find("Hardware"));
}

TEST(DoctorText, NoProblemsListsWhatWasCheckedAndSkipped) {
  std::string t = render_text(quiet_report(), false);
  EXPECT_NE(t.find("No problems found in what was looked at"), std::string::npos) << t;
  EXPECT_NE(t.find("kernel log: /var/log/kern.log"), std::string::npos) << t;
  EXPECT_NE(t.find("skipped: network: no targets and no default gateway"), std::string::npos);
  EXPECT_NE(t.find("samples: 10 GPU, 10 host over 10.0 s"), std::string::npos) << t;
  EXPECT_NE(t.find("No network targets configured"), std::string::npos);  // the info note
  EXPECT_EQ(t.find("Summary: no problems"), t.rfind("Summary:"));
}

TEST(DoctorText, ColourOnlyWhenAsked) {
  EXPECT_NE(render_text(full_report(), true).find("\033[31;1m[CRITICAL]"), std::string::npos);
}

TEST(DoctorText, WrapsProseAndCapsEvidence) {
  Report r;
  Finding f = slow_loader();
  f.explanation.clear();
  for (int i = 0; i < 60; ++i) f.explanation += "word" + std::to_string(i) + " ";
  for (int i = 0; i < 7; ++i) f.evidence.push_back(f.evidence.front());
  f.actions = {""};
  for (int i = 0; i < 40; ++i) f.actions[0] += "step" + std::to_string(i) + " ";
  r.findings.push_back(f);
  std::string t = render_text(r, false);
  for (auto line : split_lines(t)) EXPECT_LE(line.size(), 100U) << line;
  EXPECT_NE(t.find("word0 word1"), std::string::npos);
  EXPECT_NE(t.find("    1. step0 step1"), std::string::npos);
  EXPECT_NE(t.find("\n       step"), std::string::npos) << t;  // hangs under the text, not "1."
  EXPECT_NE(t.find("… 3 more"), std::string::npos) << t;
}

TEST(DoctorText, LogControlCharactersCannotReachTheTerminal) {
  Report r = full_report();
  r.findings[0].evidence[0].text = "NVRM: evil \033[2J\033]0;title\007 line";
  r.findings[0].title = "title \033[31m";
  std::string t = render_text(r, false);
  EXPECT_EQ(t.find('\033'), std::string::npos);
  EXPECT_EQ(t.find('\007'), std::string::npos);
  EXPECT_NE(t.find("NVRM: evil"), std::string::npos);
}

// ---- markdown ------------------------------------------------------------------------------

TEST(DoctorMarkdown, HeadingsTablesAndFencedLogLines) {
  std::string m = render_markdown(full_report());
  std::size_t pos = 0;
  for (const char* s : {"# cardiac doctor: gpu-node-01\n", "## GPUs\n",
                        "| GPU | PCI bus id | Name | UUID | Serial |", "## Findings\n",
                        "### Hardware\n", "#### CRITICAL · GPU 3", "**Evidence**",
                        "  ```\n  [Tue Dec  2 17:07:40 2025] NVRM: Xid (PCI:0000:3b:00): 79",
                        "**Next steps**\n\n1. Drain the node\n2. Reset", "**Cross-check**",
                        "| If you see | it means |", "### Resources\n", "> Confidence is low",
                        "### Network\n", "## Kernel events\n", "| Time | Kind | Xid |"}) {
    auto at = m.find(s, pos);
    ASSERT_NE(at, std::string::npos) << "missing or out of order: " << s << "\n" << m;
    pos = at;
  }
  EXPECT_NE(m.find("| 0 | 0000:18:00.0 | NVIDIA H100 80GB HBM3 | — | — |"), std::string::npos);
  EXPECT_NE(m.find("| 3 | 0000:3b:00.0 |"), std::string::npos);    // NVML's form, normalised
  EXPECT_NE(m.find("1. Raise num_workers\n"), std::string::npos);  // intraword _ left alone
}

TEST(DoctorMarkdown, DataCannotBecomeMarkup) {
  Report r = full_report();
  r.findings[0].title = "bad <b>title</b> | *x* _y_";
  r.findings[0].evidence[0].text = "line with ``` fence";
  std::string m = render_markdown(r);
  EXPECT_NE(m.find("bad \\<b\\>title\\</b\\> \\| \\*x\\* \\_y\\_"), std::string::npos) << m;
  EXPECT_NE(m.find("  ````\n  line with ``` fence\n  ````\n"), std::string::npos) << m;
}

TEST(DoctorMarkdown, NoProblems) {
  std::string m = render_markdown(quiet_report());
  EXPECT_NE(m.find("**No problems found.**"), std::string::npos);
  EXPECT_NE(m.find("- skipped: network: no targets and no default gateway"), std::string::npos);
  EXPECT_EQ(m.find("## Kernel events"), std::string::npos);
}

// ---- HTML and charts -----------------------------------------------------------------------

void expect_self_contained(const std::string& h) {
  for (const char* bad : {"http://", "https://", "src=", "<script", "<link", "@import", "url("}) {
    EXPECT_EQ(h.find(bad), std::string::npos) << bad;
  }
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0U);
  EXPECT_NE(h.find("<style>"), std::string::npos);
  EXPECT_NE(h.find("</html>"), std::string::npos);
}

TEST(DoctorHtml, SelfContainedWithCardsChartsAndTimeline) {
  std::string h = render_html(full_report());
  expect_self_contained(h);
  EXPECT_NE(h.find("class=\"card sev-critical\""), std::string::npos);
  EXPECT_NE(h.find("class=\"card sev-warning\""), std::string::npos);
  EXPECT_NE(h.find("<li>Drain the node</li>\n<li>Reset the GPU"), std::string::npos);
  EXPECT_NE(h.find("<td>3</td><td><code>0000:3b:00.0</code>"), std::string::npos);
  EXPECT_NE(h.find("<svg class=\"chart\""), std::string::npos);     // the utilization series
  EXPECT_NE(h.find("<svg class=\"timeline\""), std::string::npos);  // the Xid has a time
  EXPECT_NE(h.find("stroke-dasharray"), std::string::npos);         // threshold 90 %
}

TEST(DoctorHtml, HostileLogLineIsText) {
  Report r = full_report();
  const char* evil = "NVRM: <script>alert('x')</script> & <img onerror=x>";
  r.findings[0].evidence[0].text = evil;
  r.events[0].raw = evil;
  r.hostname = "<b>host</b>";
  std::string h = render_html(r);
  expect_self_contained(h);
  EXPECT_EQ(h.find("<img"), std::string::npos);
  EXPECT_EQ(h.find("<b>host"), std::string::npos);
  EXPECT_NE(h.find("NVRM: &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;img"),
            std::string::npos);
}

TEST(DoctorHtml, NoSvgWithoutSeriesOrTimedEvents) {
  Report r = full_report();
  r.findings.erase(r.findings.begin() + 1);  // the only evidence with a series
  r.events[0].time_ns.reset();
  std::string h = render_html(r);
  EXPECT_EQ(h.find("<svg"), std::string::npos);
  EXPECT_NE(h.find("All 2 events"), std::string::npos);  // the table is still there
}

TEST(DoctorHtml, NoProblems) {
  std::string h = render_html(quiet_report());
  expect_self_contained(h);
  EXPECT_NE(h.find("No problems found."), std::string::npos);
  EXPECT_EQ(h.find("sev-critical\">"), std::string::npos);
}

TEST(DoctorCharts, LineChartHasAxesLabelsAndThreshold) {
  Evidence e = slow_loader().evidence[0];
  std::string svg = svg_line_chart(e, 400, 150);
  EXPECT_EQ(svg.rfind("<svg", 0), 0U);
  EXPECT_NE(svg.find("viewBox=\"0 0 400 150\""), std::string::npos);
  EXPECT_NE(svg.find("min 2 · max 97 %"), std::string::npos) << svg;
  EXPECT_NE(svg.find("threshold 90 %"), std::string::npos);
  EXPECT_NE(svg.find("17:07:39"), std::string::npos);  // start of the time axis
  EXPECT_NE(svg.find("17:07:48"), std::string::npos);  // end
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  e.threshold.reset();
  EXPECT_EQ(svg_line_chart(e).find("stroke-dasharray"), std::string::npos);
}

TEST(DoctorCharts, DegenerateSeries) {
  Evidence e;
  EXPECT_EQ(svg_line_chart(e), "");
  e.series = {{kT0, std::nan("")}};
  EXPECT_EQ(svg_line_chart(e), "");
  e.series = {{kT0, 42.0}};
  std::string one = svg_line_chart(e);
  EXPECT_NE(one.find("<circle"), std::string::npos);
  EXPECT_EQ(one.find("nan"), std::string::npos);
  e.series = {{kT0, 5.0}, {kT0 + kNsPerSec, 5.0}};  // flat: the range is padded, no 0/0
  std::string flat = svg_line_chart(e);
  EXPECT_NE(flat.find("<polyline"), std::string::npos);
  EXPECT_EQ(flat.find("nan"), std::string::npos);
  EXPECT_EQ(flat.find("inf"), std::string::npos);
}

TEST(DoctorCharts, TimelineCapsDots) {
  std::vector<kmsg::KernelEvent> evs(5, xid_event());
  std::string svg = svg_event_timeline(evs, 600, 3);
  std::size_t dots = 0;
  for (auto p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1)) ++dots;
  EXPECT_EQ(dots, 3U);
  EXPECT_NE(svg.find("2 later events not drawn"), std::string::npos);
  evs[0].time_ns.reset();
  EXPECT_EQ(svg_event_timeline({evs[0]}), "");
}

// The exact bytes of a few charts, so that a change to how they are drawn (the SVG helper in
// core/svg.h they share with the simulator's report) shows up as a diff of
// tests/fixtures/golden/charts/doctor-charts.svg. CARDIAC_UPDATE_GOLDEN=1 rewrites the file.
TEST(DoctorCharts, PinnedBytes) {
  Evidence e = slow_loader().evidence[0];
  std::string out = svg_line_chart(e, 400, 150);
  e.threshold.reset();
  e.unit = "<&>";
  e.metric = "util \"quoted\"";
  out += svg_line_chart(e);
  e.series = {{kT0, 42.0}};
  out += svg_line_chart(e, 100, 50);
  e.series = {{kT0, 5.0}, {kT0 + 3 * 24 * 3600 * kNsPerSec, 5.0}};  // flat, over days
  out += svg_line_chart(e);
  std::vector<kmsg::KernelEvent> evs = {xid_event(), aer_event(), xid_event(), aer_event()};
  evs[1].time_ns = kT0 + 5 * kNsPerSec;
  evs[2].time_ns = kT0 + 9 * kNsPerSec;
  evs[3].time_ns.reset();
  evs[2].raw = "<script>alert(1)</script>";
  out += svg_event_timeline(evs);
  out += svg_event_timeline(evs, 300, 1);
  const std::string path = std::string(CARDIAC_FIXTURES_DIR) + "/golden/charts/doctor-charts.svg";
  if (std::getenv("CARDIAC_UPDATE_GOLDEN")) std::ofstream(path, std::ios::trunc) << out;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no golden file " << path << " (run with CARDIAC_UPDATE_GOLDEN=1)";
  std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(out, golden) << "golden: " << path;
}

TEST(DoctorCharts, HtmlEscape) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(html_escape("ok\tnew\nline"), "ok\tnew\nline");
  EXPECT_EQ(html_escape("\x1b[0m"), "\xEF\xBF\xBD[0m");
  EXPECT_EQ(html_escape("\xff"), "\xEF\xBF\xBD");
  EXPECT_EQ(html_escape("°C"), "°C");
}

// ---- shared helpers and the empty report ---------------------------------------------------

TEST(DoctorRender, FormatNumber) {
  EXPECT_EQ(detail::format_number(88.0), "88");
  EXPECT_EQ(detail::format_number(-0.0), "0");
  EXPECT_EQ(detail::format_number(12.5), "12.5");
  EXPECT_EQ(detail::format_number(0.25), "0.25");
  EXPECT_EQ(detail::format_number(1234.56), "1234.6");
  EXPECT_EQ(detail::format_number(std::nan("")), "n/a");
}

TEST(DoctorRender, EmptyReportRendersEverywhere) {
  Report r;
  json j = to_json(r);
  EXPECT_EQ(j["findings"], json::array());
  EXPECT_EQ(j["events"], json::array());
  EXPECT_TRUE(j["hostname"].is_null());
  EXPECT_TRUE(j["sources"]["kmsg"].is_null());
  std::string t = render_text(r, true);
  EXPECT_NE(t.find("No problems found"), std::string::npos);
  EXPECT_NE(t.find("kernel log: not read"), std::string::npos);
  EXPECT_NE(render_markdown(r).find("No GPU was found"), std::string::npos);
  std::string h = render_html(r);
  expect_self_contained(h);
  EXPECT_EQ(h.find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::doctor
