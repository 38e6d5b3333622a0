// SPDX-License-Identifier: Apache-2.0
// The fleet screen of `cardiac top --fleet`: nodes, a node's GPUs and alerts, the read's state.
#include "top/fleet.h"

#include <algorithm>

#include "core/format.h"
#include "top/render_parts.h"

namespace cardiac::top {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Drop ranks: INSTANCE goes first, then XIDS, ALERTS, GPUS; NODE, VERDICT and REASON stay.
// At 80 columns INSTANCE is gone and REASON takes what is left.
constexpr ColumnSpec kNodeColumns[] = {
    {"NODE", 18, 0},
    {"VERDICT", 7, 0},
    {"GPUS", 4, 2, false, Align::kRight},
    {"ALERTS", 6, 3, false, Align::kRight},
    {"XIDS", 5, 4, false, Align::kRight},
    {"INSTANCE", 22, 6},
    {"REASON", 20, 1, true},
};

// A node's GPUs, indented under it: POWER goes first, then XIDS, TEMP, MEM, UTIL.
constexpr ColumnSpec kGpuColumns[] = {
    {"    GPU", 7, 0, false, Align::kRight},
    {"VERDICT", 7, 0},
    {"UTIL", 4, 2, false, Align::kRight},
    {"MEM", 11, 3, false, Align::kRight},
    {"TEMP", 4, 4, false, Align::kRight},
    {"POWER", 5, 6, false, Align::kRight},
    {"XIDS", 10, 5},
    {"REASON", 12, 1, true},
};

std::size_t xid_total(const fleet::FleetNode& n) {
  double total = 0;
  for (const auto& g : n.gpus) {
    for (const auto& [code, count] : g.xids) total += count;
  }
  return static_cast<std::size_t>(total);
}

std::string node_reason(const fleet::FleetNode& n) {
  if (!n.reason.empty()) return n.reason;
  if (!n.scraped) return n.scrape_error.empty() ? "not scraped" : "not scraped: " + n.scrape_error;
  return n.verdict == fleet::Verdict::kOk ? "OK" : "";
}

std::string opt_text(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

std::string mem_text(const fleet::FleetGpu& g) {
  if (!g.memory_used) return "-";
  return g.memory_total
             ? fmt::format("{:.1f}/{:.0f}G", *g.memory_used / kGiB, *g.memory_total / kGiB)
             : fmt::format("{:.1f}G", *g.memory_used / kGiB);
}

std::string xids_text(const fleet::FleetGpu& g) {
  std::string out;
  for (const auto& [code, count] : g.xids) {
    if (count <= 0) continue;
    out += fmt::format("{}{}x{:.0f}", out.empty() ? "" : " ", code, count);
  }
  if (out.empty() && g.last_xid != 0) out = fmt::format("last {}", g.last_xid);
  return out.empty() ? "-" : out;
}

Style severity_style(const std::string& severity) {
  return severity == "critical"  ? Style::kFail
         : severity == "warning" ? Style::kWarn
                                 : Style::kNormal;
}

Line node_line(const fleet::FleetNode& n, const std::vector<Column>& cols, bool selected,
               bool expanded, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  const Style base = selected ? Style::kSelected : Style::kNormal;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const Column& c = cols[i];
    if (i > 0) b.add(" ", base);
    if (c.name == "NODE") {
      const char* mark = expanded ? (o.utf8 ? "▾ " : "- ") : (o.utf8 ? "▸ " : "+ ");
      b.cell(mark + clean(n.hostname.empty() ? n.instance : n.hostname, o.utf8), c.width, base);
    } else if (c.name == "VERDICT") {
      b.cell(verdict_label(n.verdict), c.width, selected ? base : verdict_style(n.verdict));
    } else if (c.name == "GPUS") {
      b.cell(n.scraped ? std::to_string(n.gpus.size()) : "-", c.width, base, c.align);
    } else if (c.name == "ALERTS") {
      b.cell(std::to_string(n.alerts.size()), c.width,
             n.alerts.empty() || selected ? base : Style::kWarn, c.align);
    } else if (c.name == "XIDS") {
      const std::size_t x = xid_total(n);
      b.cell(n.scraped ? std::to_string(x) : "-", c.width, x == 0 || selected ? base : Style::kWarn,
             c.align);
    } else if (c.name == "INSTANCE") {
      b.cell(clean(n.instance, o.utf8), c.width, base);
    } else if (c.name == "REASON") {
      b.cell(clean(node_reason(n), o.utf8), c.width, base);
    }
  }
  return b.done(base);
}

Line gpu_line(const fleet::FleetGpu& g, const std::vector<Column>& cols, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const Column& c = cols[i];
    if (i > 0) b.add(" ");
    std::string t;
    Style st = Style::kNormal;
    if (c.name == "    GPU") t = std::to_string(g.index);
    if (c.name == "VERDICT") {
      t = verdict_label(g.verdict);
      st = verdict_style(g.verdict);
    }
    if (c.name == "UTIL") {
      t = g.utilization ? fmt::format("{:.0f}%", *g.utilization * 100) : "-";
    }
    if (c.name == "MEM") t = mem_text(g);
    if (c.name == "TEMP") t = opt_text(g.temperature, "{:.0f}C");
    if (c.name == "POWER") t = opt_text(g.power, "{:.0f}W");
    if (c.name == "XIDS") {
      t = xids_text(g);
      if (t != "-") st = Style::kWarn;
    }
    if (c.name == "REASON") {
      t = g.reason.empty() ? (g.answering ? "" : "not answering NVML") : g.reason;
    }
    b.cell(clean(t, o.utf8), c.width, st, c.align);
  }
  return b.done();
}

