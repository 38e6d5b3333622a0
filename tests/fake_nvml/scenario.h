// SPDX-License-Identifier: Apache-2.0
// Scenario files: loading (JSON or TOML into one JSON tree), validation, and the timeline.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fake {

using Json = nlohmann::json;

// The most devices a scenario may list; handles point into a fixed array of this size.
constexpr std::size_t kMaxDevices = 64;

struct TimelineEntry {
  double at = 0;
  std::optional<unsigned> device;  // nullopt: `set` and `unset` apply to every device
  Json set = Json::object();       // merged into the device; a null value removes the key
  std::vector<std::string> unset;  // keys removed (TOML cannot write null)
  Json set_system = Json::object();
};

struct Event {
  double at = 0;
  unsigned device = 0;
  unsigned long long type = 0;  // one event bit (0x8 Xid, ...)
  unsigned long long data = 0;  // eventData: the Xid number for Xid events
};

struct Hang {
  std::string function;            // exported name, or its family name without _vN
  std::optional<unsigned> device;  // nullopt: any call, device or not
  double seconds = 0;
  double after = 0;
  std::optional<double> until;
};

struct Scenario {
  std::string path;
  Json system = Json::object();  // top-level keys other than devices/timeline/events/hangs
  std::vector<Json> devices;
  std::vector<TimelineEntry> timeline;  // sorted by `at`; equal times keep file order
  std::vector<Event> events;            // sorted by `at`; equal times keep file order
  std::vector<Hang> hangs;
};

// The values in force at one moment: base values with a prefix of the timeline applied.
struct View {
  Json system;
  std::vector<Json> devices;
};

struct LoadResult {
  std::optional<Scenario> scenario;
  std::string error;  // one line naming the file, and line:column for syntax errors
};

// Reads and validates a scenario: TOML when the name ends in .toml, else JSON (comments allowed).
// Return codes in `returns` and `init_return` are normalised to integers.
LoadResult load_scenario(const std::string& path);

// How many timeline entries are due at scenario time t (they form a prefix: the list is sorted).
std::size_t entries_due(const Scenario& scenario, double t);

// The scenario with its first `applied` timeline entries applied.
View make_view(const Scenario& scenario, std::size_t applied);

// "nvmlInit_v2" → "nvmlInit": the name an entry may use to match every version of a function.
std::string_view family_name(std::string_view function);

// The code a `returns` object (normalised) sets for `function`: its exact exported name wins
// over the family name. nullopt when neither is listed.
std::optional<int> lookup_return(const Json& returns, std::string_view function);

}  // namespace fake
