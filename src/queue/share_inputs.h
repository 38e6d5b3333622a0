// SPDX-License-Identifier: Apache-2.0
// What the fair-share policy (sched/fairshare.cpp) is given by the live queue: the scheduler's
// policy parameters and account tree from the [queue] settings, which account a submitted job
// is charged to, and the usage recorded in the store (queue_usage) that finished attempts add to.
#pragma once

#include <string>

#include "config/config.h"
#include "core/result.h"
#include "queue/job.h"
#include "sched/sched.h"
#include "store/db.h"

namespace cardiac::queue {

// `parsed` (from sched::parse_policy) with the settings' fair-share, weight and placement
// parameters applied.
sched::PolicyConfig policy_config(sched::PolicyConfig parsed, const config::QueueSettings& s);

// Adds the settings' accounts and user associations to `u` (its usage is left alone).
void add_tree(sched::Usage& u, const config::QueueSettings& s);

// The account a job of `user` goes to. `requested` empty: the user's first listed account, or
// "" when they have none (the scheduler then gives them an account of their own). Otherwise
// it must be one of the user's accounts; the error (kInvalidArgument) says which they have, or
// that no accounts are configured.
Result<std::string> resolve_account(const config::QueueSettings& s, const std::string& user,
                                    const std::string& requested);

// Everyone's usage from the store, decayed to `now`, with the settings' account tree.
sched::Usage usage_now(const store::Db& db, const sched::PolicyConfig& policy,
                       const config::QueueSettings& s, TimeNs now);

// Adds the GPU time of `j`'s attempt that ended at `end` to its user's usage in the store
// (decaying everyone's to `now` on the way); errors are logged, a job's end is not held up.
void record_usage(store::Db& db, const sched::PolicyConfig& policy, const config::QueueSettings& s,
                  const Job& j, TimeNs end, TimeNs now);

}  // namespace cardiac::queue
