// SPDX-License-Identifier: Apache-2.0
// What a configuration re-read on SIGHUP changes (Agent::reload): the keys the running agent
// can take over live, and those that only a restart applies.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace cardiac::agent {

// The inputs of the rule set: default_rules, expected_gpus, the rules file's path and its text
// (read now; an unreadable file gives the error text, so that it differs from any content).
// Equal fingerprints mean the rules are the same and their engine keeps its state untouched.
[[nodiscard]] std::string rules_fingerprint(const config::AgentSettings& a);

// Whether the notifiers differ, ignoring where in the file each table is.
[[nodiscard]] bool notifiers_changed(const config::Config& running, const config::Config& next);

// The changed keys that the running agent does not apply ("[agent] listen", "[queue]"), in
// file order. [doctor] is not read by the agent and never listed.
[[nodiscard]] std::vector<std::string> restart_keys(const config::Config& running,
                                                    const config::Config& next);

}  // namespace cardiac::agent
