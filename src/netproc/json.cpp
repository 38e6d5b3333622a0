// SPDX-License-Identifier: Apache-2.0
#include "netproc/json.h"

#include <cmath>

#include "core/text.h"

namespace cardiac::netproc {
namespace {

using nlohmann::json;

json rounded(double v) {
  return std::round(v * 10) / 10;
}

// Command lines and names can hold any byte; dump() throws on invalid UTF-8.
json text(const std::string& s) {
  return valid_utf8(s);
}

json text_or_null(const std::string& s) {
  return s.empty() ? json(nullptr) : text(s);
}

json percent(const std::optional<double>& v) {
  return v ? rounded(*v) : json(nullptr);
}

}  // namespace

json talker_json(const Talker& t) {
  return json{{"pid", t.process.pid},
              {"uid", t.process.uid},
              {"user", text(t.process.user)},
              {"comm", text_or_null(t.process.comm)},
              {"cmdline", text_or_null(t.process.cmdline)},
              {"sent_bytes", t.sent_bytes},
              {"received_bytes", t.received_bytes},
              {"sent_bytes_per_s", std::llround(t.sent_bytes_per_s)},
              {"received_bytes_per_s", std::llround(t.received_bytes_per_s)},
              {"sent_link_pct", percent(t.sent_link_percent)},
              {"received_link_pct", percent(t.received_link_percent)},
              {"sockets", t.sockets},
              {"remote_count", t.remote_count},
              {"top_remotes", t.top_remotes},
              {"udp_drops", t.udp_drops}};
}

json to_json(const Traffic& t, std::size_t count) {
  json talkers = json::array();
  json notes = json::array();
  for (const auto& n : t.notes) notes.push_back(text(n));
  for (std::size_t i = 0; i < t.talkers.size() && i < count; ++i) {
    talkers.push_back(talker_json(t.talkers[i]));
  }
  return json{{"window_s", rounded(t.window_s)},
              {"link",
               {{"name", t.link.name.empty() ? json(nullptr) : text(t.link.name)},
                {"speed_mbps", t.link.speed_mbps ? json(*t.link.speed_mbps) : json(nullptr)}}},
              {"loopback_included", t.loopback_included},
              {"sent_bytes_per_s", std::llround(t.sent_bytes_per_s)},
              {"received_bytes_per_s", std::llround(t.received_bytes_per_s)},
              {"sockets", t.sockets},
              {"unowned_bytes", t.unowned_bytes},
              {"talkers", std::move(talkers)},
              {"notes", std::move(notes)}};
}

}  // namespace cardiac::netproc
