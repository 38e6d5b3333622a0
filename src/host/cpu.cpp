// SPDX-License-Identifier: Apache-2.0
// /proc/stat and /proc/loadavg readers and CPU usage from two samples.
#include "host/cpu.h"

#include <array>
#include <cctype>
#include <unordered_map>

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

using detail::excerpt;
using detail::line_error;

// /proc/stat numbers CPUs with an int; a bigger index means the line is not what it claims.
constexpr std::uint64_t kMaxCpuIndex = 1u << 20;

bool is_key(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

Result<CpuTimes> parse_times(const std::vector<std::string_view>& f, std::size_t line) {
  constexpr std::size_t kMinColumns = 4;
  if (f.size() < 1 + kMinColumns) {
    return fail(line_error(line, fmt::format("'{}' has {} counters, need at least {}",
                                             excerpt(f[0]), f.size() - 1, kMinColumns)));
  }
  std::array<std::uint64_t, 8> v{};
  for (std::size_t i = 1; i < f.size(); ++i) {
    auto n = parse_u64(f[i]);
    if (!n) return fail(line_error(line, fmt::format("bad counter '{}'", excerpt(f[i]))));
    if (i - 1 < v.size()) v[i - 1] = *n;
  }
  CpuTimes t{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], 0};
  t.columns = static_cast<unsigned>(std::min<std::size_t>(f.size() - 1, v.size()));
  return t;
}

double pct(std::uint64_t part, std::uint64_t whole) {
  return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

std::uint64_t delta(std::uint64_t a, std::uint64_t b) {
  return b >= a ? b - a : 0;
}

std::optional<CpuUsage> usage_between(const CpuTimes& a, const CpuTimes& b) {
  const unsigned columns = std::min(a.columns, b.columns);
  const std::uint64_t du = delta(a.user, b.user) + delta(a.nice, b.nice);
  const std::uint64_t ds =
      delta(a.system, b.system) + delta(a.irq, b.irq) + delta(a.softirq, b.softirq);
  const std::uint64_t di = delta(a.idle, b.idle);
  const std::uint64_t dw = delta(a.iowait, b.iowait);
  const std::uint64_t dst = delta(a.steal, b.steal);
  const std::uint64_t all = du + ds + di + dw + dst;
  if (all == 0) return std::nullopt;
  CpuUsage u;
  u.user = pct(du, all);
  u.system = pct(ds, all);
  u.idle = pct(di, all);
  if (columns >= 5) u.iowait = pct(dw, all);
  if (columns >= 8) u.steal = pct(dst, all);
  u.busy = pct(all - di - dw, all);
  return u;
}

}  // namespace

std::uint64_t CpuTimes::sum() const {
  return user + nice + system + idle + iowait + irq + softirq + steal;
}

Result<CpuStat> parse_proc_stat(std::string_view text) {
  CpuStat out;
  bool have_total = false;
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t line = i + 1;
    auto f = split_ws(lines[i]);
    if (f.empty()) continue;
    if (!is_key(f[0])) {
      return fail(line_error(line, fmt::format("unexpected text '{}'", excerpt(lines[i]))));
    }
    if (f[0] == "cpu") {
      auto t = parse_times(f, line);
      if (!t) return fail(t.error());
      out.total = *t;
      have_total = true;
    } else if (f[0].starts_with("cpu")) {
      auto idx = parse_u64(f[0].substr(3));
      if (!idx || *idx > kMaxCpuIndex) {
        return fail(line_error(line, fmt::format("bad cpu name '{}'", excerpt(f[0]))));
      }
      auto t = parse_times(f, line);
      if (!t) return fail(t.error());
      out.cores.push_back(CoreTimes{static_cast<unsigned>(*idx), *t});
    } else if (f[0] == "procs_running" || f[0] == "procs_blocked") {
      auto n = f.size() == 2 ? parse_u64(f[1]) : std::nullopt;
      if (!n) return fail(line_error(line, fmt::format("bad value for {}", f[0])));
      (f[0] == "procs_running" ? out.procs_running : out.procs_blocked) = n;
    }
  }
  if (!have_total) return fail(Error::parse("no aggregate 'cpu' line"));
  return out;
}

Result<LoadAvg> parse_loadavg(std::string_view text) {
  auto f = split_ws(trim(text));
  if (f.empty()) return fail(line_error(1, "empty"));
  if (f.size() < 4) return fail(line_error(1, "expected 'l1 l5 l15 running/total'"));
  LoadAvg out;
  auto l1 = parse_double(f[0]);
  auto l5 = parse_double(f[1]);
  auto l15 = parse_double(f[2]);
  if (!l1 || !l5 || !l15 || *l1 < 0 || *l5 < 0 || *l15 < 0) {
    return fail(line_error(1, fmt::format("bad load average '{}'", excerpt(trim(text)))));
  }
  auto tasks = split(f[3], '/');
  auto running = tasks.size() == 2 ? parse_u64(tasks[0]) : std::nullopt;
  auto total = tasks.size() == 2 ? parse_u64(tasks[1]) : std::nullopt;
  if (!running || !total) {
    return fail(line_error(1, fmt::format("bad task counts '{}'", excerpt(f[3]))));
  }
  out.load1 = *l1;
  out.load5 = *l5;
  out.load15 = *l15;
  out.running = *running;
  out.total = *total;
  return out;
}

CpuUsageSample compute_cpu_usage(const CpuStat& prev, const CpuStat& cur) {
  CpuUsageSample out;
  out.total = usage_between(prev.total, cur.total);
  std::unordered_map<unsigned, const CpuTimes*> before;
  before.reserve(prev.cores.size());
  for (const CoreTimes& c : prev.cores) before.emplace(c.cpu, &c.times);
  for (const CoreTimes& c : cur.cores) {
    auto it = before.find(c.cpu);
    if (it == before.end()) continue;
    if (auto u = usage_between(*it->second, c.times)) out.cores.push_back(CoreUsage{c.cpu, *u});
  }
  return out;
}

Result<CpuStat> collect_cpu_stat(const FileSystem& fs) {
  return detail::read_and_parse(fs, "/proc/stat", parse_proc_stat);
}

Result<LoadAvg> collect_loadavg(const FileSystem& fs) {
  return detail::read_and_parse(fs, "/proc/loadavg", parse_loadavg, 4096);
}

}  // namespace cardiac::host
