// SPDX-License-Identifier: Apache-2.0
// Decoders for the server's compressed answers, so tests compare the very bytes it sent.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cardiac::server::test_support {

// nullopt when the input is not one whole stream of that coding.
std::optional<std::string> gunzip(std::string_view bytes);
std::optional<std::string> unbrotli(std::string_view bytes);

}  // namespace cardiac::server::test_support
