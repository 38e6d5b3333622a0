// SPDX-License-Identifier: Apache-2.0
// `cardiac top --fleet`: the fleet as Prometheus sees it (fleet::FleetView, docs/fleet.md), one
// line per node, a node expanded into its GPUs and firing alerts. Pure, like render.h: the same
// screen, state and size give the same frame. A read that failed is shown as an error, with
// the last view marked stale, never as an empty list that would read as a calm fleet.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "core/clock.h"
#include "fleet/view.h"
#include "top/render.h"
#include "top/view.h"

namespace cardiac::top {

// What the fetch thread brought: the newest view read, and the newest read's error.
struct FleetScreen {
  std::string prometheus;  // the URL, for the title before the first answer
  std::string job;
  std::optional<fleet::FleetView> view;  // the newest view that was read
  TimeNs read_at = 0;                    // when `view` was read
  std::string error;    // the newest read's error; not empty: `view`, if any, is stale
  bool waiting = true;  // no read has finished yet
};

// What keys change.
struct FleetState {
  std::size_t selected = 0;        // a node, in the view's order
  std::set<std::string> expanded;  // nodes shown with their GPUs and alerts, by instance
  bool help = false;
};

// "OK", "WARN", "FAIL", "UNKNOWN".
const char* verdict_label(fleet::Verdict v);
// OK green, WARN yellow, FAIL red; UNKNOWN yellow too: a node nobody can see is never green.
Style verdict_style(fleet::Verdict v);

// q quits; up, down, page up/down, home, end select a node; Enter, space and right expand or
// fold it (left folds); a expands every node, or folds them all when all are open; h or ?
// shows the help, which any key closes.
Action handle_fleet_key(FleetState& s, const FleetScreen& screen, int key);
// Keeps the selection on a node after a new view.
void clamp_selection(FleetState& s, const FleetScreen& screen);

// The node table's columns and the expanded GPUs' (docs/top.md).
std::span<const ColumnSpec> fleet_node_columns();
std::span<const ColumnSpec> fleet_gpu_columns();

Frame render_fleet(const FleetScreen& screen, const FleetState& s, const RenderOptions& o);

}  // namespace cardiac::top
