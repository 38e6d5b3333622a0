// SPDX-License-Identifier: Apache-2.0
// The dashboard's overview: the agent's status, alerts, events, incidents and queue turned into
// what the page draws (a card per GPU, the host, firing alerts, a timeline), as JSON.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/clock.h"

namespace cardiac::dashboard {

// One part the overview is built from: its JSON, or why it could not be read. A part that could
// not be read is shown as broken, never as empty (an unreadable alert list is not "no alerts").
struct Part {
  nlohmann::json value;
  std::string error;  // non-empty: the part could not be read

  static Part ok(nlohmann::json v) { return {std::move(v), {}}; }
  static Part failed(std::string why) { return {nullptr, std::move(why)}; }
};

struct OverviewInput {
  nlohmann::json status;      // GET /api/v1/status (cardiac.status/v1)
  Part alerts;                // GET /api/v1/alerts (open ones)
  Part events;                // GET /api/v1/events (newest first or last; sorted here)
  Part incidents;             // [{"id","gpu","kind","started_ns","ended_ns"?,"evidence"}]
  std::optional<Part> queue;  // GET /api/v1/queue; nullopt when the agent runs no queue
  std::string hostname;       // the agent's
  bool fleet = false;         // [fleet] prometheus is set: the page offers its Fleet tab
  TimeNs now = 0;
};

// How many timeline entries the overview carries (newest first).
inline constexpr std::size_t kTimelineEntries = 50;

// The GPU card's colour, from the status verdict ("OK" → "ok", "WARN" → "warn", "FAIL" →
// "fail"; anything else, e.g. no verdict, "unknown").
std::string verdict_class(const nlohmann::json& verdict);

// The reason in words for a GPU or the host: its reasons' texts joined with "; ", "healthy"
// when it has none and is OK, and the health detail or "no reading" otherwise.
std::string reason_words(const nlohmann::json& item);

// cardiac.dashboard.overview/v1; see docs/dashboard.md for the fields.
nlohmann::json overview(const OverviewInput& in);

}  // namespace cardiac::dashboard
