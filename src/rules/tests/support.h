// SPDX-License-Identifier: Apache-2.0
// The rules tests' helpers: rules from TOML text, sample views, times; and hand-built
// snapshots of a healthy machine, of which a test changes one reading.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>
#include <vector>

#include "host/host.h"
#include "nvml/gpu.h"
#include "rules/engine.h"
#include "rules/parse.h"

// Helpers shared by the rules tests: explicit times, hand-built views, rules from TOML text.

namespace cardiac::rules::testing {

constexpr TimeNs kT0 = 1'700'000'000LL * kNsPerSec;
inline TimeNs at_s(std::int64_t seconds) {
  return kT0 + seconds * kNsPerSec;
}

inline SampleView view(std::initializer_list<Point> points) {
  SampleView v;
  v.points = points;
  return v;
}

inline Labels gpu(int index) {
  return Labels{{"gpu", std::to_string(index)}};
}

inline std::vector<Rule> rules_from(std::string_view toml) {
  auto r = parse_rules(toml, "test.toml");
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().what());
  return r ? *r : std::vector<Rule>{};
}

// Transitions of one rule into `to`.
inline std::size_t count_to(const std::vector<Transition>& ts, AlertState to) {
  std::size_t n = 0;
  for (const auto& t : ts) n += t.to == to ? 1 : 0;
  return n;
}

}  // namespace cardiac::rules::testing

// Hand-built snapshots of a healthy machine for the rules tests; tests change one reading each.

namespace cardiac::rules::testing {

inline nvml::GpuReading healthy_gpu(unsigned index) {
  nvml::GpuReading g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.utilization_gpu = 80;
  g.utilization_memory = 40;
  g.memory_total = 80ULL << 30;
  g.memory_used = 40ULL << 30;
  g.temperature = 60;
  g.temperature_slowdown = 90;
  g.temperature_shutdown = 95;
  g.power_usage_mw = 300'000;
  g.clock_event_reasons = 0;
  g.ecc_volatile_corrected = 0;
  g.ecc_volatile_uncorrected = 0;
  g.retired_pages_sbe = 0;
  g.retired_pages_dbe = 0;
  g.retired_pages_pending = false;
  g.remapped_rows_uncorrected = 0;
  g.remapped_rows_pending = false;
  g.remapped_rows_failure = false;
  g.pcie_gen_current = 4;
  g.pcie_gen_max = 4;
  g.pcie_width_current = 16;
  g.pcie_width_max = 16;
  g.pcie_replay_counter = 0;
  g.processes_supported = true;
  g.processes.push_back(nvml::GpuProcess{1234, 1ULL << 30, "python", "compute"});
  return g;
}

inline nvml::GpuSnapshot healthy_gpus(unsigned n) {
  nvml::GpuSnapshot s;
  s.available = true;
  for (unsigned i = 0; i < n; ++i) s.gpus.push_back(healthy_gpu(i));
  return s;
}

inline host::HostSnapshot healthy_host() {
  host::HostSnapshot h;
  host::MemInfo m;
  m.total = 512ULL << 30;
  m.available = 256ULL << 30;
  m.swap_total = 8ULL << 30;
  m.swap_free = 8ULL << 30;
  h.memory = m;
  host::FilesystemUsage fs;
  fs.mount_point = "/";
  fs.total = 1000;
  fs.free = 500;
  fs.available = 500;
  h.filesystems.push_back(fs);
  host::NetDevice nic;
  nic.name = "eth0";
  nic.rx_errors = 1;
  nic.tx_errors = 2;
  nic.rx_drops = 3;
  nic.tx_drops = 4;
  nic.speed_mbps = 100'000;
  h.nics.push_back(nic);
  return h;
}

inline host::HostRates healthy_rates() {
  host::HostRates r;
  r.interval_s = 10;
  host::CpuUsage u;
  u.busy = 30;
  r.cpu.total = u;
  host::NetRates n;
  n.name = "eth0";
  n.rx_util_percent = 12;
  n.tx_util_percent = 40;
  r.nics.push_back(n);
  return r;
}

}  // namespace cardiac::rules::testing