Line alert_line(const fleet::FleetAlert& a, std::size_t indent, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  b.add(std::string(indent, ' '));
  b.add("alert ", Style::kDim);
  b.add(clean(a.name, o.utf8), severity_style(a.severity));
  b.add(" [" + clean(a.severity.empty() ? "none" : a.severity, o.utf8) + "]",
        severity_style(a.severity));
  if (a.gpu) b.add(fmt::format(" GPU {}", *a.gpu));
  if (a.state != "firing" && !a.state.empty())
    b.add(" (" + clean(a.state, o.utf8) + ")", Style::kDim);
  b.add(": " + clean(a.summary, o.utf8));
  return b.done();
}

// The verdict comes early: a long Prometheus URL is what gets cut on a narrow terminal.
Line title_line(const FleetScreen& sc, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  const char* dot = o.utf8 ? " · " : " - ";
  b.add("cardiac top" + std::string(dot) + "fleet  ", Style::kTitle);
  if (!sc.view) {
    b.add(sc.waiting ? "no verdict yet" : "UNKNOWN", sc.waiting ? Style::kTitle : Style::kWarn);
  } else {
    b.add(verdict_label(sc.view->verdict), verdict_style(sc.view->verdict));
    if (!sc.error.empty()) b.add(" (stale)", Style::kWarn);
  }
  std::string t;
  if (sc.view) {
    std::size_t gpus = 0;
    for (const auto& n : sc.view->nodes) gpus += n.gpus.size();
    t += fmt::format("{}{} node{}{}{} GPU{}", dot, sc.view->nodes.size(),
                     sc.view->nodes.size() == 1 ? "" : "s", dot, gpus, gpus == 1 ? "" : "s");
  }
  t += dot + ("job " + clean(sc.job, o.utf8) + " of " + clean(sc.prometheus, o.utf8));
  b.add(t, Style::kTitle);
  return b.done(Style::kTitle);
}

Line state_line(const FleetScreen& sc, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  if (!sc.error.empty()) {
    b.add("Prometheus not read: " + clean(sc.error, o.utf8), Style::kFail);
    if (sc.view) {
      b.add(fmt::format("  (the view below is from {} ago)", short_duration(o.now - sc.read_at)),
            Style::kWarn);
    }
    return b.done();
  }
  if (!sc.view) {
    b.add("reading " + clean(sc.prometheus, o.utf8) + " ...", Style::kDim);
    return b.done();
  }
  std::size_t by[4] = {};
  for (const auto& n : sc.view->nodes) ++by[static_cast<int>(n.verdict)];
  const fleet::Verdict order[] = {fleet::Verdict::kOk, fleet::Verdict::kWarn, fleet::Verdict::kFail,
                                  fleet::Verdict::kUnknown};
  b.add("nodes:");
  for (auto v : order) {
    b.add(" ");
    b.add(fmt::format("{} {}", by[static_cast<int>(v)], verdict_label(v)),
          by[static_cast<int>(v)] == 0 ? Style::kDim : verdict_style(v));
  }
  if (!sc.view->fleet_alerts.empty()) {
    b.add(fmt::format("  fleet alerts: {}", sc.view->fleet_alerts.size()), Style::kWarn);
  }
  b.add(fmt::format("  read {} ago", short_duration(o.now - sc.read_at)), Style::kDim);
  return b.done();
}

