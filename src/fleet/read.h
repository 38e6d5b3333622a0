// SPDX-License-Identifier: Apache-2.0
// The fleet view read from a Prometheus: its targets, one instant query and its alerts.
#pragma once

#include <string>

#include "core/result.h"
#include "fleet/prometheus.h"
#include "fleet/view.h"

namespace cardiac::fleet {

// Fails when any of the three reads fails: a view without the alerts would look calmer than
// the fleet is. A job Prometheus does not scrape is an error that names the jobs it does.
Result<FleetView> read_fleet(const Prometheus& prometheus, const std::string& job);

// The view as text: one line per node, then the GPUs and alerts of every node that is not OK.
std::string render_text(const FleetView& view, bool all_gpus);

}  // namespace cardiac::fleet
