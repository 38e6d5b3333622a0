// SPDX-License-Identifier: Apache-2.0
// The processes, alerts and queue views.
#include <algorithm>

#include "core/format.h"
#include "core/units.h"
#include "top/render_parts.h"

namespace cardiac::top {
namespace {

// NAME stays; TYPE goes first, then JOB, then USER.
constexpr ColumnSpec kProcessColumns[] = {
    {"GPU", 3, 0, false, Align::kRight},
    {"PID", 8, 0, false, Align::kRight},
    {"USER", 10, 1},
    {"JOB", 12, 3},
    {"TYPE", 8, 4},
    {"MEMORY", 10, 0, false, Align::kRight},
    {"NAME", 10, 0, true},
};
// DESCRIPTION stays; GPU goes first, then STATE, FOR, RULE.
constexpr ColumnSpec kAlertColumns[] = {
    {"SEVERITY", 8, 0},
    {"STATE", 8, 3},
    {"FOR", 8, 2, false, Align::kRight},
    {"GPU", 3, 4, false, Align::kRight},
    {"RULE", 26, 1},
    {"DESCRIPTION", 10, 0, true},
};
// GPUS / WHY stays; PRIO goes first, then NAME, TIME.
constexpr ColumnSpec kQueueColumns[] = {
    {"ID", 6, 0, false, Align::kRight},
    {"USER", 10, 0},
    {"NAME", 14, 3},
    {"STATE", 9, 0},
    {"GPUS", 4, 0, false, Align::kRight},
    {"PRIO", 5, 4, false, Align::kRight},
    {"TIME", 8, 2, false, Align::kRight},
    {"GPUS / WHY", 10, 0, true},
};

std::string or_dash(const std::string& s) {
  return s.empty() ? "-" : s;
}

std::string gpu_list(const std::vector<unsigned>& gpus) {
  std::string out;
  for (unsigned g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

// Emits `list` through `row` for the rows that fit, the selection kept in view.
template <class T, class RowFn>
void table_rows(std::vector<Line>& out, const std::vector<const T*>& list, std::size_t sel,
                std::size_t rows, const RenderOptions& o, RowFn row) {
  const std::size_t first = scroll_offset(sel, rows);
  for (std::size_t i = first; i < list.size() && i < first + rows; ++i) {
    LineBuilder b(o.width, o.utf8);
    row(b, *list[i], i == sel);
    out.push_back(b.done(i == sel ? Style::kSelected : Style::kNormal));
  }
}

std::string no_match(const ViewState& v, const char* what) {
  return fmt::format("no {} matches the filter '{}' (Esc clears it)", what, v.filter);
}

}  // namespace

std::span<const ColumnSpec> process_columns() {
  return kProcessColumns;
}
std::span<const ColumnSpec> alert_columns() {
  return kAlertColumns;
}
std::span<const ColumnSpec> queue_columns() {
  return kQueueColumns;
}

std::vector<Line> process_view(const Snapshot& s, const ViewState& v, const RenderOptions& o,
                               std::size_t rows) {
  std::vector<Line> out;
  const auto cols = fit_columns(process_columns(), o.width);
  out.push_back(header_line(cols, o));
  const auto list = process_rows(s, v);
  if (list.empty()) {
    out.push_back(message_line(v.filter.empty() ? "no GPU processes" : no_match(v, "process"), o,
                               Style::kDim));
    return out;
  }
  table_rows(out, list, v.selected[1], rows > 0 ? rows - 1 : 0, o,
             [&](LineBuilder& b, const ProcessInfo& p, bool selected) {
               const Style st = selected ? Style::kSelected : Style::kNormal;
               for (std::size_t i = 0; i < cols.size(); ++i) {
                 const Column& c = cols[i];
                 if (i > 0) b.add(" ", st);
                 std::string t;
                 if (c.name == "GPU") t = std::to_string(p.gpu);
                 if (c.name == "PID") t = std::to_string(p.pid);
                 if (c.name == "USER") t = or_dash(p.user);
                 if (c.name == "JOB") t = or_dash(p.job);
                 if (c.name == "TYPE") t = or_dash(p.type);
                 if (c.name == "MEMORY") t = p.memory ? format_bytes(*p.memory) : "n/a";
                 if (c.name == "NAME") t = p.name.empty() ? "(unknown)" : p.name;
                 b.cell(clean(t, o.utf8), c.width, st, c.align);
               }
             });
  return out;
}

std::vector<Line> alert_view(const Snapshot& s, const ViewState& v, const RenderOptions& o,
                             std::size_t rows) {
  std::vector<Line> out;
  const auto cols = fit_columns(alert_columns(), o.width);
  out.push_back(header_line(cols, o));
  if (!s.alerts) {
    out.push_back(message_line(
        "alerts are kept by the agent (cardiac agent); none is answering, so none are shown", o,
        Style::kDim));
    return out;
  }
  const auto list = alert_rows(s, v);
  if (list.empty()) {
    out.push_back(message_line(v.filter.empty() ? "no alert is firing" : no_match(v, "alert"), o,
                               Style::kOk));
    return out;
  }
  table_rows(out, list, v.selected[2], rows > 0 ? rows - 1 : 0, o,
             [&](LineBuilder& b, const AlertInfo& a, bool selected) {
               const Style st = selected ? Style::kSelected : Style::kNormal;
               for (std::size_t i = 0; i < cols.size(); ++i) {
                 const Column& c = cols[i];
                 if (i > 0) b.add(" ", st);
                 Style cs = st;
                 std::string t;
                 if (c.name == "SEVERITY") {
                   t = a.severity;
                   if (!selected) {
                     cs = a.severity == "critical"  ? Style::kFail
                          : a.severity == "warning" ? Style::kWarn
                                                    : Style::kNormal;
                   }
                 }
                 if (c.name == "STATE") t = a.silenced ? "silenced" : a.acked ? "acked" : a.state;
                 if (c.name == "FOR") t = a.since > 0 ? short_duration(o.now - a.since) : "-";
                 if (c.name == "GPU") t = a.gpu ? std::to_string(*a.gpu) : "-";
                 if (c.name == "RULE") t = a.rule;
                 if (c.name == "DESCRIPTION") t = a.description;
                 b.cell(clean(t, o.utf8), c.width, cs, c.align);
               }
             });
  return out;
}

std::vector<Line> queue_view(const Snapshot& s, const ViewState& v, const RenderOptions& o,
                             std::size_t rows) {
  std::vector<Line> out;
  const auto cols = fit_columns(queue_columns(), o.width);
  out.push_back(header_line(cols, o));
  if (!s.jobs) {
    out.push_back(
        message_line("the job queue runs in the agent (cardiac agent, [queue] enabled); "
                     "none is answering with one",
                     o, Style::kDim));
    return out;
  }
  const auto list = job_rows(s, v);
  if (list.empty()) {
    out.push_back(message_line(v.filter.empty() ? "no job pending or running" : no_match(v, "job"),
                               o, Style::kDim));
  } else {
    std::size_t room = rows > 0 ? rows - 1 : 0;
    if (!s.queue_blocked.empty() && room > 0) --room;
    table_rows(out, list, v.selected[3], room, o,
               [&](LineBuilder& b, const JobInfo& j, bool selected) {
                 const Style st = selected ? Style::kSelected : Style::kNormal;
                 for (std::size_t i = 0; i < cols.size(); ++i) {
                   const Column& c = cols[i];
                   if (i > 0) b.add(" ", st);
                   std::string t;
                   if (c.name == "ID") t = std::to_string(j.id);
                   if (c.name == "USER") t = j.user;
                   if (c.name == "NAME") t = j.name;
                   if (c.name == "STATE") t = j.state;
                   if (c.name == "GPUS") t = std::to_string(j.gpus);
                   if (c.name == "PRIO") t = std::to_string(j.priority);
                   if (c.name == "TIME") t = j.since > 0 ? short_duration(o.now - j.since) : "-";
                   if (c.name == "GPUS / WHY") {
                     t = j.state == "running" ? "GPU " + gpu_list(j.gpu_indices) : j.reason;
                   }
                   b.cell(clean(t, o.utf8), c.width, st, c.align);
                 }
               });
  }
  if (!s.queue_blocked.empty()) {
    out.push_back(message_line("nothing can start: " + s.queue_blocked, o, Style::kWarn));
  }
  return out;
}

}  // namespace cardiac::top
