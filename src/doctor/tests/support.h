// SPDX-License-Identifier: Apache-2.0
// Readings, scenario replays and finding matchers shared by the GPU hardware check tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/format.h"
#include "doctor/checks/checks.h"
#include "host/pci.h"
#include "nvml/gpu_json.h"
#include "nvml/pci.h"
#include "nvml/types.h"
#include "platform/fs.h"

namespace cardiac::doctor::hw_test {

constexpr TimeNs kT0 = 1'764'000'000 * kNsPerSec;

inline nlohmann::json load_scenario(const std::string& name) {
  std::ifstream f(std::string(CARDIAC_FIXTURES_DIR) + "/scenarios/" + name);
  EXPECT_TRUE(f.good()) << name;
  return nlohmann::json::parse(f);
}

// What the collector would have read at `t_s` seconds into the scenario: the timeline applied
// up to then; a lost or reset-required device answers nothing but its state.
inline nvml::GpuSnapshot snapshot_at(const nlohmann::json& sc, double t_s) {
  std::vector<nlohmann::json> devices = sc.at("devices").get<std::vector<nlohmann::json>>();
  for (const auto& step : sc.value("timeline", nlohmann::json::array())) {
    if (step.at("at").get<double>() > t_s) continue;
    auto& dev = devices.at(step.at("device").get<std::size_t>());
    for (const auto& [key, value] : step.at("set").items()) {
      if (value.is_null()) {
        dev.erase(key);
      } else {
        dev[key] = value;
      }
    }
  }
  nvml::GpuSnapshot snap;
  snap.available = true;
  snap.taken_at = kT0 + static_cast<TimeNs>(t_s * 1e9);
  snap.system.driver_version = sc.value("driver_version", "");
  snap.system.device_count = static_cast<unsigned>(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    nlohmann::json dev = devices[i];
    std::string state = dev.value("state", "ok");
    nvml::GpuReading r;
    if (state == "ok") {
      dev.erase("state");
      dev["index"] = i;
      auto parsed = nvml::gpu_reading_from_json(dev);
      EXPECT_TRUE(parsed.has_value()) << parsed.error().what();
      r = *parsed;
      r.pci_bus_id = nvml::normalize_pci_bus_id(r.pci_bus_id);
    } else {
      r.index = static_cast<unsigned>(i);
      r.health = state == "lost" ? nvml::DeviceHealth::kLost : nvml::DeviceHealth::kResetRequired;
      r.health_detail = state == "lost" ? "nvmlDeviceGetUUID returned GPU_IS_LOST"
                                        : "nvmlDeviceGetUUID returned RESET_REQUIRED";
    }
    r.sampled_at = snap.taken_at;
    snap.gpus.push_back(std::move(r));
  }
  return snap;
}

inline DoctorInput scenario_input(const std::string& name, const std::vector<double>& times) {
  auto sc = load_scenario(name);
  DoctorInput in;
  for (double t : times) in.gpu_samples.push_back(snapshot_at(sc, t));
  in.now = in.gpu_samples.back().taken_at;
  return in;
}

// The 8-GPU HGX host tree: its PCI bus holds the scenarios' eight H100s.
inline host::HostSnapshot hgx_host() {
  host::HostSnapshot h;
  h.taken_at = kT0;
  RootFs fs(std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x");
  auto pci = host::collect_nvidia_pci(fs);
  EXPECT_TRUE(pci.has_value());
  if (pci) h.pci = *pci;
  return h;
}

inline nvml::GpuReading healthy(unsigned index) {
  nvml::GpuReading r;
  r.index = index;
  r.name = "NVIDIA H100 80GB HBM3";
  r.uuid = fmt::format("GPU-0000000{}", index);
  r.serial = fmt::format("16549220012{:02}", index);
  r.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + index);
  r.persistence_mode = true;
  r.utilization_gpu = 97;
  r.temperature = 60;
  r.temperature_slowdown = 87;
  r.temperature_shutdown = 92;
  r.power_usage_mw = 650'000;
  r.power_limit_mw = 700'000;
  r.power_default_limit_mw = 700'000;
  r.clock_event_reasons = 0;
  r.ecc_volatile_corrected = 0;
  r.ecc_volatile_uncorrected = 0;
  r.ecc_aggregate_corrected = 0;
  r.ecc_aggregate_uncorrected = 0;
  r.pcie_gen_current = 5;
  r.pcie_gen_max = 5;
  r.pcie_width_current = 16;
  r.pcie_width_max = 16;
  r.pcie_replay_counter = 0;
  return r;
}

// One snapshot per reading set, `step_s` apart.
inline DoctorInput window(const std::vector<std::vector<nvml::GpuReading>>& samples,
                          double step_s = 5) {
  DoctorInput in;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    nvml::GpuSnapshot s;
    s.available = true;
    s.taken_at = kT0 + static_cast<TimeNs>(static_cast<double>(i) * step_s * 1e9);
    s.system.device_count = static_cast<unsigned>(samples[i].size());
    s.gpus = samples[i];
    for (auto& g : s.gpus) g.sampled_at = s.taken_at;
    in.gpu_samples.push_back(std::move(s));
  }
  in.now = in.gpu_samples.back().taken_at;
  return in;
}

inline std::vector<Finding> run(const DoctorInput& in) {
  std::vector<Finding> out;
  check_gpu_hardware(in, out);
  return out;
}

inline const Finding* find(const std::vector<Finding>& fs, std::string_view id,
                           std::optional<unsigned> gpu = std::nullopt) {
  for (const auto& f : fs) {
    if (f.id == id && (!gpu || f.gpu.index == gpu)) return &f;
  }
  return nullptr;
}

inline std::string ids(const std::vector<Finding>& fs) {
  std::string s;
  for (const auto& f : fs) {
    s += f.id + (f.gpu.index ? fmt::format("@{}", *f.gpu.index) : std::string()) + " ";
  }
  return s;
}

inline void expect_finding(const Finding* f, Category c, Severity s,
                           std::string_view first_action) {
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(category_name(f->category), category_name(c)) << f->id;
  EXPECT_EQ(severity_name(f->severity), severity_name(s)) << f->id;
  ASSERT_FALSE(f->actions.empty()) << f->id;
  EXPECT_TRUE(f->actions.front().starts_with(first_action)) << f->id << ": " << f->actions.front();
}

// --- Scenarios.

}  // namespace cardiac::doctor::hw_test
