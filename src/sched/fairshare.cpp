// SPDX-License-Identifier: Apache-2.0
// Usage decay, the fair-share tree (classic and Fair Tree factors, Slurm's definitions) and the
// sshare-like rows.
#include "sched/fairshare.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cardiac::sched {

void decay_usage(Usage& u, TimeNs now, DurationNs half_life) {
  if (now <= u.updated_at) return;
  if (half_life > 0) {
    const double f =
        std::exp2(-static_cast<double>(now - u.updated_at) / static_cast<double>(half_life));
    for (auto& [user, value] : u.usage) value *= f;
  }
  u.updated_at = now;
}

void charge_usage(Usage& u, const std::string& user, double gpu_seconds) {
  double& v = u.usage[user];
  v = std::max(0.0, v + gpu_seconds);
}

namespace detail {

FairShareTree::FairShareTree(const Usage& usage) {
  nodes_.push_back(FsNode{.name = "root"});
  std::vector<std::pair<int, std::string_view>> parents;
  for (const Account& a : usage.accounts) {
    if (a.name.empty() || accounts_.contains(a.name)) continue;  // the first definition wins
    const int idx = add(FsNode{.name = a.name, .raw_shares = std::max(0.0, a.shares)});
    accounts_.emplace(a.name, idx);
    parents.emplace_back(idx, a.parent);
  }
  for (const auto& [idx, parent_name] : parents) {
    int p = parent_name.empty() ? 0 : account(parent_name);
    // A parent chain that comes back to the account would make a cycle: hang it off the root.
    for (int up = p; up > 0; up = nodes_[up].parent) {
      if (up == idx) {
        p = 0;
        break;
      }
    }
    nodes_[idx].parent = p;
    nodes_[p].children.push_back(idx);
  }
  for (const UserShare& u : usage.users) {
    if (u.user.empty()) continue;
    const std::string_view acct = u.account.empty() ? std::string_view(u.user) : u.account;
    auto it = users_.find(u.user);
    if (it != users_.end() && std::any_of(it->second.begin(), it->second.end(),
                                          [&](int n) { return nodes_[n].account == acct; })) {
      continue;
    }
    const int a = account(acct);
    const int idx = add(FsNode{.name = u.user,
                               .account = std::string(acct),
                               .user = true,
                               .parent = a,
                               .raw_shares = std::max(0.0, u.shares)});
    nodes_[a].children.push_back(idx);
    users_[u.user].push_back(idx);
    defaults_.try_emplace(u.user, idx);
  }
  for (const auto& [user, value] : usage.usage) ensure(user, "");
}

int FairShareTree::add(FsNode n) {
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size() - 1);
}

int FairShareTree::account(std::string_view name) {
  if (auto it = accounts_.find(name); it != accounts_.end()) return it->second;
  const int idx = add(FsNode{.name = std::string(name), .parent = 0});
  nodes_[0].children.push_back(idx);
  accounts_.emplace(std::string(name), idx);
  return idx;
}

int FairShareTree::ensure(std::string_view user, std::string_view acct) {
  const bool by_default = acct.empty();
  if (by_default) {
    if (auto d = defaults_.find(user); d != defaults_.end()) return d->second;
    // Unlisted users default to their own account, whatever other accounts their jobs name,
    // so the tree does not depend on the order jobs come in.
    acct = user;
  }
  int idx = -1;
  if (auto it = users_.find(user); it != users_.end()) {
    for (int n : it->second) {
      if (nodes_[n].account == acct) idx = n;
    }
  }
  if (idx < 0) {
    const int a = account(acct);
    idx = add(
        FsNode{.name = std::string(user), .account = std::string(acct), .user = true, .parent = a});
    nodes_[a].children.push_back(idx);
    users_[std::string(user)].push_back(idx);
  }
  if (by_default) defaults_.emplace(std::string(user), idx);
  return idx;
}

