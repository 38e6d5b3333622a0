// SPDX-License-Identifier: Apache-2.0
// Private to the queue: its requests (submit, list, jobs, cancel, hold/release, logs, why,
// share, fence, ping) and the API view. Called with the shared lock held; changes of a job's
// state go through the lifecycle.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "queue/auth.h"
#include "queue/job.h"
#include "queue/queue_shared.h"

namespace cardiac::queue {

class Requests {
 public:
  explicit Requests(QueueShared& q) : q_(q) {}

  // Answers `op` for `who`. `wakes` is set when the loop should run at once.
  Result<nlohmann::json> handle(const std::string& op, const Principal& who,
                                const nlohmann::json& req, bool& wakes);
  // GET /api/v1/queue.
  Result<nlohmann::json> api();

 private:
  Result<nlohmann::json> submit(const Principal& who, const nlohmann::json& req);
  Result<nlohmann::json> list(const nlohmann::json& req);
  Result<nlohmann::json> jobs(const nlohmann::json& req);
  Result<nlohmann::json> cancel(const Principal& who, const nlohmann::json& req);
  Result<nlohmann::json> hold(const Principal& who, const nlohmann::json& req, bool hold);
  Result<nlohmann::json> logs(const Principal& who, const nlohmann::json& req);
  Result<nlohmann::json> why(const nlohmann::json& req);
  Result<nlohmann::json> share();
  Result<nlohmann::json> fence(const Principal& who, const nlohmann::json& req);
  Result<Job> load_job(const nlohmann::json& req);
  nlohmann::json job_row(const Job& j);

  QueueShared& q_;
};

}  // namespace cardiac::queue
