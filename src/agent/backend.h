// SPDX-License-Identifier: Apache-2.0
// The HTTP API over the agent's parts. Reads come from the latest snapshot or the reader
// connection; nothing here calls NVML or waits for a sample.
#pragma once

#include <memory>

#include "agent/agent.h"
#include "agent/parts.h"
#include "queue/queue.h"
#include "server/http_server.h"

namespace cardiac::agent {

struct BackendParts {
  const AgentOptions& options;
  const Clock& clock;  // /healthz's staleness is measured on its monotonic time
  const Latest<Snapshot>& snapshot;
  const KmsgStatus& kmsg;
  AgentStore& store;  // alerts: list, ack, silence
  Guarded<store::Db>& reader;
  const std::unique_ptr<queue::Queue>& queue;  // null while [queue] is off or not started
};

std::unique_ptr<server::Backend> make_backend(BackendParts parts);

}  // namespace cardiac::agent
