// SPDX-License-Identifier: Apache-2.0
// HTTP GETs on loopback for the e2e, integration and Slurm tests. Defined once in http.cpp
// (library cardiac_e2e_support), so that the test files do not each parse cpp-httplib.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

namespace cardiac::e2e {

// GET http://127.0.0.1:`port``path` (1 s to connect, 5 s to read): the status and the body, or
// {0, ""} when nothing answers.
std::pair<int, std::string> http_get(int port, const std::string& path);

// GET with query parameters (10 s to read): the body, or nothing when there is no answer.
std::optional<std::string> http_get_body(int port, const std::string& path,
                                         const std::multimap<std::string, std::string>& params);

}  // namespace cardiac::e2e