Line footer_line(const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  const std::pair<const char*, const char*> keys[] = {{"q", "quit"},
                                                      {o.utf8 ? "↑↓" : "up/down", "select"},
                                                      {"Enter", "expand"},
                                                      {"a", "all"},
                                                      {"h", "help"}};
  for (const auto& [key, what] : keys) {
    b.add(key, Style::kTabActive);
    b.add(fmt::format(" {}  ", what));
  }
  return b.done();
}

std::vector<Line> help_view(const RenderOptions& o) {
  const std::vector<std::string> text = {
      "Keys",
      "  q              quit (Ctrl-C too)",
      "  up, down       select a node; PgUp PgDn Home End too",
      "  Enter, space   expand the node into its GPUs and firing alerts, or fold it",
      "  right, left    expand, fold",
      "  a              expand every node (again: fold them all)",
      "  h, ?           this help; any key closes it",
      "",
      fmt::format("Refresh every {:g} s from Prometheus' HTTP API (docs/fleet.md).", o.interval_s),
      "A node Prometheus cannot scrape is UNKNOWN, with its scrape error: its last",
      "series are stale. VERDICT is the agent's own (cardiac_gpu_health).",
  };
  return help_lines(text, o);
}

// The table, a node's GPUs and alerts under it when expanded, then the fleet-wide alerts;
// scrolled so the selected node (and as much of its expansion as fits) is on screen.
std::vector<Line> table_view(const FleetScreen& sc, const FleetState& s, const RenderOptions& o,
                             std::size_t rows) {
  std::vector<Line> out;
  if (!sc.view) {
    if (sc.waiting) {
      out.push_back(message_line("waiting for Prometheus' first answer", o, Style::kDim));
    } else {
      out.push_back(message_line("no fleet view: " + sc.error, o, Style::kFail));
    }
    return out;
  }
  const auto cols = fit_columns(kNodeColumns, o.width);
  out.push_back(header_line(cols, o));
  const auto& nodes = sc.view->nodes;
  if (nodes.empty()) {
    out.push_back(message_line(
        "the job '" + sc.view->job + "' lists no target: no node was looked at", o, Style::kWarn));
  }
  std::vector<Line> body;
  std::size_t sel_first = 0;
  std::size_t sel_last = 0;
  const auto gcols = fit_columns(kGpuColumns, o.width);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    const bool expanded = s.expanded.count(n.instance) > 0;
    if (i == s.selected) sel_first = body.size();
    body.push_back(node_line(n, cols, i == s.selected, expanded, o));
    if (expanded) {
      if (!n.scraped) {
        body.push_back(message_line(
            "  not scraped: " +
                (n.scrape_error.empty() ? std::string("no reason given") : n.scrape_error),
            o, Style::kWarn));
      } else if (n.gpus.empty()) {
        body.push_back(message_line("  no GPU series", o, Style::kDim));
      } else {
        LineBuilder h(o.width, o.utf8);
        for (std::size_t c = 0; c < gcols.size(); ++c) {
          if (c > 0) h.add(" ", Style::kDim);
          h.cell(gcols[c].name, gcols[c].width, Style::kDim, gcols[c].align);
        }
        body.push_back(h.done());
        for (const auto& g : n.gpus) body.push_back(gpu_line(g, gcols, o));
      }
      for (const auto& a : n.alerts) body.push_back(alert_line(a, 4, o));
    }
    if (i == s.selected) sel_last = body.size() - 1;
  }
  if (!sc.view->fleet_alerts.empty()) {
    body.push_back(LineBuilder(o.width, o.utf8).done());
    LineBuilder h(o.width, o.utf8);
    h.add("Fleet alerts (no single node)", Style::kTitle);
    body.push_back(h.done());
    for (const auto& a : sc.view->fleet_alerts) body.push_back(alert_line(a, 2, o));
  }
  const std::size_t visible = rows > out.size() ? rows - out.size() : 0;
  std::size_t first = scroll_offset(sel_last, visible);
  first = std::min(first, sel_first);
  for (std::size_t i = first; i < body.size() && i < first + visible; ++i) {
    out.push_back(std::move(body[i]));
  }
  return out;
}

}  // namespace

