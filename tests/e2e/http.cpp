// SPDX-License-Identifier: Apache-2.0
// The HTTP GETs of http.h: the one translation unit of the tests' shared helpers that parses
// httplib.h.
#include "tests/e2e/http.h"

#include <httplib.h>

namespace cardiac::e2e {

std::pair<int, std::string> http_get(int port, const std::string& path) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(1, 0);
  cli.set_read_timeout(5, 0);
  auto r = cli.Get(path.c_str());
  if (!r) return {0, ""};
  return {r->status, r->body};
}

std::optional<std::string> http_get_body(int port, const std::string& path,
                                         const std::multimap<std::string, std::string>& params) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(10, 0);
  auto r = cli.Get(path.c_str(), params, httplib::Headers{});
  if (!r) return std::nullopt;
  return r->body;
}

}  // namespace cardiac::e2e