void FairShareTree::compute(const Usage& usage, double dampening) {
  if (!(dampening > 0)) dampening = 1;
  for (const auto& [user, value] : usage.usage) {
    if (auto d = defaults_.find(user); d != defaults_.end()) {
      nodes_[d->second].raw_usage += std::max(0.0, value);
    }
  }
  // Children in name order (users first) so the result does not depend on input order.
  for (FsNode& n : nodes_) {
    std::sort(n.children.begin(), n.children.end(), [&](int a, int b) {
      if (nodes_[a].user != nodes_[b].user) return nodes_[a].user;
      return nodes_[a].name < nodes_[b].name;
    });
  }
  std::vector<int> pre{0};
  for (std::size_t i = 0; i < pre.size(); ++i) {
    for (int c : nodes_[pre[i]].children) pre.push_back(c);
  }
  for (auto it = pre.rbegin(); it != pre.rend(); ++it) {
    FsNode& n = nodes_[*it];
    if (n.user) continue;
    n.raw_usage = 0;
    for (int c : n.children) n.raw_usage += nodes_[c].raw_usage;
  }

  const double total = nodes_[0].raw_usage;
  nodes_[0].norm_shares = 1;
  unsigned users = 0;
  for (int idx : pre) {
    const FsNode& parent = nodes_[idx];
    double sibling_shares = 0;
    for (int c : parent.children) sibling_shares += nodes_[c].raw_shares;
    for (int c : parent.children) {
      FsNode& n = nodes_[c];
      if (n.user) ++users;
      n.depth = idx == 0 ? 0 : parent.depth + 1;
      const double local = sibling_shares > 0 ? n.raw_shares / sibling_shares : 0;
      n.norm_shares = parent.norm_shares * local;
      n.norm_usage = total > 0 ? n.raw_usage / total : 0;
      // Classic: below the first tier, usage is pulled toward the parent's effective usage in
      // proportion to the share among siblings.
      n.eff_usage =
          idx == 0 ? n.norm_usage : n.norm_usage + (parent.eff_usage - n.norm_usage) * local;
      n.classic = n.norm_shares > 0 ? std::exp2(-n.eff_usage / n.norm_shares / dampening) : 0;
      // Fair Tree: shares and usage relative to the siblings only.
      const double u = parent.raw_usage > 0 ? n.raw_usage / parent.raw_usage : 0;
      if (local == 0) {
        n.level_fs = 0;
      } else if (u == 0) {
        n.level_fs = std::numeric_limits<double>::infinity();
      } else {
        n.level_fs = local / u;
      }
    }
  }
  unsigned r = users;
  unsigned next = users;
  rank(nodes_[0].children, false, r, next, users);
}

// Fair Tree's depth-first ranking. Siblings by Level FS, highest first; a user takes the next
// rank unless tied with the sibling before it (then it shares that rank); tied sibling accounts
// have their children merged and ranked together; a level entered from a tie starts tied, so a
// user tied with an account shares the rank of that account's top user (users sort first).
void FairShareTree::rank(std::vector<int> siblings, bool tied_in, unsigned& current, unsigned& next,
                         unsigned users) {
  std::stable_sort(siblings.begin(), siblings.end(), [&](int a, int b) {
    if (nodes_[a].level_fs != nodes_[b].level_fs) return nodes_[a].level_fs > nodes_[b].level_fs;
    return nodes_[a].user && !nodes_[b].user;
  });
  for (std::size_t i = 0; i < siblings.size(); ++i) {
    FsNode& n = nodes_[siblings[i]];
    const bool tied = i == 0 ? tied_in : nodes_[siblings[i - 1]].level_fs == n.level_fs;
    if (n.user) {
      if (!tied) current = next;
      n.fair_tree = users > 0 ? static_cast<double>(current) / users : 0;
      if (next > 0) --next;
      continue;
    }
    std::vector<int> merged = n.children;
    std::size_t j = i;
    while (j + 1 < siblings.size() && !nodes_[siblings[j + 1]].user &&
           nodes_[siblings[j + 1]].level_fs == n.level_fs) {
      ++j;
      const auto& more = nodes_[siblings[j]].children;
      merged.insert(merged.end(), more.begin(), more.end());
    }
    rank(std::move(merged), tied, current, next, users);
    i = j;
  }
}

}  // namespace detail

std::vector<ShareRow> shares(const Usage& usage, const PolicyConfig& policy,
                             const std::vector<std::string>& extra_users) {
  detail::FairShareTree tree(usage);
  for (const std::string& u : extra_users) tree.ensure(u, "");
  tree.compute(usage, policy.dampening);
  const auto& nodes = tree.nodes();
  std::vector<ShareRow> rows;
  std::vector<int> stack(nodes[0].children.rbegin(), nodes[0].children.rend());
  while (!stack.empty()) {
    const int idx = stack.back();
    stack.pop_back();
    const detail::FsNode& n = nodes[idx];
    rows.push_back(ShareRow{
        .account = n.user ? n.account : n.name,
        .user = n.user ? n.name : std::string(),
        .raw_shares = n.raw_shares,
        .norm_shares = n.norm_shares,
        .raw_usage = n.raw_usage,
        .norm_usage = n.norm_usage,
        .level_fs = n.level_fs,
        .factor = n.user || !policy.fair_tree ? tree.factor(idx, policy.fair_tree) : 0,
        .depth = n.depth,
    });
    stack.insert(stack.end(), n.children.rbegin(), n.children.rend());
  }
  return rows;
}

}  // namespace cardiac::sched
