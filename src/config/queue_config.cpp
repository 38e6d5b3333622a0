// SPDX-License-Identifier: Apache-2.0
// Parsing and checking of the [queue] table and its account tree.
#include "config/queue_config.h"

#include <map>
#include <set>

#include "config/toml_reader.h"
#include "core/format.h"

namespace cardiac::config {
namespace {

// The tables of an array-of-tables key (`[[queue.account]]`), or an error at the key.
Result<std::vector<const toml::table*>> tables_of(const toml::table& t, std::string_view key,
                                                  const TableReader& r) {
  std::vector<const toml::table*> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr) {
    return fail(Error::invalid(
        fmt::format("'{}' must be an array of tables ([[{}]])", r.key_name(key), r.key_name(key)),
        r.where(n->source())));
  }
  for (const auto& item : *arr) {
    const toml::table* tt = item.as_table();
    if (!tt) {
      return fail(Error::invalid(fmt::format("'{}' entries must be tables", r.key_name(key)),
                                 r.where(item.source())));
    }
    out.push_back(tt);
  }
  return out;
}

Status read_weights(const toml::table& q, const TableReader& qr, std::string_view origin,
                    QueueWeights& w) {
  const toml::node* n = q.get("weights");
  if (!n) return {};
  const toml::table* t = n->as_table();
  if (!t) {
    return fail(Error::invalid("'queue.weights' must be a table", qr.where(n->source())));
  }
  TableReader r(*t, "queue.weights", origin);
  CARDIAC_TRY(r.only({"age", "fairshare", "job_size", "qos"}));
  CARDIAC_TRY(r.get_number("age", w.age));
  CARDIAC_TRY(r.get_number("fairshare", w.fairshare));
  CARDIAC_TRY(r.get_number("job_size", w.job_size));
  return r.get_number("qos", w.qos);
}

Status read_accounts(const toml::table& q, const TableReader& qr, std::string_view origin,
                     std::vector<QueueAccount>& out) {
  auto tables = tables_of(q, "account", qr);
  if (!tables) return fail(tables.error());
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < tables->size(); ++i) {
    const toml::table& t = *(*tables)[i];
    TableReader r(t, fmt::format("queue.account[{}]", i), origin);
    CARDIAC_TRY(r.only({"name", "parent", "shares"}));
    QueueAccount a;
    a.where = r.where(t.source());
    CARDIAC_TRY(r.get("name", a.name));
    CARDIAC_TRY(r.get("parent", a.parent));
    CARDIAC_TRY(r.get_number("shares", a.shares));
    if (a.name.empty()) {
      return fail(Error::invalid(fmt::format("'{}' is required", r.key_name("name")), a.where));
    }
    if (!index.emplace(a.name, i).second) {
      return fail(Error::invalid(fmt::format("account '{}' is listed twice", a.name), a.where));
    }
    out.push_back(std::move(a));
  }
  for (const auto& a : out) {
    if (!a.parent.empty() && !index.count(a.parent)) {
      return fail(Error::invalid(
          fmt::format("account '{}': parent '{}' is not a listed account", a.name, a.parent),
          a.where));
    }
    // Walking up from each account must reach the root within as many steps as there are
    // accounts; otherwise the parents form a cycle.
    std::string path = a.name;
    const QueueAccount* at = &a;
    for (std::size_t steps = 0; !at->parent.empty(); ++steps) {
      at = &out[index.at(at->parent)];
      path += " -> " + at->name;
      if (at == &a || steps > out.size()) {
        return fail(
            Error::invalid(fmt::format("accounts form a cycle of parents: {}", path), a.where));
      }
    }
  }
  return {};
}

Status read_users(const toml::table& q, const TableReader& qr, std::string_view origin,
                  const std::vector<QueueAccount>& accounts, std::vector<QueueUser>& out) {
  auto tables = tables_of(q, "user", qr);
  if (!tables) return fail(tables.error());
  std::set<std::string> accounts_by_name;
  for (const auto& a : accounts) accounts_by_name.insert(a.name);
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < tables->size(); ++i) {
    const toml::table& t = *(*tables)[i];
    TableReader r(t, fmt::format("queue.user[{}]", i), origin);
    CARDIAC_TRY(r.only({"name", "account", "shares"}));
    QueueUser u;
    u.where = r.where(t.source());
    CARDIAC_TRY(r.get("name", u.name));
    CARDIAC_TRY(r.get("account", u.account));
    CARDIAC_TRY(r.get_number("shares", u.shares));
    if (u.name.empty() || u.account.empty()) {
      return fail(Error::invalid(
          fmt::format("'{}' is required", r.key_name(u.name.empty() ? "name" : "account")),
          u.where));
    }
    if (!accounts_by_name.count(u.account)) {
      return fail(Error::invalid(fmt::format("user '{}': account '{}' is not a listed account "
                                             "([[queue.account]])",
                                             u.name, u.account),
                                 u.where));
    }
    if (!seen.emplace(u.name, u.account).second) {
      return fail(Error::invalid(
          fmt::format("user '{}' is listed twice in account '{}'", u.name, u.account), u.where));
    }
    out.push_back(std::move(u));
  }
  return {};
}

}  // namespace

Status read_queue(const toml::table& t, std::string_view origin, QueueSettings& s) {
  TableReader r(t, "queue", origin);
  CARDIAC_TRY(r.only({"enabled", "policy", "admin_group", "retry_limit", "backoff", "grace",
                      "count_outside_processes", "auto_unfence", "auto_unfence_after", "fair_tree",
                      "dampening", "half_life", "max_age", "priority_calc_period", "favor_small",
                      "spread", "weights", "account", "user"}));
  CARDIAC_TRY(r.get("enabled", s.enabled));
  CARDIAC_TRY(r.get("policy", s.policy));
  CARDIAC_TRY(r.get("admin_group", s.admin_group));
  CARDIAC_TRY(r.get("retry_limit", s.retry_limit));
  CARDIAC_TRY(r.get_duration("backoff", s.backoff));
  CARDIAC_TRY(r.get_duration("grace", s.grace));
  CARDIAC_TRY(r.get("count_outside_processes", s.count_outside_processes));
  CARDIAC_TRY(r.get("auto_unfence", s.auto_unfence));
  CARDIAC_TRY(r.get_duration("auto_unfence_after", s.auto_unfence_after));
  CARDIAC_TRY(r.get("fair_tree", s.fair_tree));
  // Slurm's FairShareDampeningFactor: 1 is none; below 1 would amplify usage.
  CARDIAC_TRY(r.get_number("dampening", s.dampening, 1));
  CARDIAC_TRY(r.get_duration("half_life", s.half_life));
  CARDIAC_TRY(r.get_duration("max_age", s.max_age));
  CARDIAC_TRY(r.get_duration("priority_calc_period", s.priority_calc_period, true));
  CARDIAC_TRY(r.get("favor_small", s.favor_small));
  CARDIAC_TRY(r.get("spread", s.spread));
  CARDIAC_TRY(read_weights(t, r, origin, s.weights));
  std::vector<QueueAccount> accounts;
  std::vector<QueueUser> users;
  CARDIAC_TRY(read_accounts(t, r, origin, accounts));
  CARDIAC_TRY(read_users(t, r, origin, accounts, users));
  s.accounts = std::move(accounts);
  s.users = std::move(users);
  return {};
}

}  // namespace cardiac::config