const char* verdict_label(fleet::Verdict v) {
  switch (v) {
    case fleet::Verdict::kOk:
      return "OK";
    case fleet::Verdict::kWarn:
      return "WARN";
    case fleet::Verdict::kFail:
      return "FAIL";
    case fleet::Verdict::kUnknown:
      break;
  }
  return "UNKNOWN";
}

Style verdict_style(fleet::Verdict v) {
  switch (v) {
    case fleet::Verdict::kOk:
      return Style::kOk;
    case fleet::Verdict::kFail:
      return Style::kFail;
    case fleet::Verdict::kWarn:
    case fleet::Verdict::kUnknown:
      break;
  }
  return Style::kWarn;
}

std::span<const ColumnSpec> fleet_node_columns() {
  return kNodeColumns;
}

std::span<const ColumnSpec> fleet_gpu_columns() {
  return kGpuColumns;
}

void clamp_selection(FleetState& s, const FleetScreen& screen) {
  const std::size_t n = screen.view ? screen.view->nodes.size() : 0;
  s.selected = n == 0 ? 0 : std::min(s.selected, n - 1);
}

Action handle_fleet_key(FleetState& s, const FleetScreen& screen, int key) {
  if (s.help) {
    s.help = false;
    return Action::kRedraw;
  }
  const std::size_t n = screen.view ? screen.view->nodes.size() : 0;
  const std::string instance = s.selected < n ? screen.view->nodes[s.selected].instance : "";
  constexpr std::size_t kPage = 10;
  switch (key) {
    case 'q':
    case 'Q':
      return Action::kQuit;
    case 'h':
    case '?':
      s.help = true;
      return Action::kRedraw;
    case kKeyUp:
    case 'k':
      if (s.selected > 0) --s.selected;
      return Action::kRedraw;
    case kKeyDown:
    case 'j':
      if (s.selected + 1 < n) ++s.selected;
      return Action::kRedraw;
    case kKeyPageUp:
      s.selected = s.selected > kPage ? s.selected - kPage : 0;
      return Action::kRedraw;
    case kKeyPageDown:
      s.selected = n == 0 ? 0 : std::min(s.selected + kPage, n - 1);
      return Action::kRedraw;
    case kKeyHome:
      s.selected = 0;
      return Action::kRedraw;
    case kKeyEnd:
      s.selected = n == 0 ? 0 : n - 1;
      return Action::kRedraw;
    case kKeyEnter:
    case '\n':
    case '\r':
    case ' ':
      if (instance.empty()) return Action::kNone;
      if (!s.expanded.erase(instance)) s.expanded.insert(instance);
      return Action::kRedraw;
    case kKeyRight:
    case 'l':
      if (instance.empty()) return Action::kNone;
      s.expanded.insert(instance);
      return Action::kRedraw;
    case kKeyLeft:
      s.expanded.erase(instance);
      return Action::kRedraw;
    case 'a': {
      bool all = n > 0;
      for (std::size_t i = 0; i < n; ++i)
        all = all && s.expanded.count(screen.view->nodes[i].instance);
      s.expanded.clear();
      if (!all) {
        for (std::size_t i = 0; i < n; ++i) s.expanded.insert(screen.view->nodes[i].instance);
      }
      return Action::kRedraw;
    }
    default:
      return Action::kNone;
  }
}

Frame render_fleet(const FleetScreen& sc, const FleetState& s, const RenderOptions& o) {
  Frame f;
  if (o.height == 0 || o.width == 0) return f;
  f.lines.push_back(title_line(sc, o));
  if (o.height >= 2) f.lines.push_back(state_line(sc, o));
  const std::size_t body = o.height - std::min<std::size_t>(o.height, 3);
  std::vector<Line> content = s.help ? help_view(o) : table_view(sc, s, o, body);
  content.resize(std::min(content.size(), body));
  while (content.size() < body) content.push_back(LineBuilder(o.width, o.utf8).done());
  for (auto& l : content) f.lines.push_back(std::move(l));
  if (o.height >= 3) f.lines.push_back(footer_line(o));
  f.lines.resize(o.height, LineBuilder(o.width, o.utf8).done());
  return f;
}

}  // namespace cardiac::top
