// SPDX-License-Identifier: Apache-2.0
// In-process agent tests: a scripted GPU source, a temporary state directory and an agent
// built on MemFs and a ManualClock that samples only when told to.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/agent.h"
#include "agent/sampler.h"
#include "core/tests/temp_dir.h"
#include "platform/fs.h"

namespace cardiac::agent::testing {

using cardiac::testing::TempDir;

// What the scripted source answers next; the test changes it between samples.
struct GpuScript {
  std::mutex mu;
  bool available = true;
  unsigned temperature = 40;
  nvml::DeviceHealth health = nvml::DeviceHealth::kOk;
  // When set: an 80 GiB GPU on which pid 4242 ("python3") holds this much, 1 GiB besides.
  std::optional<std::uint64_t> process_memory;
  unsigned utilization = 0;

  nvml::GpuSnapshot snapshot() {
    std::lock_guard lock(mu);
    nvml::GpuSnapshot s;
    s.available = available;
    if (!available) {
      s.error_kind = "driver_not_loaded";
      s.error = "the NVIDIA kernel module is not loaded";
      return s;
    }
    s.system.device_count = 1;
    nvml::GpuReading g;
    g.index = 0;
    g.name = "Test GPU";
    g.uuid = "GPU-00000000-0000-0000-0000-000000000000";
    g.pci_bus_id = "00000000:3B:00.0";
    g.temperature = temperature;
    g.health = health;
    if (process_memory) {
      g.memory_total = 80ULL << 30U;
      g.memory_used = *process_memory + (1ULL << 30U);
      g.memory_free = *g.memory_total - *g.memory_used;
      g.utilization_gpu = utilization;
      g.processes_supported = true;
      nvml::GpuProcess p;
      p.pid = 4242;
      p.name = "python3";
      p.type = "compute";
      p.used_memory_bytes = process_memory;
      g.processes.push_back(p);
    }
    s.gpus.push_back(std::move(g));
    return s;
  }
};

class ScriptedGpus final : public GpuSource {
 public:
  explicit ScriptedGpus(std::shared_ptr<GpuScript> script) : script_(std::move(script)) {}
  nvml::GpuSnapshot sample() override { return script_->snapshot(); }
  [[nodiscard]] std::uint64_t worker_restarts() const override { return 0; }

 private:
  std::shared_ptr<GpuScript> script_;
};

// An agent on loopback (an ephemeral port), no kernel log, no queue, no NVML event thread,
// no background sampling: every sample is a sample_now() call.
inline AgentOptions in_process_options(const TempDir& dir,
                                       const std::shared_ptr<GpuScript>& script) {
  AgentOptions o;
  o.config.agent.state_dir = dir.path() + "/state";
  o.config.agent.listen = "127.0.0.1:0";
  o.config.kmsg.enabled = false;
  o.config.queue.enabled = false;
  o.fs = std::make_shared<MemFs>();
  o.gpu_source = [script] { return std::make_unique<ScriptedGpus>(script); };
  o.nvml_events = false;
  o.background_sampling = false;
  o.hostname = "testhost";
  return o;
}

}  // namespace cardiac::agent::testing
