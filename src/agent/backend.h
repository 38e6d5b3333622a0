// SPDX-License-Identifier: Apache-2.0
// The HTTP API over the agent's parts. Reads come from the latest snapshot or the reader
// connection; nothing here calls NVML or waits for a sample.
#pragma once

#include <memory>
#include <mutex>

#include "agent/agent.h"
#include "agent/parts.h"
#include "health/report.h"
#include "metrics/config_info.h"
#include "queue/queue.h"
#include "server/http_server.h"

namespace cardiac::agent {

// The node's configuration facts for /metrics (cardiac_node_config_info,
// cardiac_gpu_config_info): read from the host files and the first sample's GPUs once, again
// after a reload (reset), never per scrape.
class ConfigInfo {
 public:
  [[nodiscard]] std::shared_ptr<const metrics::ConfigLabels> get(const FileSystem& fs,
                                                                 const health::StatusReport& r);
  void reset();

 private:
  std::mutex mu_;
  std::shared_ptr<const metrics::ConfigLabels> labels_;
};

struct BackendParts {
  const AgentOptions& options;
  const Clock& clock;  // /healthz's staleness is measured on its monotonic time
  const Latest<Snapshot>& snapshot;
  const KmsgStatus& kmsg;
  AgentStore& store;  // alerts: list, ack, silence
  Guarded<store::Db>& reader;
  const std::unique_ptr<queue::Queue>& queue;  // null while [queue] is off or not started
  const std::shared_ptr<const FileSystem>& fs;
  ConfigInfo& config_info;
};

std::unique_ptr<server::Backend> make_backend(BackendParts parts);

}  // namespace cardiac::agent
