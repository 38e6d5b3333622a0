// SPDX-License-Identifier: Apache-2.0
// `cardiac agent`: samples GPUs (through the isolated worker) and the host on their own
// schedules, keeps history in SQLite, evaluates alert rules on every sample, notifies, and
// serves /metrics, /healthz and the JSON API. A wedged driver never stops it: the collector
// marks the GPU unresponsive and everything else keeps going.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "core/clock.h"
#include "core/result.h"

namespace cardiac::agent {

struct AgentOptions {
  config::Config config;
  std::string executable;  // the cardiac binary for the NVML worker (default: ourselves)
  std::vector<std::pair<std::string, std::string>> worker_env{};
  std::string hostname;  // default: the host's
};

struct AgentState;  // everything the threads share; defined in agent_state.h

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

 private:
  std::unique_ptr<AgentState> state_;
};

}  // namespace cardiac::agent
