// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the pure /proc and /sys parsers of src/host: the first input byte picks the
// parser (modulo the table below), the rest is the file's text. The table also names the
// fixture files each parser reads, so scripts/fuzz.sh builds the seed corpus from it
// (CARDIAC_FUZZ_LIST_PARSERS=1 prints it: index, two-sample flag, fixture globs).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "check.h"
#include "host/cpu.h"
#include "host/disks.h"
#include "host/memory.h"
#include "host/mounts.h"
#include "host/network.h"
#include "host/pci.h"
#include "host/pressure.h"
#include "host/processes.h"
#include "host/system.h"

namespace {

using namespace cardiac;

// Rates and usage need two samples: "prev\n----\ncur" gives both (the seed corpus pairs the
// two captures of tests/fixtures/hosts/iowait-bottleneck); without the separator the text is
// compared with itself.
constexpr std::string_view kSampleSeparator = "\n----\n";

std::pair<std::string_view, std::string_view> two_samples(std::string_view text) {
  const auto sep = text.find(kSampleSeparator);
  if (sep == std::string_view::npos) return {text, text};
  return {text.substr(0, sep), text.substr(sep + kSampleSeparator.size())};
}

// Touches an error's text, so that building it (excerpts of the bad input) runs too.
template <class T>
void touch(const Result<T>& r) {
  if (!r) CARDIAC_FUZZ_CHECK(!r.error().what().empty());
}

void proc_stat(std::string_view text) {
  auto [a, b] = two_samples(text);
  auto prev = host::parse_proc_stat(a);
  auto cur = host::parse_proc_stat(b);
  touch(prev);
  touch(cur);
  if (!prev || !cur) return;
  const auto usage = host::compute_cpu_usage(*prev, *cur);
  if (usage.total) {
    CARDIAC_FUZZ_CHECK(usage.total->busy >= -0.001 && usage.total->busy <= 100.001);
  }
}

void loadavg(std::string_view text) {
  touch(host::parse_loadavg(text));
}

void meminfo(std::string_view text) {
  touch(host::parse_meminfo(text));
}

void diskstats(std::string_view text) {
  auto [a, b] = two_samples(text);
  auto prev = host::parse_diskstats(a);
  auto cur = host::parse_diskstats(b);
  touch(prev);
  touch(cur);
  if (!prev || !cur) return;
  for (const auto& d : *cur) (void)host::is_whole_disk(d.name);
  for (const auto& r : host::compute_disk_rates(*prev, *cur, 1.0)) {
    CARDIAC_FUZZ_CHECK(r.util_percent <= 100.0);
  }
  (void)host::compute_disk_rates(*prev, *cur, 0.0);
}

void net_dev(std::string_view text) {
  auto [a, b] = two_samples(text);
  auto prev = host::parse_net_dev(a);
  auto cur = host::parse_net_dev(b);
  touch(prev);
  touch(cur);
  if (!prev || !cur) return;
  (void)host::compute_net_rates(*prev, *cur, 5.0);
}

void link_speed(std::string_view text) {
  (void)host::parse_link_speed_mbps(text);
}

void pressure(std::string_view text) {
  touch(host::parse_pressure(text));
}

void mounts(std::string_view text) {
  auto m = host::parse_mounts(text);
  touch(m);
  if (!m) return;
  for (const auto& e : host::select_data_mounts(*m)) {
    CARDIAC_FUZZ_CHECK(host::is_data_filesystem(e.fs_type));
    (void)host::is_network_filesystem(e.fs_type);
  }
}

void pid_stat(std::string_view text) {
  touch(host::parse_proc_pid_stat(text));
}

void cmdline(std::string_view text) {
  (void)host::parse_cmdline(text);
}

void uptime(std::string_view text) {
  touch(host::parse_uptime(text));
}

void proc_version(std::string_view text) {
  touch(host::parse_proc_version(text));
}

void nvidia_version(std::string_view text) {
  touch(host::parse_nvidia_driver_version(text));
}

void pci_hex(std::string_view text) {
  touch(host::parse_pci_hex(text));
}

void pci_link_speed(std::string_view text) {
  if (auto gts = host::parse_pci_link_speed(text)) (void)host::pcie_generation(*gts);
}

struct Parser {
  void (*run)(std::string_view);
  // Fixture files (globs under a captured root such as tests/fixtures/hosts/minimal) whose
  // contents seed this parser; space-separated.
  const char* fixtures;
  bool pairs = false;  // reads "prev\n----\ncur" (see kSampleSeparator)
};

// Append only: saved inputs (build-fuzz/crashes, fuzz/crashes-found) start with the index.
constexpr Parser kParsers[] = {
    {proc_stat, "proc/stat", true},
    {loadavg, "proc/loadavg"},
    {meminfo, "proc/meminfo"},
    {diskstats, "proc/diskstats", true},
    {net_dev, "proc/net/dev", true},
    {link_speed, "sys/class/net/*/speed"},
    {pressure, "proc/pressure/*"},
    {mounts, "proc/self/mounts proc/mounts"},
    {pid_stat, "proc/[0-9]*/stat"},
    {cmdline, "proc/[0-9]*/cmdline"},
    {uptime, "proc/uptime"},
    {proc_version, "proc/version"},
    {nvidia_version, "proc/driver/nvidia/version"},
    {pci_hex,
     "sys/bus/pci/devices/*/vendor sys/bus/pci/devices/*/device "
     "sys/bus/pci/devices/*/class"},
    {pci_link_speed,
     "sys/bus/pci/devices/*/current_link_speed "
     "sys/bus/pci/devices/*/max_link_speed"},
};
constexpr std::size_t kParserCount = sizeof(kParsers) / sizeof(kParsers[0]);

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (std::getenv("CARDIAC_FUZZ_LIST_PARSERS") != nullptr) {
    for (std::size_t i = 0; i < kParserCount; ++i) {
      std::printf("%zu\t%d\t%s\n", i, kParsers[i].pairs ? 1 : 0, kParsers[i].fixtures);
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Parser& parser = kParsers[data[0] % kParserCount];
  parser.run(fuzz::as_text(data + 1, size - 1));
  return 0;
}
