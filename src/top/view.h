// SPDX-License-Identifier: Apache-2.0
// The state a person changes with keys (which view, sort order, filter, selection, help) and
// what it selects from a snapshot: the rows of each view, sorted and filtered. Pure.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "top/snapshot.h"

namespace cardiac::top {

enum class View { kGpus = 0, kProcesses = 1, kAlerts = 2, kQueue = 3 };
inline constexpr std::size_t kViewCount = 4;

// Keys as the view model sees them: a Unicode code point, or one of these.
enum Key : int {
  kKeyUp = 0x200001,
  kKeyDown,
  kKeyLeft,
  kKeyRight,
  kKeyPageUp,
  kKeyPageDown,
  kKeyHome,
  kKeyEnd,
  kKeyBackTab,
  kKeyBackspace,
  kKeyEnter,
  kKeyEscape,
};

struct SortKey {
  const char* name;
  bool descending;  // the direction it starts in: the largest or worst first for measurements
};

// The sort keys of a view, in the order `s` and the arrow keys step through them.
std::span<const SortKey> sort_keys(View v);

struct SortState {
  std::size_t key = 0;
  bool descending = false;
};

struct ViewState {
  View view = View::kGpus;
  // Each view starts on its first key in that key's direction (processes by memory, largest
  // first; alerts worst first).
  std::array<SortState, kViewCount> sort{{{0, false}, {0, true}, {0, true}, {0, false}}};
  std::string filter;
  bool editing = false;  // the filter prompt is open
  std::string draft;     // what is typed at it
  bool help = false;
  std::array<std::size_t, kViewCount> selected{};  // row in the current, sorted list
};

enum class Action { kNone, kRedraw, kQuit };

// One key: q quits; tab, shift-tab and 1-4 switch views; s steps the sort key, S (or r)
// reverses it, left and right step it back and forth; up, down, page up/down, home and end
// move the selection; / opens the filter prompt (Enter applies, Esc cancels, an empty filter
// clears it); Esc clears the filter; h or ? shows the help, which any key closes.
Action handle_key(ViewState& s, int key);

// A filter: GPU indices ("3", "0,5") or else a case-insensitive substring.
struct Filter {
  std::vector<unsigned> gpus;
  std::string text;  // lower case
  bool empty() const { return gpus.empty() && text.empty(); }
};
Filter parse_filter(std::string_view text);

// A GPU matches by index, or by the name, user or job of one of its processes.
bool matches(const Filter& f, const GpuInfo& g);
// A process by its GPU, or by name, user or job.
bool matches(const Filter& f, const ProcessInfo& p);
// An alert by its GPU label, or by rule or description.
bool matches(const Filter& f, const AlertInfo& a);
// A job by a GPU it holds, or by user or name.
bool matches(const Filter& f, const JobInfo& j);

// The rows of each view: filtered, sorted by the view's sort state (ties in id order).
std::vector<const GpuInfo*> gpu_rows(const Snapshot& s, const ViewState& v);
std::vector<const ProcessInfo*> process_rows(const Snapshot& s, const ViewState& v);
std::vector<const AlertInfo*> alert_rows(const Snapshot& s, const ViewState& v);
std::vector<const JobInfo*> job_rows(const Snapshot& s, const ViewState& v);

// How many rows the current view has.
std::size_t row_count(const Snapshot& s, const ViewState& v);
// Keeps each view's selection inside its rows (after new data or a new filter).
void clamp_selection(ViewState& v, const Snapshot& s);

}  // namespace cardiac::top
