// SPDX-License-Identifier: Apache-2.0
#include "config/security_config.h"

#include <regex>

#include "config/toml_reader.h"
#include "core/format.h"
#include "core/strings.h"

namespace cardiac::config {
namespace {

Result<unsigned> port_number(std::string_view text) {
  auto v = parse_u64(trim(text));
  if (!v || *v == 0 || *v > 65535) {
    return fail(Error::invalid(fmt::format("\"{}\" is not a port (1 to 65535)", text)));
  }
  return static_cast<unsigned>(*v);
}

}  // namespace

Result<ListenPortRange> parse_listen_port(std::string_view text) {
  ListenPortRange r;
  std::string_view rest = trim(text);
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    r.proto = std::string(rest.substr(0, slash));
    if (r.proto != "tcp" && r.proto != "udp") {
      return fail(Error::invalid(fmt::format("\"{}\": the protocol must be tcp or udp", text)));
    }
    rest = rest.substr(slash + 1);
  }
  const auto dash = rest.find('-');
  auto low = port_number(rest.substr(0, dash));
  if (!low) return fail(low.error());
  r.low = r.high = *low;
  if (dash != std::string_view::npos) {
    auto high = port_number(rest.substr(dash + 1));
    if (!high) return fail(high.error());
    if (*high < *low) {
      return fail(Error::invalid(fmt::format("\"{}\": the range ends below its start", text)));
    }
    r.high = *high;
  }
  return r;
}

Status read_security(const toml::table& t, std::string_view origin, SecuritySettings& s) {
  TableReader r(t, "security", origin);
  CARDIAC_TRY(r.only({"allowed_gpu_commands", "allowed_listen_ports", "watch_interval"}));
  CARDIAC_TRY(r.get_duration("watch_interval", s.watch_interval, true));
  CARDIAC_TRY(r.get("allowed_gpu_commands", s.allowed_gpu_commands));
  if (const auto* list = r.node("allowed_gpu_commands"); list != nullptr && list->is_array()) {
    std::size_t i = 0;
    for (const auto& pattern : s.allowed_gpu_commands) {
      const auto& at = *list->as_array()->get(i++);
      if (pattern.empty() || pattern == "re:") {
        return fail(r.invalid_at("allowed_gpu_commands", at, "has an empty pattern"));
      }
      if (!pattern.starts_with("re:")) continue;
      try {
        std::regex compiled;
        compiled.assign(pattern.substr(3),
                        std::regex::extended);  // throws when it does not compile
      } catch (const std::regex_error& e) {
        return fail(
            r.invalid_at("allowed_gpu_commands", at,
                         fmt::format("\"{}\" is not a regular expression: {}", pattern, e.what())));
      }
    }
  }
  if (const auto* list = r.node("allowed_listen_ports")) {
    const auto* arr = list->as_array();
    if (arr == nullptr) {
      return fail(r.invalid("allowed_listen_ports",
                            "must be an array of ports (22, \"udp/53\", \"8000-8100\")"));
    }
    std::vector<ListenPortRange> ports;
    for (const auto& item : *arr) {
      Result<ListenPortRange> port = fail(Error::invalid("must be a port number or a string"));
      if (auto n = item.is_integer() ? item.value<std::int64_t>() : std::nullopt) {
        port = parse_listen_port(std::to_string(*n));
      } else if (auto text = item.value<std::string>()) {
        port = parse_listen_port(*text);
      }
      if (!port) {
        return fail(r.invalid_at("allowed_listen_ports", item, port.error().message));
      }
      ports.push_back(*port);
    }
    s.allowed_listen_ports = std::move(ports);
  }
  return {};
}

}  // namespace cardiac::config
