// SPDX-License-Identifier: Apache-2.0
// The [security] table of cardiac.toml: what may use a GPU outside a job and which ports may
// listen, the doctor's allow lists for its signs of compromise (docs/security.md).
#pragma once

#include <string_view>

#include <toml++/toml.h>

#include "config/config.h"
#include "core/result.h"

namespace cardiac::config {

// One allowed_listen_ports entry as text ("tcp/22", "8000-8100"); an error says why not.
[[nodiscard]] Result<ListenPortRange> parse_listen_port(std::string_view text);

// Reads [security] into `s`. Errors name file:line:column and the entry: unknown keys, wrong
// types, a regular expression that does not compile, a port outside 1..65535, a range whose
// end is below its start, a protocol other than tcp or udp.
[[nodiscard]] Status read_security(const toml::table& t, std::string_view origin,
                                   SecuritySettings& s);

}  // namespace cardiac::config
