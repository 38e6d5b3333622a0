// SPDX-License-Identifier: Apache-2.0
// Terminal rendering of the doctor report, and the helpers every renderer shares.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"
#include "doctor/render/render.h"

namespace cardiac::doctor {

namespace detail {

SeverityCounts count_severities(const Report& r) {
  SeverityCounts c;
  for (const auto& f : r.findings) {
    switch (f.severity) {
      case Severity::kInfo:
        ++c.info;
        break;
      case Severity::kWarning:
        ++c.warning;
        break;
      case Severity::kCritical:
        ++c.critical;
        break;
    }
  }
  return c;
}

std::string generated_text(const Report& r) {
  if (r.generated_at == 0) return "Generated from captured data (the capture does not say when)";
  return "Generated " + format_iso8601(r.generated_at);
}

std::string counts_text(const SeverityCounts& c) {
  return fmt::format("{} critical, {} warning, {} info", c.critical, c.warning, c.info);
}

std::string event_kinds_text(const Report& r) {
  std::vector<std::pair<kmsg::EventKind, unsigned>> kinds;
  for (const auto& e : r.events) {
    auto it =
        std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == e.kind; });
    if (it == kinds.end()) {
      kinds.emplace_back(e.kind, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<std::string> parts;
  parts.reserve(kinds.size());
  for (const auto& [k, n] : kinds)
    parts.push_back(fmt::format("{} {}", kmsg::event_kind_name(k), n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<std::string> looked_at(const Report& r) {
  const Sources& s = r.sources;
  std::vector<std::string> out;
  out.push_back(s.live ? fmt::format("live machine, host tree {}", s.root)
                       : fmt::format("captured data (offline), host tree {}", s.root));
  std::string gpus =
      r.gpus.empty() ? std::string("GPUs: none found") : fmt::format("GPUs: {}", r.gpus.size());
  // The store keeps GPUs by index only: say so, as no bus id stands beside them.
  if (!r.gpus.empty() && std::all_of(r.gpus.begin(), r.gpus.end(),
                                     [](const GpuRef& g) { return g.pci_bus_id.empty(); })) {
    gpus += s.db.empty() ? " (by index)" : " (by index, from the history's samples)";
  }
  out.push_back(std::move(gpus));
  std::string samples = fmt::format("samples: {} GPU, {} host", s.gpu_samples, s.host_samples);
  if (s.window > 0) samples += " over " + format_duration(s.window);
  out.push_back(std::move(samples));
  if (s.kmsg.empty()) {
    out.emplace_back("kernel log: not read");
  } else if (r.events.empty()) {
    out.push_back(fmt::format("kernel log: {} (no GPU-related events)", s.kmsg));
  } else {
    out.push_back(fmt::format("kernel log: {} ({} event{}: {})", s.kmsg, r.events.size(),
                              r.events.size() == 1 ? "" : "s", event_kinds_text(r)));
  }
  if (!s.db.empty()) out.push_back("history: " + s.db);
  for (const auto& p : s.probes) out.push_back("network: " + p);
  if (r.traffic) {
    const auto& t = *r.traffic;
    std::string link =
        t.link.name.empty() ? std::string("no NIC to compare with") : "shares of " + t.link.name;
    if (!t.link.name.empty()) {
      link += t.link.speed_mbps ? fmt::format(" ({} Mb/s)", *t.link.speed_mbps)
                                : std::string(" (speed unknown)");
    }
    out.push_back(fmt::format("traffic: sent {}, received {} over {:.1f} s on {} sockets{}; {}",
                              netproc::bits_per_s(t.sent_bytes_per_s),
                              netproc::bits_per_s(t.received_bytes_per_s), t.window_s, t.sockets,
                              t.loopback_included ? "" : " (loopback left out)", link));
    constexpr std::size_t kTalkersShown = 3;
    for (std::size_t i = 0; i < t.talkers.size() && i < kTalkersShown; ++i) {
      out.push_back("talker: " + netproc::talker_text(t.talkers[i], t.link));
    }
  }
  return out;
}

std::vector<Category> category_order(const Report& r) {
  constexpr std::array kAll = {Category::kHardware, Category::kDriver,        Category::kResources,
                               Category::kNetwork,  Category::kConfiguration, Category::kSecurity};
  std::vector<std::pair<Category, int>> present;
  for (Category c : kAll) {
    int worst = -1;
    for (const auto& f : r.findings) {
      if (f.category == c) worst = std::max(worst, static_cast<int>(f.severity));
    }
    if (worst >= 0) present.emplace_back(c, worst);
  }
  std::stable_sort(present.begin(), present.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<Category> out;
  out.reserve(present.size());
  for (const auto& p : present) out.push_back(p.first);
  return out;
}

std::string format_number(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v == 0) return "0";  // also turns -0 into 0
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  double a = std::fabs(v);
  if (a < 1) return fmt::format("{:.3g}", v);
  std::string s = fmt::format("{:.{}f}", v, a >= 100 ? 1 : 2);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string series_summary(const Evidence& e) {
  double lo = INFINITY, hi = -INFINITY;
  std::size_t n = 0;
  for (const auto& p : e.series) {
    if (!std::isfinite(p.second)) continue;
    lo = std::min(lo, p.second);
    hi = std::max(hi, p.second);
    ++n;
  }
  std::string unit = e.unit.empty() ? "" : " " + e.unit;
  std::string name = e.metric.empty() ? "value" : e.metric;
  std::string out = n == 0 ? fmt::format("{}: no values", name)
                           : fmt::format("{}: {}–{}{} over {} point{}", name, format_number(lo),
                                         format_number(hi), unit, n, n == 1 ? "" : "s");
  if (e.threshold) out += fmt::format(", threshold {}{}", format_number(*e.threshold), unit);
  return out;
}

std::string display_bus_id(const std::string& id) {
  std::string n = kmsg::normalize_kernel_bus_id(id);
  return n.empty() ? id : n;
}

std::string gpu_label(const GpuRef& gpu) {
  GpuRef g = gpu;
  if (auto n = kmsg::normalize_kernel_bus_id(g.pci_bus_id); !n.empty()) g.pci_bus_id = n;
  return g.label();
}

PlanRepeat plan_repeat(const CrossCheckPlan& plan, const CrossCheckPlan* earlier) {
  PlanRepeat r;
  if (earlier == nullptr) return r;
  r.checks = !plan.physical_checks.empty() && plan.physical_checks == earlier->physical_checks &&
             plan.environment == earlier->environment;
  auto same = [](const Outcome& a, const Outcome& b) {
    return a.observation == b.observation && a.meaning == b.meaning;
  };
  r.whole = r.checks && plan.steps == earlier->steps &&
            std::equal(plan.outcomes.begin(), plan.outcomes.end(), earlier->outcomes.begin(),
                       earlier->outcomes.end(), same);
  return r;
}

std::string lower_first(std::string_view s) {
  std::string out(s);
  // Only a capitalised ordinary word: "The" → "the", but "GPU" and "PCIe" stay.
  if (out.size() >= 2 && std::isupper(static_cast<unsigned char>(out[0])) &&
      std::islower(static_cast<unsigned char>(out[1]))) {
    out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
  }
  return out;
}

std::string category_heading(Category c) {
  std::string s(category_name(c));
  if (!s.empty()) s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

}  // namespace detail

namespace {

constexpr std::size_t kWidth = 100;
constexpr std::size_t kMaxEvidence = 5;
constexpr std::size_t kMaxEvidenceLines = 5;

struct Painter {
  bool color;
  [[nodiscard]] std::string operator()(std::string_view code, std::string_view text) const {
    if (!color) return std::string(text);
    return fmt::format("\033[{}m{}\033[0m", code, text);
  }
  [[nodiscard]] std::string badge(Severity s) const {
    std::string label = fmt::format("[{}]", severity_name(s));
    for (auto& ch : label) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const char* code = s == Severity::kCritical ? "31;1" : s == Severity::kWarning ? "33" : "36";
    return (*this)(code, label);
  }
};

// Display width in code points: close enough for wrapping prose (no wide CJK expected).
std::size_t width_of(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
}

// Word-wraps prose at kWidth with `indent` spaces on every line and `hang` more on the lines
// a paragraph continues on (so "1. " items line up); explicit newlines start a new paragraph.
// A word longer than the line stays whole rather than being cut mid-word.
std::string wrap(std::string_view text, std::size_t indent, std::size_t hang = 0) {
  std::string out;
  std::string tidy = detail::printable(text);
  for (auto para : split_lines(tidy)) {
    if (trim(para).empty()) {
      out += "\n";
      continue;
    }
    std::size_t start = indent;
    std::string line(start, ' ');
    std::size_t w = start;
    for (auto word : split_ws(para)) {
      std::size_t ww = width_of(word);
      if (w > start && w + 1 + ww > kWidth) {
        out += line + "\n";
        start = indent + hang;
        line.assign(start, ' ');
        w = start;
      }
      if (w > start) {
        line += ' ';
        ++w;
      }
      line += word;
      w += ww;
    }
    out += line + "\n";
  }
  return out;
}

void render_evidence(const Evidence& e, const Painter& p, std::string& out) {
  std::vector<std::string> meta;
  if (e.time) meta.push_back(format_iso8601(*e.time));
  if (!e.source.empty()) meta.push_back(detail::printable(e.source));
  bool log = e.kind == "log";
  std::string text = detail::printable(e.text);
  auto lines = split_lines(text);
  std::size_t shown = std::min(lines.size(), kMaxEvidenceLines);
  if (log) {
    // Log lines are evidence only when verbatim: no wrapping, the source line above them.
    if (!meta.empty()) out += "    " + p("2", fmt::format("{}", fmt::join(meta, " · "))) + "\n";
    for (std::size_t i = 0; i < shown; ++i) out += fmt::format("      {}\n", lines[i]);
  } else {
    std::string first = lines.empty() ? std::string() : std::string(lines[0]);
    if (!meta.empty()) first += " " + p("2", fmt::format("({})", fmt::join(meta, " · ")));
    out += fmt::format("    - {}\n", first);
    for (std::size_t i = 1; i < shown; ++i) out += fmt::format("      {}\n", lines[i]);
  }
  if (lines.size() > shown) out += fmt::format("      … {} more lines\n", lines.size() - shown);
  if (!e.series.empty()) out += fmt::format("      {}\n", detail::series_summary(e));
}

void render_cross_check(const CrossCheckPlan& plan, const CrossCheckPlan*& first,
                        std::string& out) {
  const detail::PlanRepeat seen = detail::plan_repeat(plan, first);
  if (first == nullptr) first = &plan;
  if (seen.whole) {
    out += "  Cross-check: the same plan as the first one above.\n";
    return;
  }
  out += "  Cross-check:\n";
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    std::string n = fmt::format("{}. ", i + 1);
    out += wrap(n + plan.steps[i], 4, n.size());
  }
  for (const auto& o : plan.outcomes) {
    out += wrap(fmt::format("If {}: {}", detail::lower_first(o.observation), o.meaning), 4, 2);
  }
  if (seen.checks) {
    out += wrap("Physical checks and room: as in the first cross-check above.", 4);
    return;
  }
  for (const auto& c : plan.physical_checks) out += wrap("Check: " + c, 4);
  if (!plan.environment.empty()) out += wrap("Room: " + plan.environment, 4);
}

void render_finding(const Finding& f, const Painter& p, const CrossCheckPlan*& first_plan,
                    std::string& out) {
  std::string who = detail::printable(detail::gpu_label(f.gpu));
  out += fmt::format("{} {}{}\n", p.badge(f.severity), who.empty() ? "" : who + ": ",
                     p("1", detail::printable(f.title)));
  if (!f.explanation.empty()) out += wrap(f.explanation, 2);
  if (!f.evidence.empty()) {
    out += "  Evidence:\n";
    std::size_t shown = std::min(f.evidence.size(), kMaxEvidence);
    for (std::size_t i = 0; i < shown; ++i) render_evidence(f.evidence[i], p, out);
    if (f.evidence.size() > shown) {
      out += fmt::format("    … {} more (all of it is in --json)\n", f.evidence.size() - shown);
    }
  }
  if (!f.actions.empty()) {
    out += "  Next steps:\n";
    for (std::size_t i = 0; i < f.actions.size(); ++i) {
      std::string n = fmt::format("{}. ", i + 1);
      out += wrap(n + f.actions[i], 4, n.size());
    }
  }
  if (f.cross_check) render_cross_check(*f.cross_check, first_plan, out);
  if (!f.runbook.empty()) out += "  Runbook: " + detail::printable(f.runbook) + "\n";
  if (f.confidence == Confidence::kLow) {
    out += wrap(
        "Confidence: low. The evidence fits this cause but is thin; confirm it before acting.", 2);
  }
  out += "\n";
}

void render_header(const Report& r, const Painter& p, std::string& out) {
  out += fmt::format("{} · {}\n", p("1", "cardiac doctor"),
                     r.hostname.empty() ? std::string("this host") : detail::printable(r.hostname));
  out += detail::generated_text(r) + "\n";
  out += "Looked at:\n";
  for (const auto& l : detail::looked_at(r)) out += "  " + detail::printable(l) + "\n";
  for (const auto& s : r.sources.skipped) {
    out += "  " + p("33", "skipped: ") + detail::printable(s) + "\n";
  }
  out += "\n";
}

}  // namespace

std::string render_text(const Report& r, bool color) {
  Painter p{color};
  std::string out;
  render_header(r, p, out);
  auto counts = detail::count_severities(r);
  bool problems = counts.warning + counts.critical > 0;
  if (!problems) {
    out += p("32;1", "No problems found") +
           " in what was looked at (a skipped source was not judged).\n\n";
  }
  const CrossCheckPlan* first_plan = nullptr;
  for (Category c : detail::category_order(r)) {
    out += p("1;4", detail::category_heading(c)) + "\n\n";
    for (const auto& f : r.findings) {
      if (f.category == c) render_finding(f, p, first_plan, out);
    }
  }
  if (problems) {
    out += fmt::format("Summary: {} · worst {}\n", detail::counts_text(counts), p.badge(r.worst()));
  } else {
    out += fmt::format("Summary: no problems · {}\n", detail::counts_text(counts));
  }
  return out;
}

}  // namespace cardiac::doctor
