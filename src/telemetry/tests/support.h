// SPDX-License-Identifier: Apache-2.0
// Shared helpers for tests that run the real worker process over the fake NVML.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "telemetry/gpu_collector.h"

namespace cardiac::telemetry::testing {

inline std::string scenario_path(const std::string& name) {
  return std::string(CARDIAC_FIXTURES_DIR) + "/scenarios/" + name;
}

inline nlohmann::json load_scenario(const std::string& name) {
  std::ifstream in(scenario_path(name));
  return nlohmann::json::parse(in);
}

// A scenario file of the test's own, removed at the end of the test.
class TempScenario {
 public:
  explicit TempScenario(const nlohmann::json& content) {
    char tmpl[] = "/tmp/cardiac-scenario-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    path_ = std::string(tmpl) + ".json";
    std::filesystem::rename(tmpl, path_);
    write(content);
  }
  ~TempScenario() { std::filesystem::remove(path_); }
  void write(const nlohmann::json& content) const {
    std::ofstream(path_, std::ios::trunc) << content.dump(1);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline GpuCollectorOptions fake_options(const std::string& scenario_file, DurationNs timeout) {
  GpuCollectorOptions o;
  o.executable = CARDIAC_BINARY;
  o.nvml_lib = FAKE_NVML_PATH;
  o.timeout = timeout;
  o.env = {{"CARDIAC_FAKE_NVML_SCENARIO", scenario_file}};
  return o;
}

}  // namespace cardiac::telemetry::testing
