// SPDX-License-Identifier: Apache-2.0
// The whole frame: title, tabs, the current view (or the help), notes and the key line.
#include <algorithm>

#include "core/format.h"
#include "top/render_parts.h"

namespace cardiac::top {
namespace {

constexpr const char* kViewNames[] = {"GPUs", "Processes", "Alerts", "Queue"};

Line title_line(const Snapshot& s, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  const char* dot = o.utf8 ? " · " : " - ";
  std::string t = "cardiac top";
  if (!s.host.empty()) t += dot + clean(s.host, o.utf8);
  if (!s.source.empty()) t += dot + clean(s.source, o.utf8);
  t += fmt::format("{}{} GPU{}", dot, s.gpus.size(), s.gpus.size() == 1 ? "" : "s");
  b.add(t, Style::kTitle);
  b.add("  ", Style::kTitle);
  b.add(s.verdict.empty() ? "no verdict" : s.verdict, verdict_style(s.verdict));
  return b.done(Style::kTitle);
}

Line tabs_line(const Snapshot& s, const ViewState& v, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  for (std::size_t i = 0; i < kViewCount; ++i) {
    std::string tab = fmt::format("{} {}", i + 1, kViewNames[i]);
    if (i == 2 && s.alerts && !s.alerts->empty()) tab += fmt::format(" ({})", s.alerts->size());
    if (i == 3 && s.jobs && !s.jobs->empty()) tab += fmt::format(" ({})", s.jobs->size());
    b.add(" " + tab + " ", i == static_cast<std::size_t>(v.view) ? Style::kTabActive : Style::kTab);
    b.add(" ");
  }
  const SortState st = v.sort[static_cast<std::size_t>(v.view)];
  b.add(fmt::format(" sort: {} {}", sort_keys(v.view)[st.key].name,
                    st.descending ? (o.utf8 ? "↓" : "desc") : (o.utf8 ? "↑" : "asc")),
        Style::kDim);
  if (!v.filter.empty()) b.add("  filter: " + clean(v.filter, o.utf8), Style::kWarn);
  return b.done();
}

Line footer_line(const ViewState& v, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  if (v.editing) {
    b.add("filter (GPU index, or process, user, job): ", Style::kTitle);
    b.add(clean(v.draft, o.utf8));
    b.add("_", Style::kTabActive);
    b.add("  Enter apply, Esc cancel", Style::kDim);
    return b.done();
  }
  const std::pair<const char*, const char*> keys[] = {{"q", "quit"},   {"tab", "view"},
                                                      {"s", "sort"},   {"S", "reverse"},
                                                      {"/", "filter"}, {"h", "help"}};
  for (const auto& [key, what] : keys) {
    b.add(key, Style::kTabActive);
    b.add(fmt::format(" {}  ", what));
  }
  return b.done();
}

std::vector<Line> help_view(const Snapshot& s, const RenderOptions& o) {
  const char* arrows = o.utf8 ? "← →" : "left right";
  const char* updown = o.utf8 ? "↑ ↓" : "up down";
  std::vector<std::string> text = {
      "Keys",
      "  q              quit (Ctrl-C too)",
      "  tab, 1-4       views: 1 GPUs, 2 processes, 3 alerts, 4 queue (shift-tab: back)",
      fmt::format("  s, {:<11}  sort by the next / previous key; S or r reverses", arrows),
      fmt::format("  {:<14} select a row (GPUs: its detail and sparklines below the table);",
                  updown),
      "                 PgUp PgDn Home End too",
      "  /              filter: GPU indices (3 or 0,5) or text in a process name, user or",
      "                 job; Enter applies, an empty filter clears, Esc cancels",
      "  Esc            clear the filter",
      "  h, ?           this help; any key closes it",
      "",
      fmt::format("Refresh every {:g} s. Source: {}.", o.interval_s,
                  s.source.empty() ? "none yet" : s.source),
      "Bars: UTIL and MEM of 100 %, TEMP of the slowdown threshold, POWER of the limit.",
      "STAT is the health verdict of `cardiac status` (OK, WARN, FAIL); docs/top.md.",
  };
  return help_lines(text, o);
}

}  // namespace

Frame render(const Snapshot& s, const History& h, const ViewState& v, const RenderOptions& o) {
  Frame f;
  if (o.height == 0 || o.width == 0) return f;
  f.lines.push_back(title_line(s, o));
  if (o.height >= 2) f.lines.push_back(tabs_line(s, v, o));
  // Lines left between the tabs and the key line; the notes take the last of them.
  const std::size_t fixed = std::min<std::size_t>(o.height, 3);
  std::size_t body = o.height - fixed;
  const std::size_t notes = std::min(s.notes.size(), body > 2 ? body - 2 : 0);
  body -= notes;
  std::vector<Line> content;
  if (v.help) {
    content = help_view(s, o);
  } else {
    switch (v.view) {
      case View::kGpus:
        content = gpu_view(s, h, v, o, body);
        break;
      case View::kProcesses:
        content = process_view(s, v, o, body);
        break;
      case View::kAlerts:
        content = alert_view(s, v, o, body);
        break;
      case View::kQueue:
        content = queue_view(s, v, o, body);
        break;
    }
  }
  content.resize(std::min(content.size(), body));
  while (content.size() < body) content.push_back(LineBuilder(o.width, o.utf8).done());
  for (auto& l : content) f.lines.push_back(std::move(l));
  for (std::size_t i = 0; i < notes; ++i) {
    f.lines.push_back(message_line(s.notes[i], o, Style::kWarn));
  }
  if (o.height >= 3) f.lines.push_back(footer_line(v, o));
  f.lines.resize(o.height, LineBuilder(o.width, o.utf8).done());
  return f;
}

}  // namespace cardiac::top
