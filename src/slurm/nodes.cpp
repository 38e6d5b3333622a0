// SPDX-License-Identifier: Apache-2.0
#include "slurm/nodes.h"

#include <ctime>
#include <limits>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::slurm {
namespace {

// The value of `key=` among the space-separated fields of `head` (values without spaces).
std::string field(std::string_view head, std::string_view key) {
  std::size_t at = 0;
  while (at < head.size()) {
    std::size_t end = head.find(' ', at);
    if (end == std::string_view::npos) end = head.size();
    std::string_view tok = head.substr(at, end - at);
    if (tok.size() > key.size() && tok.starts_with(key) && tok[key.size()] == '=') {
      return std::string(tok.substr(key.size() + 1));
    }
    at = end + 1;
  }
  return {};
}

// "cardiac: GPU lost [root@1796429958]" → reason, user, time.
void split_reason(std::string_view text, NodeInfo& n) {
  text = trim(text);
  auto open = text.rfind(" [");
  if (open != std::string_view::npos && text.ends_with(']')) {
    std::string_view stamp = text.substr(open + 2, text.size() - open - 3);
    auto at = stamp.rfind('@');
    if (at != std::string_view::npos) {
      n.reason_user = std::string(stamp.substr(0, at));
      n.reason_time = parse_slurm_time(stamp.substr(at + 1)).value_or(0);
      text = text.substr(0, open);
    }
  }
  n.reason = std::string(trim(text));
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(at, end - at));
    if (!line.empty()) out.push_back(line);
    at = end + 1;
  }
  return out;
}

}  // namespace

std::optional<TimeNs> parse_slurm_time(std::string_view text) {
  text = trim(text);
  // Nanoseconds since the epoch end in 2262: a later time (a year up to 9999 parses) is no
  // time cardiac can hold, not a number to wrap.
  constexpr auto kMaxSeconds = std::numeric_limits<TimeNs>::max() / kNsPerSec;
  if (auto secs = parse_u64(text)) {
    if (*secs > static_cast<std::uint64_t>(kMaxSeconds)) return std::nullopt;
    return static_cast<TimeNs>(*secs) * kNsPerSec;
  }
  // "2026-12-05T00:19:18": fixed positions, each part a number.
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  auto part = [&](std::size_t at, std::size_t len) {
    return parse_u64(text.substr(at, len)).value_or(100000);
  };
  const auto y = static_cast<int>(part(0, 4));
  const auto mo = static_cast<int>(part(5, 2));
  const auto d = static_cast<int>(part(8, 2));
  const auto h = static_cast<int>(part(11, 2));
  const auto mi = static_cast<int>(part(14, 2));
  const auto s = static_cast<int>(part(17, 2));
  if (y > 9999 || mo > 12 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  tm.tm_isdst = -1;  // Slurm prints local time
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1) || t < 0 || t > kMaxSeconds) return std::nullopt;
  return static_cast<TimeNs>(t) * kNsPerSec;
}

Result<std::vector<NodeInfo>> parse_show_node(std::string_view text) {
  std::vector<NodeInfo> out;
  std::size_t number = 0;
  for (std::string_view line : lines_of(text)) {
    ++number;
    if (line.starts_with("No nodes in the system")) continue;
    // The reason comes last and may hold spaces; everything before it is key=value fields.
    std::string_view head = line;
    NodeInfo n;
    auto r = line.find(" Reason=");
    if (r != std::string_view::npos) {
      head = line.substr(0, r);
      split_reason(line.substr(r + 8), n);
    }
    n.name = field(head, "NodeName");
    if (n.name.empty()) {
      return fail(Error::parse(fmt::format("scontrol show node: line {} has no NodeName=: '{}'",
                                           number, line.substr(0, 80))));
    }
    n.state = field(head, "State");
    for (auto flag : split(n.state, '+')) {
      if (flag == "DRAIN" || flag == "DRAINED" || flag == "DRAINING") n.drain = true;
    }
    out.push_back(std::move(n));
  }
  return out;
}

Result<JobInfo> parse_show_job(std::string_view text) {
  auto lines = lines_of(text);
  if (lines.empty()) return fail(Error::parse("scontrol show job: no output"));
  std::string_view line = lines.front();
  JobInfo j;
  j.id = field(line, "JobId");
  if (j.id.empty()) {
    return fail(
        Error::parse(fmt::format("scontrol show job: no JobId= in '{}'", line.substr(0, 80))));
  }
  j.state = field(line, "JobState");
  j.start = parse_slurm_time(field(line, "StartTime")).value_or(0);
  j.end = parse_slurm_time(field(line, "EndTime")).value_or(0);
  j.nodes = field(line, "NodeList");
  return j;
}

Result<std::vector<unsigned>> parse_gpu_list(std::string_view list) {
  std::vector<unsigned> out;
  for (auto item : split(trim(list), ',')) {
    item = trim(item);
    if (item.empty()) continue;
    auto v = parse_u64(item);
    if (!v || *v > 1023) {
      return fail(Error::invalid(
          fmt::format("GPU '{}' is not an index (UUIDs and MIG devices are not mapped)", item)));
    }
    out.push_back(static_cast<unsigned>(*v));
  }
  return out;
}

}  // namespace cardiac::slurm
