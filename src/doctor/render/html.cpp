// SPDX-License-Identifier: Apache-2.0
// The doctor report as one self-contained HTML file: inline CSS and SVG, no scripts, nothing
// fetched, so it opens offline and can be attached to a ticket as it is.
#include <algorithm>
#include <cctype>

#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"
#include "doctor/finding_ids.h"
#include "doctor/render/charts.h"
#include "doctor/render/render.h"

namespace cardiac::doctor {
namespace {

constexpr std::size_t kMaxEventRows = 1000;

constexpr std::string_view kStyle = R"css(
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1a202c;background:#f7fafc;
  margin:0;padding:24px;max-width:1100px;margin-inline:auto}
h1{font-size:22px;margin:0 0 4px}h1 .host{color:#4a5568;font-weight:normal}
h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #e2e8f0;padding-bottom:4px}
h3{font-size:15px;margin:20px 0 8px;text-transform:uppercase;letter-spacing:.04em;color:#4a5568}
h4{display:inline;font-size:15px;margin:0}
h5{font-size:13px;margin:12px 0 4px}
.muted{color:#718096}
.summary{display:inline-block;padding:4px 10px;border-radius:4px;color:#fff;font-weight:600}
.ok{background:#2f855a}
ul.sources{margin:8px 0;padding-left:20px;color:#4a5568}
table{border-collapse:collapse;width:100%;margin:6px 0;font-size:13px}
th,td{text-align:left;vertical-align:top;padding:4px 8px;border-bottom:1px solid #e2e8f0}
th{background:#edf2f7}
pre,code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{margin:0;white-space:pre-wrap;word-break:break-all}
.card{background:#fff;border:1px solid #e2e8f0;border-left:6px solid #3182ce;border-radius:4px;
  padding:12px 16px;margin:10px 0}
.card.sev-critical{border-left-color:#c53030}.card.sev-warning{border-left-color:#d69e2e}
.badge{display:inline-block;font-size:11px;font-weight:700;color:#fff;border-radius:3px;
  padding:1px 6px;margin-right:6px;vertical-align:2px}
.sev-critical .badge,.summary.sev-critical{background:#c53030}
.sev-warning .badge,.summary.sev-warning{background:#b7791f}
.sev-info .badge,.summary.sev-info{background:#3182ce}
.gpu{font-weight:600;margin-right:6px}
.meta{font-size:12px;color:#718096;margin:4px 0 8px}
.chart,.timeline{display:block;margin:8px 0;background:#fff;max-width:100%;height:auto}
.low{background:#fffbea;border:1px solid #f6e05e;padding:6px 10px;border-radius:4px}
.nothing{background:#f0fff4;border:1px solid #9ae6b4;padding:10px 14px;border-radius:4px}
details summary{cursor:pointer;font-weight:600;margin:8px 0}
footer{margin-top:32px;font-size:12px;color:#a0aec0}
@media print{body{background:#fff}.card{break-inside:avoid}}
)css";

std::string esc(std::string_view s) {
  return html_escape(s);
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string dash_or(const std::string& s) {
  return s.empty() ? "—" : esc(s);
}

void render_header(const Report& r, std::string& out) {
  auto counts = detail::count_severities(r);
  bool problems = counts.warning + counts.critical > 0;
  out += fmt::format("<header>\n<h1>cardiac doctor <span class=\"host\">{}</span></h1>\n",
                     r.hostname.empty() ? "this host" : esc(r.hostname));
  out += fmt::format("<p class=\"muted\">{}</p>\n", esc(detail::generated_text(r)));
  out +=
      fmt::format("<p><span class=\"summary {}\">{}</span> <span class=\"muted\">{}</span></p>\n",
                  problems ? fmt::format("sev-{}", severity_name(r.worst())) : "ok",
                  problems ? "worst: " + upper(severity_name(r.worst())) : "no problems",
                  detail::counts_text(counts));
  out += "<ul class=\"sources\">\n";
  for (const auto& l : detail::looked_at(r)) out += fmt::format("<li>{}</li>\n", esc(l));
  for (const auto& s : r.sources.skipped) {
    out += fmt::format("<li><strong>skipped:</strong> {}</li>\n", esc(s));
  }
  out += "</ul>\n</header>\n";
}

void render_gpus(const Report& r, std::string& out) {
  out += "<section id=\"gpus\">\n<h2>GPUs</h2>\n";
  if (r.gpus.empty()) {
    out += "<p>No GPU was found (NVML, the PCI bus and the kernel log named none).</p>\n";
    out += "</section>\n";
    return;
  }
  out +=
      "<table>\n<tr><th>GPU</th><th>PCI bus id</th><th>Name</th><th>UUID</th><th>Serial</th>"
      "</tr>\n";
  for (const auto& g : r.gpus) {
    out += fmt::format(
        "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td>"
        "<td>{}</td></tr>\n",
        g.index ? std::to_string(*g.index) : "—", dash_or(detail::display_bus_id(g.pci_bus_id)),
        dash_or(g.name), dash_or(g.uuid), dash_or(g.serial));
  }
  out += "</table>\n</section>\n";
}

void render_evidence(const Finding& f, std::string& out) {
  if (f.evidence.empty()) return;
  out +=
      "<h5>Evidence</h5>\n<table class=\"evidence\">\n"
      "<tr><th>Time</th><th>Kind</th><th>Source</th><th>What was seen</th></tr>\n";
  for (const auto& e : f.evidence) {
    std::string what = e.kind == "log" ? fmt::format("<pre>{}</pre>", esc(e.text)) : esc(e.text);
    if (!e.series.empty()) {
      what += fmt::format("<div class=\"muted\">{}</div>", esc(detail::series_summary(e)));
    }
    out +=
        fmt::format("<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                    e.time ? format_iso8601(*e.time) : "—", esc(e.kind), dash_or(e.source), what);
  }
  out += "</table>\n";
  // Charts after the table: a picture of how a value moved says more than its summary line.
  for (const auto& e : f.evidence) out += svg_line_chart(e);
}

void render_cross_check(const CrossCheckPlan& plan, const CrossCheckPlan*& first,
                        std::string& out) {
  const detail::PlanRepeat seen = detail::plan_repeat(plan, first);
  if (first == nullptr) first = &plan;
  if (seen.whole) {
    out += "<p><strong>Cross-check:</strong> the same plan as the first one above.</p>\n";
    return;
  }
  out +=
      "<details open>\n<summary>Cross-check: is it the card, the slot or the server?</summary>\n";
  if (!plan.steps.empty()) {
    out += "<ol>\n";
    for (const auto& s : plan.steps) out += fmt::format("<li>{}</li>\n", esc(s));
    out += "</ol>\n";
  }
  if (!plan.outcomes.empty()) {
    out += "<table>\n<tr><th>If you see</th><th>It means</th></tr>\n";
    for (const auto& o : plan.outcomes) {
      out += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", esc(o.observation), esc(o.meaning));
    }
    out += "</table>\n";
  }
  if (seen.checks) {
    out += "<p>Physical checks and room: as in the first cross-check above.</p>\n</details>\n";
    return;
  }
  if (!plan.physical_checks.empty()) {
    out += "<h5>Physical checks</h5>\n<ul>\n";
    for (const auto& c : plan.physical_checks) out += fmt::format("<li>{}</li>\n", esc(c));
    out += "</ul>\n";
  }
  if (!plan.environment.empty()) {
    out += fmt::format("<p><strong>Room:</strong> {}</p>\n", esc(plan.environment));
  }
  out += "</details>\n";
}

void render_finding(const Finding& f, const CrossCheckPlan*& first_plan, std::string& out) {
  std::string sev(severity_name(f.severity));
  out += fmt::format("<article class=\"card sev-{}\">\n<div>", sev);
  out += fmt::format("<span class=\"badge\">{}</span>", upper(sev));
  std::string who = detail::gpu_label(f.gpu);
  if (!who.empty()) out += fmt::format("<span class=\"gpu\">{}</span>", esc(who));
  out += fmt::format("<h4>{}</h4></div>\n", esc(f.title));
  std::string gpu_meta;
  if (!f.gpu.name.empty()) gpu_meta += " · " + esc(f.gpu.name);
  if (!f.gpu.uuid.empty()) gpu_meta += " · " + esc(f.gpu.uuid);
  if (!f.gpu.serial.empty()) gpu_meta += " · serial " + esc(f.gpu.serial);
  out += fmt::format("<p class=\"meta\"><code>{}</code> · {} · confidence {}{}</p>\n", esc(f.id),
                     category_name(f.category), confidence_name(f.confidence), gpu_meta);
  for (auto para : split_lines(f.explanation)) {
    if (!trim(para).empty()) out += fmt::format("<p>{}</p>\n", esc(para));
  }
  render_evidence(f, out);
  if (!f.actions.empty()) {
    out += "<h5>Next steps</h5>\n<ol>\n";
    for (const auto& a : f.actions) out += fmt::format("<li>{}</li>\n", esc(a));
    out += "</ol>\n";
  }
  if (f.cross_check) render_cross_check(*f.cross_check, first_plan, out);
  if (!f.runbook.empty()) {
    out += fmt::format("<p class=\"runbook\">Runbook: <a href=\"{}\">{}</a></p>\n",
                       esc(runbook_href(f.runbook)), esc(f.runbook));
  }
  if (f.confidence == Confidence::kLow) {
    out +=
        "<p class=\"low\">Confidence is low: the evidence fits this cause but is thin. "
        "Confirm it before acting.</p>\n";
  }
  out += "</article>\n";
}

void render_findings(const Report& r, std::string& out) {
  out += "<section id=\"findings\">\n<h2>Findings</h2>\n";
  auto counts = detail::count_severities(r);
  if (counts.warning + counts.critical == 0) {
    out +=
        "<p class=\"nothing\"><strong>No problems found.</strong> Nothing above info in the "
        "sources listed above; a skipped source was not judged.</p>\n";
  }
  const CrossCheckPlan* first_plan = nullptr;
  for (Category c : detail::category_order(r)) {
    out += fmt::format("<h3>{}</h3>\n", detail::category_heading(c));
    for (const auto& f : r.findings) {
      if (f.category == c) render_finding(f, first_plan, out);
    }
  }
  out += "</section>\n";
}

void render_events(const Report& r, std::string& out) {
  if (r.events.empty()) return;
  out += fmt::format(
      "<section id=\"events\">\n<h2>Kernel events</h2>\n<p class=\"muted\">{} "
      "event{}: {}</p>\n",
      r.events.size(), r.events.size() == 1 ? "" : "s", esc(detail::event_kinds_text(r)));
  out += svg_event_timeline(r.events);
  out += fmt::format(
      "<details>\n<summary>All {} events</summary>\n<table>\n<tr><th>Time</th>"
      "<th>Kind</th><th>Xid</th><th>PCI bus id</th><th>Line</th></tr>\n",
      r.events.size());
  std::size_t shown = std::min(r.events.size(), kMaxEventRows);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& e = r.events[i];
    bool numbered = (e.kind == kmsg::EventKind::kXid || e.kind == kmsg::EventKind::kSxid) && e.xid;
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td><pre>{}</pre></td></"
        "tr>\n",
        e.time_ns ? format_iso8601(*e.time_ns) : "—", esc(kmsg::event_kind_name(e.kind)),
        numbered ? std::to_string(*e.xid) : "—", dash_or(detail::display_bus_id(e.pci_bus_id)),
        esc(e.raw.empty() ? e.message : e.raw));
  }
  out += "</table>\n";
  if (r.events.size() > shown) {
    out += fmt::format("<p class=\"muted\">… {} more in <code>cardiac doctor --json</code>.</p>\n",
                       r.events.size() - shown);
  }
  out += "</details>\n</section>\n";
}

}  // namespace

std::string render_html(const Report& r) {
  std::string out;
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>cardiac doctor: {}</title>\n<style>{}</style>\n</head>\n<body>\n",
                     r.hostname.empty() ? "this host" : esc(r.hostname), kStyle);
  render_header(r, out);
  render_gpus(r, out);
  render_findings(r, out);
  render_events(r, out);
  out += fmt::format("<footer>{} · generated by cardiac doctor</footer>\n</body>\n</html>\n",
                     kDoctorSchema);
  return out;
}

}  // namespace cardiac::doctor
