// SPDX-License-Identifier: Apache-2.0
// The fair-share association tree: classic (2^(-UE/S/d)) and Fair Tree factors per user.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sched/sched.h"

namespace cardiac::sched::detail {

struct FsNode {
  std::string name{};     // account name, or user name for a user association
  std::string account{};  // for a user: its account
  bool user = false;
  int parent = -1;
  std::vector<int> children{};
  double raw_shares = 1;
  double raw_usage = 0;    // a user's decayed usage; for an account, its subtree's
  double norm_shares = 0;  // product down the tree of shares / siblings' shares
  double norm_usage = 0;   // raw_usage / the root's
  double eff_usage = 0;    // classic effective usage UE
  double level_fs = 0;     // Fair Tree S/U among siblings (infinity: no usage)
  double classic = 0;      // 2^(-UE / S / d)
  double fair_tree = 0;    // users only: rank / number of users
  unsigned depth = 0;      // 0 for children of the root
};

// FNV-1a: user and account names are short, and a recomputation of the live queue's
// priorities looks one up per pending job; std::hash's byte hash cost three times as much.
// Only lookups go through it (nothing iterates these maps), so no order depends on it.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const {
    std::uint64_t h = 14695981039346656037ull;
    for (const char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
    return static_cast<std::size_t>(h);
  }
};

class FairShareTree {
 public:
  // The accounts and users of `usage`; users only seen in the usage map get their own account.
  explicit FairShareTree(const Usage& usage);

  // The association for (user, account), created when missing: account "" means the user's
  // first listed account, else an account named after the user. Call before compute().
  int ensure(std::string_view user, std::string_view account);

  // Usage sums, normalised shares and usage, both factors. Call once, after every ensure().
  void compute(const Usage& usage, double dampening);

  [[nodiscard]] double factor(int node, bool fair_tree) const {
    return fair_tree ? nodes_[node].fair_tree : nodes_[node].classic;
  }
  [[nodiscard]] const std::vector<FsNode>& nodes() const { return nodes_; }

 private:
  int account(std::string_view name);
  int add(FsNode n);
  void rank(std::vector<int> siblings, bool tied, unsigned& current, unsigned& next,
            unsigned users);

  std::vector<FsNode> nodes_;  // [0] is the root
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> accounts_;
  std::unordered_map<std::string, std::vector<int>, StringHash, std::equal_to<>> users_;
  // The association a user's usage and account-less jobs go to: the first listed, else the
  // account named after the user.
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> defaults_;
};

}  // namespace cardiac::sched::detail
