// SPDX-License-Identifier: Apache-2.0
// The doctor report in four forms: JSON (the "cardiac.doctor/v1" contract in docs/doctor.md),
// terminal text, GitHub-flavoured markdown for tickets and one self-contained HTML file.
#pragma once

#include "core/text.h"

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/finding.h"
#include "kmsg/event.h"

namespace cardiac::doctor {

inline constexpr std::string_view kDoctorSchema = "cardiac.doctor/v1";

// The whole report as the documented JSON object. Absent optional values are null, never 0 or
// "". Pure; never throws except std::bad_alloc.
nlohmann::json to_json(const Report& report);
// One finding / one kernel event in the same form as inside to_json(), for callers (the HTTP
// API) that serve them one at a time.
nlohmann::json finding_to_json(const Finding& finding);
nlohmann::json event_to_json(const kmsg::KernelEvent& event);

// Terminal report: header, findings grouped by category (worst first), summary line. `color`
// adds ANSI colours; without it the output is plain ASCII plus the UTF-8 already in the data.
std::string render_text(const Report& report, bool color);
// The same content as GitHub-flavoured markdown, for pasting into a ticket.
std::string render_markdown(const Report& report);
// One self-contained HTML document: inline CSS, inline SVG charts, no scripts and no external
// resources, so it opens offline and can be attached to a ticket. All data is HTML-escaped.
std::string render_html(const Report& report);

// Helpers shared by the renderers; not part of the contract.
namespace detail {

// Count of findings per severity (index = Severity value).
struct SeverityCounts {
  unsigned info = 0, warning = 0, critical = 0;
};
SeverityCounts count_severities(const Report& report);
// "Generated 2025-12-02T17:07:39.945Z", or what is known when the capture has no time.
std::string generated_text(const Report& report);
// "2 critical, 1 warning, 3 info".
std::string counts_text(const SeverityCounts& c);
// Lines describing what the run looked at ("kernel log: /dev/kmsg (12 events)", …), so that
// the absence of a finding can be read for what it is. Skipped sources are not included.
std::vector<std::string> looked_at(const Report& report);
// Categories in the order to show them: the one holding the worst finding first, ties in enum
// order; only categories that have findings.
std::vector<Category> category_order(const Report& report);
// "xid 3, aer 2" — kernel events per kind, in order of first appearance.
std::string event_kinds_text(const Report& report);
// A number as a person reads it: "88", "0.25", "1980", "12.5".
std::string format_number(double v);
// One-line summary of a chart series: "utilization_gpu 2–97 % over 60 points (threshold 90 %)".
std::string series_summary(const Evidence& e);
// Invalid UTF-8 and control characters made harmless (core/text.h): nlohmann refuses to dump
// invalid UTF-8, and a kernel log can hold any byte.
using cardiac::printable;
using cardiac::valid_utf8;
// A bus id in the normalised form ("00000000:3B:00.0" -> "0000:3b:00.0"); input that is not a
// bus id is returned unchanged so it is still shown.
std::string display_bus_id(const std::string& id);
// GpuRef::label() with the bus id in its normalised form ("GPU 3 (0000:3b:00.0)").
std::string gpu_label(const GpuRef& gpu);
// Capitalised category name for headings: "Hardware", "Driver", ….
std::string category_heading(Category c);
// Several suspect cards get plans that differ only in their steps (serial, slot): the
// renderers print the shared part (physical checks, room) once and the whole of an identical
// plan once. Which of `plan` an earlier printed plan already showed.
struct PlanRepeat {
  bool whole = false;   // every part: say "as above"
  bool checks = false;  // physical checks and room
};
PlanRepeat plan_repeat(const CrossCheckPlan& plan, const CrossCheckPlan* earlier);
// "The fault follows the card" → "the fault follows the card", to follow "If ".
std::string lower_first(std::string_view s);

}  // namespace detail
}  // namespace cardiac::doctor
