// SPDX-License-Identifier: Apache-2.0
// What the kernel-log checks share (kernel_analysis.h): the analysis of one log against the
// machine's GPUs, and the evidence, GPU naming and wording every kernel-log finding uses.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "core/format.h"
#include "core/time.h"
#include "doctor/checks/checks.h"
#include "doctor/checks/kernel_analysis.h"
#include "doctor/checks/xid_catalog.h"
#include "doctor/kernel_log.h"
#include "kmsg/record.h"

namespace cardiac::doctor {

namespace kernel_detail {

Analysis::Analysis(const DoctorInput& input) : in(input), map(input) {
  std::set<std::string> buses;
  for (const auto& g : map.all()) {
    if (!g.pci_bus_id.empty()) buses.insert(g.pci_bus_id);
  }
  for (const auto& e : in.events) {
    if ((e.kind == kmsg::EventKind::kXid || e.kind == kmsg::EventKind::kFallenOffBus ||
         e.kind == kmsg::EventKind::kGpuMap || e.kind == kmsg::EventKind::kInitFailure ||
         e.kind == kmsg::EventKind::kGspTimeout) &&
        !e.pci_bus_id.empty()) {
      buses.insert(e.pci_bus_id);
    }
  }
  gpu_buses_.assign(buses.begin(), buses.end());
  if (in.fs) {
    for (const auto& b : gpu_buses_) {
      if (auto link = in.fs->read_link("/sys/bus/pci/devices/" + b)) sysfs_path_[b] = *link;
    }
  }
  boot_of.assign(in.events.size(), 0);
  std::size_t b = 0;
  for (std::size_t i = 0; i < in.events.size(); ++i) {
    while (b < in.boots.size() && in.boots[b].first_event <= i) ++b;
    boot_of[i] = b;
  }
  for (const auto& [index, lines] : in.event_context) context_[index] = &lines;
}

const std::vector<std::string>& Analysis::context(std::size_t i) const {
  static const std::vector<std::string> kNone;
  auto it = context_.find(i);
  return it == context_.end() ? kNone : *it->second;
}

std::vector<std::string> Analysis::context_messages(std::size_t i) const {
  std::vector<std::string> out;
  for (const auto& line : context(i)) {
    auto p = kmsg::parse_log_line(line);
    if (p) out.emplace_back(p->message);
  }
  return out;
}

std::vector<std::string> Analysis::gpus_behind(const std::string& device, bool& resolved) const {
  resolved = !sysfs_path_.empty();
  if (std::find(gpu_buses_.begin(), gpu_buses_.end(), device) != gpu_buses_.end()) {
    resolved = true;
    return {device};
  }
  std::vector<std::string> out;
  for (const auto& [gpu, path] : sysfs_path_) {
    std::string_view p = path;
    while (!p.empty()) {
      auto slash = p.find('/');
      if (p.substr(0, slash) == device) {
        out.push_back(gpu);
        break;
      }
      p.remove_prefix(slash == std::string_view::npos ? p.size() : slash + 1);
    }
  }
  return out;
}

Evidence log_evidence(const Analysis& a, std::size_t event, std::string_view text) {
  const auto& e = a.ev(event);
  Evidence ev;
  ev.kind = "log";
  ev.text = text.empty() ? e.raw : std::string(text);
  if (ev.text.empty()) ev.text = e.message;
  if (e.time_ns) ev.time = e.time_ns;
  ev.source = a.in.kmsg_source;
  return ev;
}

void add_log_evidence(Finding& f, const Analysis& a, const std::vector<std::size_t>& events,
                      std::size_t max) {
  if (events.empty() || max == 0) return;
  const std::size_t head = events.size() <= max ? events.size() : max - 1;
  for (std::size_t i = 0; i < head; ++i) f.evidence.push_back(log_evidence(a, events[i]));
  if (head < events.size()) f.evidence.push_back(log_evidence(a, events.back()));
}

std::string span_text(const Analysis& a, const std::vector<std::size_t>& events) {
  std::optional<TimeNs> first;
  std::optional<TimeNs> last;
  for (auto i : events) {
    if (auto t = a.ev(i).time_ns) {
      first = first ? std::min(*first, *t) : *t;
      last = last ? std::max(*last, *t) : *t;
    }
  }
  if (!first) return {};
  if (*first == *last) return " at " + format_iso8601(*first);
  return fmt::format(" between {} and {}", format_iso8601(*first), format_iso8601(*last));
}

std::string times_text(std::size_t n) {
  if (n == 1) return "once";
  if (n == 2) return "twice";
  return fmt::format("{} times", n);
}

std::string quoted_sentence(std::string_view line) {
  const bool ends =
      !line.empty() && (line.back() == '.' || line.back() == '!' || line.back() == '?');
  return fmt::format("\"{}\"{}", line, ends ? "" : ".");
}

std::string cli_id(const GpuRef& g) {
  if (g.index) return std::to_string(*g.index);
  if (!g.pci_bus_id.empty()) return g.pci_bus_id;
  return "<GPU>";
}

std::string gpu_label(const GpuRef& g) {
  std::string l = g.label();
  return l.empty() ? "the GPU" : l;
}

std::string fill_step(std::string_view step, const GpuRef& g) {
  std::string out;
  while (!step.empty()) {
    auto brace = step.find('{');
    out.append(step.substr(0, brace));
    if (brace == std::string_view::npos) break;
    step.remove_prefix(brace);
    if (step.substr(0, 5) == "{gpu}") {
      out += gpu_label(g);
      step.remove_prefix(5);
    } else if (step.substr(0, 4) == "{id}") {
      out += cli_id(g);
      step.remove_prefix(4);
    } else {
      out.push_back('{');
      step.remove_prefix(1);
    }
  }
  return out;
}

std::string process_list(const Analysis& a, const std::vector<std::size_t>& events) {
  std::vector<std::string> seen;
  std::size_t more = 0;
  for (auto i : events) {
    const auto& e = a.ev(i);
    if (e.process.empty() && (!e.pid || *e.pid == 0)) continue;
    std::string p = e.process.empty() ? "a process" : e.process;
    if (e.pid && *e.pid != 0) p += fmt::format(" (pid {})", *e.pid);
    if (std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
    if (seen.size() < 3) {
      seen.push_back(std::move(p));
    } else {
      ++more;
    }
  }
  std::string out = fmt::format("{}", fmt::join(seen, ", "));
  if (more > 0) out += fmt::format(" and {} more", more);
  return out;
}

std::vector<std::size_t> boots_of(const Analysis& a, const std::vector<std::size_t>& events) {
  std::set<std::size_t> s;
  for (auto i : events) s.insert(a.boot_of[i]);
  return {s.begin(), s.end()};
}

bool follows_closely(const Analysis& a, std::size_t earlier, std::size_t later, DurationNs window,
                     std::size_t max_events) {
  if (later < earlier || a.boot_of[earlier] != a.boot_of[later]) return false;
  const auto& t1 = a.ev(earlier).time_ns;
  const auto& t2 = a.ev(later).time_ns;
  if (t1 && t2) return *t2 - *t1 <= window && *t2 >= *t1 - kNsPerSec;
  return later - earlier <= max_events;
}

}  // namespace kernel_detail

}  // namespace cardiac::doctor
