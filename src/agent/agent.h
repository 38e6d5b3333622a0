// SPDX-License-Identifier: Apache-2.0
// `cardiac agent`: samples GPUs (through the isolated worker) and the host on their own
// schedules, keeps history in SQLite, evaluates alert rules on every sample, notifies, and
// serves /metrics, /healthz and the JSON API. A wedged driver never stops it: the collector
// marks the GPU unresponsive and everything else keeps going.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "core/clock.h"
#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::agent {

class GpuSource;  // sampler.h

struct AgentOptions {
  config::Config config;
  std::string executable;  // the cardiac binary for the NVML worker (default: ourselves)
  std::vector<std::pair<std::string, std::string>> worker_env{};
  std::string hostname;  // default: the host's

  // Seams for in-process tests; production leaves them as they are.
  std::shared_ptr<const FileSystem> fs;                    // default: RootFs over [host] root
  std::function<std::unique_ptr<GpuSource>()> gpu_source;  // default: the NVML worker
  bool nvml_events = true;          // follow NVML's event stream (a thread of the NVML worker)
  bool background_sampling = true;  // false: no sampler or host thread; call sample_now()
};

class Agent {
 public:
  Agent(AgentOptions options, const Clock& clock);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Opens the store (creating the state directory), loads the rules, binds the HTTP server
  // and starts the sampling threads. Errors name the file or address at fault.
  [[nodiscard]] Status start();
  // The bound HTTP port (after start()).
  [[nodiscard]] int port() const;
  // Stops every thread and flushes the store. Idempotent.
  void stop();
  // One host reading and one sample through every stage, on the calling thread (with
  // background_sampling off; tests drive time with a ManualClock this way).
  void sample_now();
  // Takes over a configuration re-read while running (SIGHUP; after start()). The alert rules
  // (the rules file, default_rules, expected_gpus) and the notifiers are replaced live: alerts
  // pending or firing carry on under the new rules as across a restart, and history, incidents
  // and the queue are untouched. Every other changed key is logged as taking effect at the
  // next restart. An error (a rules file that does not parse, a notifier that cannot be made)
  // changes nothing: the agent keeps running as it was.
  [[nodiscard]] Status reload(const config::Config& next);

  struct Parts;  // everything the agent owns (agent.cpp)

 private:
  std::unique_ptr<Parts> parts_;
};

}  // namespace cardiac::agent
