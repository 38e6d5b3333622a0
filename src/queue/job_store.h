// SPDX-License-Identifier: Apache-2.0
// The queue's tables in the agent's store (migrations 4 and 5 of store/schema.cpp): jobs, their
// attempts, GPU fences and fair-share usage. Plain functions over a store::Db; callers group
// them into transactions. Not thread-safe beyond what a Db connection is.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "queue/job.h"
#include "store/db.h"

namespace cardiac::queue {

// Inserts a new job (its id is ignored) and returns the id SQLite gave it. Ids are never
// reused, even for deleted rows.
[[nodiscard]] Result<JobId> insert_job(store::Db& db, const Job& j);
// Writes every mutable field of `j` (state, times, exit status, GPUs, runner, attempts,
// backoff, stop action, reason, priority, eligibility). A job that does not exist is a not-found
// error.
[[nodiscard]] Status update_job(store::Db& db, const Job& j);
[[nodiscard]] Result<std::optional<Job>> get_job(const store::Db& db, JobId id);
// Jobs in any of `states`, oldest id first.
[[nodiscard]] Result<std::vector<Job>> jobs_in_states(const store::Db& db,
                                                      const std::vector<JobState>& states);
// Jobs in a final state that ended at or after `since`, newest first, at most `limit`.
[[nodiscard]] Result<std::vector<Job>> jobs_ended_since(const store::Db& db, TimeNs since,
                                                        std::size_t limit);
// How many jobs are in each state (every state present, 0 when none).
[[nodiscard]] Result<std::map<JobState, std::int64_t>> count_by_state(const store::Db& db);

[[nodiscard]] Status insert_attempt(store::Db& db, const Attempt& a);
// Fills the end of attempt (a.job, a.attempt): end, exit code, signal, outcome, reason.
[[nodiscard]] Status finish_attempt(store::Db& db, const Attempt& a);
[[nodiscard]] Result<std::vector<Attempt>> attempts_of(const store::Db& db, JobId id);

struct Fence {
  std::int64_t id = 0;
  unsigned gpu = 0;  // NVML index when fenced
  std::string uuid;  // "" when the GPU could not say (lost)
  std::string reason;
  std::string who;
  bool automatic = false;  // set by the agent's health view, not by a person
  TimeNs created_ns = 0;
  std::optional<TimeNs> cleared_ns;
  std::string cleared_by;
};

[[nodiscard]] Result<std::int64_t> add_fence(store::Db& db, const Fence& f);
// Clears the active fences of the GPU with this index or UUID; returns how many were cleared.
[[nodiscard]] Result<int> clear_fences(store::Db& db, unsigned gpu, const std::string& uuid,
                                       const std::string& who, TimeNs at);
// Active fences, or every fence (newest first) when `all`.
[[nodiscard]] Result<std::vector<Fence>> list_fences(const store::Db& db, bool all);

struct UsageRow {
  double decayed = 0;            // GPU-seconds, halved every half-life
  double total_gpu_seconds = 0;  // never decays (the metrics counter)
  TimeNs updated_ns = 0;
};
[[nodiscard]] Result<std::map<std::string, UsageRow>> load_usage(const store::Db& db);
[[nodiscard]] Status save_usage(store::Db& db, const std::string& user, const UsageRow& row);

}  // namespace cardiac::queue
