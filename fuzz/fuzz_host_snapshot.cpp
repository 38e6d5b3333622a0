// SPDX-License-Identifier: Apache-2.0
// Fuzz target for a whole host collection: the input is a captured /proc and /sys tree in one
// text (format below), served through MemFs to collect_host(); then rates, the JSON form and
// the host verdicts are built from it, as `cardiac status --json` does.
//
// Input format, one directive per line:
//   "@@ /proc/meminfo"          a file; the lines up to the next directive are its content
//   "@> /sys/.../driver TARGET" a symbolic link
//   "@$ /mnt/data T F A"        statvfs of a mount point: total, free and available bytes
// Lines before the first directive are ignored. scripts/fuzz.sh writes each fixture tree of
// tests/fixtures/hosts in this form as a seed.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "check.h"
#include "health/verdict.h"
#include "host/host.h"
#include "host/host_json.h"
#include "nvml/gpu.h"
#include "platform/fs.h"

namespace {

using namespace cardiac;

constexpr TimeNs kFirstSample = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z
constexpr TimeNs kSecondSample = kFirstSample + 5'000'000'000;

// "a b" -> {"a", "b"}; the second part is empty when there is no space.
std::pair<std::string_view, std::string_view> split_first(std::string_view s) {
  const auto sp = s.find(' ');
  if (sp == std::string_view::npos) return {s, {}};
  return {s.substr(0, sp), s.substr(sp + 1)};
}

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

void add_disk(MemFs& fs, std::string_view spec) {
  auto [mount, rest] = split_first(spec);
  auto [total, rest2] = split_first(rest);
  auto [free, available] = split_first(rest2);
  auto t = to_u64(total);
  auto f = to_u64(free);
  auto a = to_u64(available);
  if (!t || !f || !a) return;
  fs.add_disk(std::string(mount), DiskSpace{*t, *f, *a});
}

MemFs build_fs(std::string_view text) {
  MemFs fs;
  std::optional<std::string> path;
  std::string content;
  auto flush = [&] {
    if (path) fs.add_file(*path, content);
    path.reset();
    content.clear();
  };
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.starts_with("@@ ")) {
      flush();
      path = std::string(line.substr(3));
    } else if (line.starts_with("@> ")) {
      flush();
      auto [from, to] = split_first(line.substr(3));
      fs.add_link(std::string(from), std::string(to));
    } else if (line.starts_with("@$ ")) {
      flush();
      add_disk(fs, line.substr(3));
    } else if (path) {
      content.append(line);
      if (nl != std::string_view::npos) content.push_back('\n');
    }
  }
  flush();
  return fs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const MemFs fs = build_fs(fuzz::as_text(data, size));
  const host::HostSnapshot prev = host::collect_host(fs, kFirstSample);
  const host::HostSnapshot cur = host::collect_host(fs, kSecondSample);
  const host::HostRates rates = host::compute_rates(prev, cur);
  // host_json.h: built for `--json` and the API; dump() with the default (strict) handler
  // throws on invalid UTF-8, so this also checks that untrusted strings were made valid.
  (void)host::to_json(prev, nullptr).dump();
  (void)host::to_json(cur, &rates).dump();
  for (const health::Verdict& v :
       {health::judge_host(cur, &rates), health::judge_inventory(nvml::GpuSnapshot{}, cur)}) {
    // verdict.h: reasons are worst first, and the verdict is the worst of them.
    for (std::size_t i = 0; i < v.reasons.size(); ++i) {
      CARDIAC_FUZZ_CHECK(v.reasons[i].level <= v.level);
      if (i > 0) CARDIAC_FUZZ_CHECK(v.reasons[i].level <= v.reasons[i - 1].level);
    }
  }
  return 0;
}
