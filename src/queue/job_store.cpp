// SPDX-License-Identifier: Apache-2.0
// Rows of jobs, job_attempts, fences and queue_usage.
#include "queue/job_store.h"

#include "core/format.h"

namespace cardiac::queue {
namespace {

using nlohmann::json;

constexpr const char* kJobColumns =
    "id, state, user, uid, gid, groups_json, account, name, argv_json, env_json, cwd, gpus, "
    "gpu_mem, shared, priority, time_limit_ns, after_json, submit_ns, first_start_ns, start_ns, "
    "end_ns, exit_code, signal, gpu_indices_json, gpu_uuids_json, runner_pid, runner_start, "
    "attempt, restarts, not_before_ns, stop_action, reason, eligible_ns";

// JSON columns are written by us; a damaged one reads as empty rather than failing the row.
template <class T>
T from_json_text(const std::string& text, T fallback = {}) {
  try {
    return json::parse(text).get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

std::optional<int> opt_int(const store::Statement& st, int col) {
  auto v = st.column_opt_int64(col);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

Job read_job(const store::Statement& st) {
  Job j;
  j.id = st.column_int64(0);
  j.state = parse_job_state(st.column_text(1)).value_or(JobState::kLost);
  j.user = st.column_text(2);
  j.uid = static_cast<uid_t>(st.column_int64(3));
  j.gid = static_cast<gid_t>(st.column_int64(4));
  j.groups = from_json_text<std::vector<gid_t>>(st.column_text(5));
  j.account = st.column_text(6);
  j.name = st.column_text(7);
  j.argv = from_json_text<std::vector<std::string>>(st.column_text(8));
  j.env = from_json_text<std::map<std::string, std::string>>(st.column_text(9));
  j.cwd = st.column_text(10);
  j.gpus = static_cast<unsigned>(st.column_int64(11));
  j.gpu_mem = static_cast<std::uint64_t>(st.column_int64(12));
  j.shared = st.column_int64(13) != 0;
  j.priority = static_cast<int>(st.column_int64(14));
  j.time_limit = st.column_int64(15);
  j.after = from_json_text<std::vector<JobId>>(st.column_text(16));
  j.submit_ns = st.column_int64(17);
  j.first_start_ns = st.column_opt_int64(18);
  j.start_ns = st.column_opt_int64(19);
  j.end_ns = st.column_opt_int64(20);
  j.exit_code = opt_int(st, 21);
  j.signal = opt_int(st, 22);
  j.gpu_indices = from_json_text<std::vector<unsigned>>(st.column_text(23));
  j.gpu_uuids = from_json_text<std::vector<std::string>>(st.column_text(24));
  if (auto p = st.column_opt_int64(25)) j.runner_pid = static_cast<pid_t>(*p);
  j.runner_start = st.column_opt_int64(26);
  j.attempt = static_cast<unsigned>(st.column_int64(27));
  j.restarts = static_cast<unsigned>(st.column_int64(28));
  j.not_before_ns = st.column_int64(29);
  j.stop_action = parse_stop_action(st.column_text(30));
  j.reason = st.column_text(31);
  j.eligible_ns = st.column_opt_int64(32);
  return j;
}

Result<std::vector<Job>> read_jobs(store::Statement& st) {
  std::vector<Job> out;
  while (true) {
    auto row = st.step();
    if (!row) return fail(row.error());
    if (!*row) break;
    out.push_back(read_job(st));
  }
  return out;
}

std::optional<std::int64_t> opt64(const std::optional<pid_t>& v) {
  if (!v) return std::nullopt;
  return *v;
}

}  // namespace

Result<JobId> insert_job(store::Db& db, const Job& j) {
  auto st = db.prepare(
      "INSERT INTO jobs(state, user, uid, gid, groups_json, account, name, argv_json, env_json, "
      "cwd, gpus, gpu_mem, shared, priority, time_limit_ns, after_json, submit_ns, reason, "
      "not_before_ns, eligible_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
      "?, "
      "?)");
  if (!st) return fail(st.error());
  st->bind_all(job_state_name(j.state), j.user, static_cast<std::int64_t>(j.uid),
               static_cast<std::int64_t>(j.gid), json(j.groups).dump(), j.account, j.name,
               json(j.argv).dump(-1, ' ', false, json::error_handler_t::replace),
               json(j.env).dump(-1, ' ', false, json::error_handler_t::replace), j.cwd, j.gpus,
               static_cast<std::int64_t>(j.gpu_mem), j.shared, j.priority, j.time_limit,
               json(j.after).dump(), j.submit_ns, j.reason, j.not_before_ns, j.eligible_ns);
  CARDIAC_TRY(st->run());
  auto id = db.query_int64("SELECT last_insert_rowid()");
  if (!id) return fail(id.error());
  return id->value_or(0);
}

Status update_job(store::Db& db, const Job& j) {
  auto st = db.prepare(
      "UPDATE jobs SET state = ?, first_start_ns = ?, start_ns = ?, end_ns = ?, exit_code = ?, "
      "signal = ?, gpu_indices_json = ?, gpu_uuids_json = ?, runner_pid = ?, runner_start = ?, "
      "attempt = ?, restarts = ?, not_before_ns = ?, stop_action = ?, reason = ?, priority = ?, "
      "eligible_ns = ? WHERE id = ?");
  if (!st) return fail(st.error());
  st->bind_all(job_state_name(j.state), j.first_start_ns, j.start_ns, j.end_ns, j.exit_code,
               j.signal, json(j.gpu_indices).dump(), json(j.gpu_uuids).dump(), opt64(j.runner_pid),
               j.runner_start, j.attempt, j.restarts, j.not_before_ns,
               stop_action_name(j.stop_action), j.reason, j.priority, j.eligible_ns, j.id);
  CARDIAC_TRY(st->run());
  if (db.changes() == 0) return fail(Error::not_found(fmt::format("no job {}", j.id)));
  return {};
}

Result<std::optional<Job>> get_job(const store::Db& db, JobId id) {
  auto st = db.prepare(fmt::format("SELECT {} FROM jobs WHERE id = ?", kJobColumns));
  if (!st) return fail(st.error());
  st->bind_all(id);
  auto jobs = read_jobs(*st);
  if (!jobs) return fail(jobs.error());
  if (jobs->empty()) return std::optional<Job>();
  return std::optional<Job>(std::move(jobs->front()));
}

Result<std::vector<Job>> jobs_in_states(const store::Db& db, const std::vector<JobState>& states) {
  std::string list;
  for (auto s : states) {
    if (!list.empty()) list += ", ";
    list += fmt::format("'{}'", job_state_name(s));
  }
  // The queue loop asks this twice a tick: keep the statement prepared.
  auto st = db.cached(
      fmt::format("SELECT {} FROM jobs WHERE state IN ({}) ORDER BY id", kJobColumns, list));
  if (!st) return fail(st.error());
  return read_jobs(*st);
}

Result<std::vector<Job>> jobs_ended_since(const store::Db& db, TimeNs since, std::size_t limit) {
  auto st = db.prepare(
      fmt::format("SELECT {} FROM jobs WHERE end_ns >= ? AND state NOT IN ('pending', 'held', "
                  "'running') ORDER BY end_ns DESC, id DESC LIMIT ?",
                  kJobColumns));
  if (!st) return fail(st.error());
  st->bind_all(since, static_cast<std::int64_t>(limit));
  return read_jobs(*st);
}

Result<std::map<JobState, std::int64_t>> count_by_state(const store::Db& db) {
  std::map<JobState, std::int64_t> out;
  for (const char* name :
       {"pending", "held", "running", "completed", "failed", "timeout", "cancelled", "lost"}) {
    out[*parse_job_state(name)] = 0;
  }
  auto st = db.prepare("SELECT state, count(*) FROM jobs GROUP BY state");
  if (!st) return fail(st.error());
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    if (auto s = parse_job_state(st->column_text(0))) out[*s] = st->column_int64(1);
  }
  return out;
}

Status insert_attempt(store::Db& db, const Attempt& a) {
  auto st = db.prepare(
      "INSERT OR REPLACE INTO job_attempts(job_id, attempt, start_ns, gpu_indices_json, "
      "gpu_uuids_json) VALUES (?, ?, ?, ?, ?)");
  if (!st) return fail(st.error());
  st->bind_all(a.job, a.attempt, a.start_ns, json(a.gpu_indices).dump(), json(a.gpu_uuids).dump());
  return st->run();
}

Status finish_attempt(store::Db& db, const Attempt& a) {
  auto st = db.prepare(
      "UPDATE job_attempts SET end_ns = ?, exit_code = ?, signal = ?, outcome = ?, reason = ? "
      "WHERE job_id = ? AND attempt = ?");
  if (!st) return fail(st.error());
  st->bind_all(a.end_ns, a.exit_code, a.signal, a.outcome, a.reason, a.job, a.attempt);
  return st->run();
}

Result<std::vector<Attempt>> attempts_of(const store::Db& db, JobId id) {
  auto st = db.prepare(
      "SELECT job_id, attempt, start_ns, end_ns, gpu_indices_json, gpu_uuids_json, exit_code, "
      "signal, outcome, reason FROM job_attempts WHERE job_id = ? ORDER BY attempt");
  if (!st) return fail(st.error());
  st->bind_all(id);
  std::vector<Attempt> out;
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    Attempt a;
    a.job = st->column_int64(0);
    a.attempt = static_cast<unsigned>(st->column_int64(1));
    a.start_ns = st->column_int64(2);
    a.end_ns = st->column_opt_int64(3);
    a.gpu_indices = from_json_text<std::vector<unsigned>>(st->column_text(4));
    a.gpu_uuids = from_json_text<std::vector<std::string>>(st->column_text(5));
    a.exit_code = opt_int(*st, 6);
    a.signal = opt_int(*st, 7);
    a.outcome = st->column_text(8);
    a.reason = st->column_text(9);
    out.push_back(std::move(a));
  }
  return out;
}

Result<std::int64_t> add_fence(store::Db& db, const Fence& f) {
  auto st = db.prepare(
      "INSERT INTO fences(gpu, uuid, reason, who, automatic, created_ns) VALUES (?, ?, ?, ?, ?, "
      "?)");
  if (!st) return fail(st.error());
  st->bind_all(static_cast<std::int64_t>(f.gpu), f.uuid, f.reason, f.who, f.automatic,
               f.created_ns);
  CARDIAC_TRY(st->run());
  auto id = db.query_int64("SELECT last_insert_rowid()");
  if (!id) return fail(id.error());
  return id->value_or(0);
}

Result<int> clear_fences(store::Db& db, unsigned gpu, const std::string& uuid,
                         const std::string& who, TimeNs at) {
  // A fence names the GPU by UUID when it had one: that survives index renumbering; a fence
  // without a UUID (the GPU was lost) matches by index.
  auto st = db.prepare(
      "UPDATE fences SET cleared_ns = ?, cleared_by = ? WHERE cleared_ns IS NULL AND "
      "((uuid != '' AND uuid = ?) OR ((uuid = '' OR ? = '') AND gpu = ?))");
  if (!st) return fail(st.error());
  st->bind_all(at, who, uuid, uuid, static_cast<std::int64_t>(gpu));
  CARDIAC_TRY(st->run());
  return static_cast<int>(db.changes());
}

Result<std::vector<Fence>> list_fences(const store::Db& db, bool all) {
  auto st =
      db.cached(std::string("SELECT id, gpu, uuid, reason, who, automatic, created_ns, cleared_ns, "
                            "cleared_by FROM fences ") +
                (all ? "ORDER BY id DESC" : "WHERE cleared_ns IS NULL ORDER BY id"));
  if (!st) return fail(st.error());
  std::vector<Fence> out;
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    Fence f;
    f.id = st->column_int64(0);
    f.gpu = static_cast<unsigned>(st->column_int64(1));
    f.uuid = st->column_text(2);
    f.reason = st->column_text(3);
    f.who = st->column_text(4);
    f.automatic = st->column_int64(5) != 0;
    f.created_ns = st->column_int64(6);
    f.cleared_ns = st->column_opt_int64(7);
    f.cleared_by = st->column_is_null(8) ? "" : st->column_text(8);
    out.push_back(std::move(f));
  }
  return out;
}

Result<std::map<std::string, UsageRow>> load_usage(const store::Db& db) {
  auto st = db.prepare("SELECT user, decayed, total_gpu_seconds, updated_ns FROM queue_usage");
  if (!st) return fail(st.error());
  std::map<std::string, UsageRow> out;
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    out[st->column_text(0)] = {st->column_double(1), st->column_double(2), st->column_int64(3)};
  }
  return out;
}

Status save_usage(store::Db& db, const std::string& user, const UsageRow& row) {
  auto st = db.prepare(
      "INSERT OR REPLACE INTO queue_usage(user, decayed, total_gpu_seconds, updated_ns) VALUES "
      "(?, ?, ?, ?)");
  if (!st) return fail(st.error());
  st->bind_all(user, row.decayed, row.total_gpu_seconds, row.updated_ns);
  return st->run();
}

}  // namespace cardiac::queue
