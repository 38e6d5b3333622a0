// SPDX-License-Identifier: Apache-2.0
// Policy parameters, the account tree, account checks for submitted jobs, and usage.
#include "queue/share_inputs.h"

#include <algorithm>
#include <vector>

#include "core/format.h"
#include "core/log.h"
#include "queue/job_store.h"

namespace cardiac::queue {

sched::PolicyConfig policy_config(sched::PolicyConfig parsed, const config::QueueSettings& s) {
  parsed.fair_tree = s.fair_tree;
  parsed.dampening = s.dampening;
  parsed.half_life = s.half_life;
  parsed.spread = s.spread;
  parsed.weights.age = s.weights.age;
  parsed.weights.fairshare = s.weights.fairshare;
  parsed.weights.job_size = s.weights.job_size;
  parsed.weights.qos = s.weights.qos;
  parsed.weights.max_age = s.max_age;
  parsed.weights.favor_small = s.favor_small;
  return parsed;
}

void add_tree(sched::Usage& u, const config::QueueSettings& s) {
  for (const auto& a : s.accounts) u.accounts.push_back({a.name, a.parent, a.shares});
  for (const auto& us : s.users) u.users.push_back({us.name, us.account, us.shares});
}

Result<std::string> resolve_account(const config::QueueSettings& s, const std::string& user,
                                    const std::string& requested) {
  std::vector<std::string> theirs;
  for (const auto& u : s.users) {
    if (u.name == user) theirs.push_back(u.account);
  }
  if (requested.empty()) return theirs.empty() ? std::string() : theirs.front();
  if (s.accounts.empty()) {
    return fail(Error::invalid(
        fmt::format("--account {}: no fair-share accounts are configured on this machine "
                    "([[queue.account]] in cardiac.toml)",
                    requested)));
  }
  if (std::find(theirs.begin(), theirs.end(), requested) != theirs.end()) return requested;
  bool exists = std::any_of(s.accounts.begin(), s.accounts.end(),
                            [&](const config::QueueAccount& a) { return a.name == requested; });
  std::string what = exists ? fmt::format("{} is not in account '{}'", user, requested)
                            : fmt::format("there is no account '{}'", requested);
  std::string have = theirs.empty()
                         ? fmt::format("{} is in no account ([[queue.user]] in cardiac.toml)", user)
                         : fmt::format("{}'s accounts: {}", user, fmt::join(theirs, ", "));
  return fail(Error::invalid(fmt::format("--account {}: {}; {}", requested, what, have)));
}

sched::Usage usage_now(const store::Db& db, const sched::PolicyConfig& policy,
                       const config::QueueSettings& s, TimeNs now) {
  sched::Usage u;
  if (auto rows = load_usage(db)) {
    for (const auto& [user, row] : *rows) {
      u.usage[user] = row.decayed;
      u.updated_at = std::max(u.updated_at, row.updated_ns);
    }
  }
  if (u.updated_at == 0) u.updated_at = now;
  sched::decay_usage(u, now, policy.half_life);
  add_tree(u, s);
  return u;
}

void record_usage(store::Db& db, const sched::PolicyConfig& policy, const config::QueueSettings& s,
                  const Job& j, TimeNs end, TimeNs now) {
  if (!j.start_ns || end <= *j.start_ns) return;
  double gpu_seconds =
      static_cast<double>(j.gpu_indices.size()) * static_cast<double>(end - *j.start_ns) / 1e9;
  auto rows = load_usage(db);
  if (!rows) return;
  sched::Usage u = usage_now(db, policy, s, now);
  sched::charge_usage(u, j.user, gpu_seconds);
  for (const auto& [user, decayed] : u.usage) {
    UsageRow row = (*rows)[user];
    row.decayed = decayed;
    row.updated_ns = now;
    if (user == j.user) row.total_gpu_seconds += gpu_seconds;
    if (auto st = save_usage(db, user, row); !st) {
      log::warn("queue: usage of {}: {}", user, st.error().what());
    }
  }
}

}  // namespace cardiac::queue
