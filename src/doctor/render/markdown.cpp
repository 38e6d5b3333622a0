// SPDX-License-Identifier: Apache-2.0
// The doctor report as GitHub-flavoured markdown, for pasting into a ticket.
#include <algorithm>
#include <cctype>

#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"
#include "doctor/finding_ids.h"
#include "doctor/render/render.h"

namespace cardiac::doctor {
namespace {

constexpr std::size_t kMaxEvidence = 10;
constexpr std::size_t kMaxLogLines = 20;
constexpr std::size_t kMaxEvents = 50;

// Prose from the data must not turn into markup: a log-derived title with "<" or "*" or a
// "|" inside a table cell would change what the reader sees.
std::string md(std::string_view text) {
  std::string clean = detail::printable(text);
  std::string out;
  out.reserve(clean.size());
  auto word = [&](std::size_t i) {
    return i < clean.size() && std::isalnum(static_cast<unsigned char>(clean[i]));
  };
  for (std::size_t i = 0; i < clean.size(); ++i) {
    char c = clean[i];
    if (c == '\n' || c == '\t') {
      out += ' ';
      continue;
    }
    // GFM never emphasises with an underscore inside a word, so "num_workers" stays readable
    // when the ticket is read as plain text.
    bool intraword = c == '_' && i > 0 && word(i - 1) && word(i + 1);
    if (!intraword && std::string_view("\\`*_[]<>|~#").find(c) != std::string_view::npos) {
      out += '\\';
    }
    out += c;
  }
  return out;
}

std::size_t longest_backtick_run(std::string_view s) {
  std::size_t best = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

// An inline code span that survives backticks in its content.
std::string code(std::string_view text) {
  std::string clean = detail::printable(text);
  for (auto& c : clean) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  std::string fence(longest_backtick_run(clean) + 1, '`');
  bool pad = !clean.empty() && (clean.front() == '`' || clean.back() == '`');
  return pad ? fence + " " + clean + " " + fence : fence + clean + fence;
}

// A fenced block indented by `indent` (to sit inside a list item); the fence is longer than
// any backtick run in the lines so a log line cannot close it early.
std::string fenced(const std::vector<std::string_view>& lines, std::string_view indent) {
  std::size_t run = 0;
  for (auto l : lines) run = std::max(run, longest_backtick_run(l));
  std::string fence(std::max<std::size_t>(3, run + 1), '`');
  std::string out = fmt::format("{}{}\n", indent, fence);
  for (auto l : lines) out += fmt::format("{}{}\n", indent, l);
  out += fmt::format("{}{}\n", indent, fence);
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

void render_evidence(const Evidence& e, std::string& out) {
  std::vector<std::string> meta;
  if (e.time) meta.push_back(format_iso8601(*e.time));
  if (!e.source.empty()) meta.push_back(code(e.source));
  std::string meta_text = fmt::format("{}", fmt::join(meta, " · "));
  if (e.kind == "log") {
    out += fmt::format("- {}{}\n\n", meta.empty() ? "log" : meta_text, ":");
    std::string text = detail::printable(e.text);
    auto lines = split_lines(text);
    std::size_t dropped = lines.size() > kMaxLogLines ? lines.size() - kMaxLogLines : 0;
    lines.resize(lines.size() - dropped);
    out += fenced(lines, "  ");
    if (dropped > 0) out += fmt::format("  … {} more lines\n", dropped);
  } else {
    out += fmt::format("- {}{}\n", md(e.text), meta.empty() ? "" : " (" + meta_text + ")");
  }
  if (!e.series.empty()) out += fmt::format("  - {}\n", md(detail::series_summary(e)));
}

void render_cross_check(const CrossCheckPlan& plan, const CrossCheckPlan*& first,
                        std::string& out) {
  const detail::PlanRepeat seen = detail::plan_repeat(plan, first);
  if (first == nullptr) first = &plan;
  if (seen.whole) {
    out += "**Cross-check**: the same plan as the first one above.\n\n";
    return;
  }
  out += "**Cross-check**\n\n";
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    out += fmt::format("{}. {}\n", i + 1, md(plan.steps[i]));
  }
  if (!plan.steps.empty()) out += "\n";
  if (!plan.outcomes.empty()) {
    out += "| If you see | it means |\n|---|---|\n";
    for (const auto& o : plan.outcomes) {
      out += fmt::format("| {} | {} |\n", md(o.observation), md(o.meaning));
    }
    out += "\n";
  }
  if (seen.checks) {
    out += "Physical checks and room: as in the first cross-check above.\n\n";
    return;
  }
  if (!plan.physical_checks.empty()) {
    out += "Physical checks:\n\n";
    for (const auto& c : plan.physical_checks) out += fmt::format("- {}\n", md(c));
    out += "\n";
  }
  if (!plan.environment.empty()) out += fmt::format("Room: {}\n\n", md(plan.environment));
}

void render_finding(const Finding& f, const CrossCheckPlan*& first_plan, std::string& out) {
  std::string who = detail::gpu_label(f.gpu);
  out += fmt::format("#### {} · {}{}\n\n", upper(severity_name(f.severity)),
                     who.empty() ? "" : md(who) + ": ", md(f.title));
  out += fmt::format("{} · confidence {}\n\n", code(f.id), confidence_name(f.confidence));
  if (!f.explanation.empty()) {
    for (auto para : split_lines(f.explanation)) {
      if (!trim(para).empty()) out += md(para) + "\n\n";
    }
  }
  if (!f.evidence.empty()) {
    out += "**Evidence**\n\n";
    std::size_t shown = std::min(f.evidence.size(), kMaxEvidence);
    for (std::size_t i = 0; i < shown; ++i) render_evidence(f.evidence[i], out);
    if (f.evidence.size() > shown) {
      out += fmt::format("- … {} more (see `cardiac doctor --json`)\n", f.evidence.size() - shown);
    }
    out += "\n";
  }
  if (!f.actions.empty()) {
    out += "**Next steps**\n\n";
    for (std::size_t i = 0; i < f.actions.size(); ++i) {
      out += fmt::format("{}. {}\n", i + 1, md(f.actions[i]));
    }
    out += "\n";
  }
  if (f.cross_check) render_cross_check(*f.cross_check, first_plan, out);
  if (!f.runbook.empty()) {
    out += fmt::format("**Runbook:** [{}]({})\n\n", md(f.id), runbook_href(f.runbook));
  }
  if (f.confidence == Confidence::kLow) {
    out +=
        "> Confidence is low: the evidence fits this cause but is thin. Confirm it before "
        "acting.\n\n";
  }
}

void render_gpus(const Report& r, std::string& out) {
  out += "## GPUs\n\n";
  if (r.gpus.empty()) {
    out += "No GPU was found (NVML, the PCI bus and the kernel log named none).\n\n";
    return;
  }
  out += "| GPU | PCI bus id | Name | UUID | Serial |\n|---|---|---|---|---|\n";
  auto cell = [](const std::string& s) { return s.empty() ? std::string("—") : md(s); };
  for (const auto& g : r.gpus) {
    out += fmt::format(
        "| {} | {} | {} | {} | {} |\n", g.index ? std::to_string(*g.index) : std::string("—"),
        cell(detail::display_bus_id(g.pci_bus_id)), cell(g.name), cell(g.uuid), cell(g.serial));
  }
  out += "\n";
}

void render_events(const Report& r, std::string& out) {
  if (r.events.empty()) return;
  out += fmt::format("## Kernel events\n\n{} event{} ({}).\n\n", r.events.size(),
                     r.events.size() == 1 ? "" : "s", md(detail::event_kinds_text(r)));
  out += "| Time | Kind | Xid | PCI bus id | Message |\n|---|---|---|---|---|\n";
  std::size_t shown = std::min(r.events.size(), kMaxEvents);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& e = r.events[i];
    bool numbered = (e.kind == kmsg::EventKind::kXid || e.kind == kmsg::EventKind::kSxid) && e.xid;
    const std::string& text = e.message.empty() ? e.raw : e.message;
    out += fmt::format(
        "| {} | {} | {} | {} | {} |\n", e.time_ns ? format_iso8601(*e.time_ns) : std::string("—"),
        md(kmsg::event_kind_name(e.kind)), numbered ? std::to_string(*e.xid) : std::string("—"),
        e.pci_bus_id.empty() ? std::string("—") : md(detail::display_bus_id(e.pci_bus_id)),
        text.empty() ? std::string("—") : code(text));
  }
  if (r.events.size() > shown) {
    out += fmt::format("\n… {} more in `cardiac doctor --json`.\n", r.events.size() - shown);
  }
  out += "\n";
}

}  // namespace

std::string render_markdown(const Report& r) {
  std::string out;
  auto counts = detail::count_severities(r);
  bool problems = counts.warning + counts.critical > 0;
  out += fmt::format("# cardiac doctor: {}\n\n",
                     r.hostname.empty() ? std::string("this host") : md(r.hostname));
  out += fmt::format("{} · worst: **{}** · {}\n\n", detail::generated_text(r),
                     upper(severity_name(r.worst())), detail::counts_text(counts));
  out += "**Looked at**\n\n";
  for (const auto& l : detail::looked_at(r)) out += fmt::format("- {}\n", md(l));
  for (const auto& s : r.sources.skipped) out += fmt::format("- skipped: {}\n", md(s));
  out += "\n";
  render_gpus(r, out);
  out += "## Findings\n\n";
  if (!problems) {
    out +=
        "**No problems found.** Nothing above info in the sources listed above; a skipped "
        "source was not judged.\n\n";
  }
  const CrossCheckPlan* first_plan = nullptr;
  for (Category c : detail::category_order(r)) {
    out += fmt::format("### {}\n\n", detail::category_heading(c));
    for (const auto& f : r.findings) {
      if (f.category == c) render_finding(f, first_plan, out);
    }
  }
  render_events(r, out);
  return out;
}

}  // namespace cardiac::doctor
