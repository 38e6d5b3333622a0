// SPDX-License-Identifier: Apache-2.0
// Traffic as JSON: `cardiac net top --json` and the `traffic` object of `cardiac doctor --json`.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "netproc/traffic.h"

namespace cardiac::netproc {

// {window_s, link: {name, speed_mbps}, loopback_included, sent_bytes_per_s,
//  received_bytes_per_s, sockets, unowned_bytes, talkers: [...], notes: [...]}, at most
// `count` talkers. Unknown values are null.
[[nodiscard]] nlohmann::json to_json(const Traffic& t, std::size_t count);
[[nodiscard]] nlohmann::json talker_json(const Talker& t);

}  // namespace cardiac::netproc
