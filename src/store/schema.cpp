// SPDX-License-Identifier: Apache-2.0
// The list of migrations and the code that applies them.
#include "store/schema.h"

#include <array>
#include <string_view>

#include "core/format.h"

namespace cardiac::store {
namespace {

// Append only: a released migration never changes, a schema change is a new entry.
constexpr std::array<std::string_view, 9> kMigrations = {
    // 1: the initial layout. Samples are "long" (one row per metric value) so a new metric is
    // a row in `metrics`, not a migration.
    R"sql(
CREATE TABLE metrics (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE samples (
  time_ns INTEGER NOT NULL,
  gpu INTEGER,
  metric_id INTEGER NOT NULL REFERENCES metrics(id),
  value REAL NOT NULL
);
CREATE INDEX samples_by_series ON samples(metric_id, gpu, time_ns);
CREATE TABLE rollup_1m (
  bucket_ns INTEGER NOT NULL,
  gpu INTEGER NOT NULL,
  metric_id INTEGER NOT NULL REFERENCES metrics(id),
  min REAL NOT NULL,
  avg REAL NOT NULL,
  max REAL NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (metric_id, gpu, bucket_ns)
) WITHOUT ROWID;
CREATE TABLE rollup_1h (
  bucket_ns INTEGER NOT NULL,
  gpu INTEGER NOT NULL,
  metric_id INTEGER NOT NULL REFERENCES metrics(id),
  min REAL NOT NULL,
  avg REAL NOT NULL,
  max REAL NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (metric_id, gpu, bucket_ns)
) WITHOUT ROWID;
CREATE TABLE rollup_state (
  level TEXT PRIMARY KEY,
  done_until_ns INTEGER NOT NULL
);
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  time_ns INTEGER NOT NULL,
  kind TEXT NOT NULL,
  gpu INTEGER,
  pci_bus_id TEXT NOT NULL DEFAULT '',
  xid INTEGER,
  message TEXT NOT NULL DEFAULT '',
  source TEXT NOT NULL DEFAULT '',
  dedup_key TEXT NOT NULL UNIQUE
);
CREATE INDEX events_by_time ON events(time_ns);
CREATE TABLE alerts (
  id INTEGER PRIMARY KEY,
  rule TEXT NOT NULL,
  labels_json TEXT NOT NULL DEFAULT '{}',
  state TEXT NOT NULL,
  severity TEXT NOT NULL,
  started_ns INTEGER NOT NULL,
  resolved_ns INTEGER,
  last_value REAL,
  description TEXT NOT NULL DEFAULT '',
  acked_by TEXT,
  acked_ns INTEGER
);
CREATE INDEX alerts_by_state ON alerts(state, started_ns);
CREATE TABLE alert_history (
  alert_id INTEGER NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
  time_ns INTEGER NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  value REAL
);
CREATE INDEX alert_history_by_alert ON alert_history(alert_id, time_ns);
)sql",
    // 2: alert book. The fingerprint (rule + labels) is unique only among open alerts, so a
    // re-fire after a resolve is a new row; silences are kept after they end, for the record.
    R"sql(
ALTER TABLE alerts ADD COLUMN fingerprint TEXT;
ALTER TABLE alerts ADD COLUMN fired_ns INTEGER;
ALTER TABLE alerts ADD COLUMN silenced INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX alerts_open_by_fingerprint ON alerts(fingerprint)
  WHERE state IN ('pending', 'firing');
CREATE TABLE silences (
  id INTEGER PRIMARY KEY,
  matchers_json TEXT NOT NULL,
  starts_ns INTEGER NOT NULL,
  ends_ns INTEGER NOT NULL,
  created_by TEXT NOT NULL DEFAULT '',
  comment TEXT NOT NULL DEFAULT '',
  created_ns INTEGER NOT NULL
);
CREATE INDEX silences_by_end ON silences(ends_ns);
)sql",
    // 3: incidents: a GPU fault (lost, unresponsive, reset required, NVML error) from the sample
    // that first showed it to the one that showed the GPU healthy again.
    R"sql(
CREATE TABLE incidents (
  id INTEGER PRIMARY KEY,
  gpu INTEGER NOT NULL,
  uuid TEXT NOT NULL DEFAULT '',
  pci_bus_id TEXT NOT NULL DEFAULT '',
  kind TEXT NOT NULL,
  started_ns INTEGER NOT NULL,
  ended_ns INTEGER,
  evidence TEXT NOT NULL DEFAULT ''
);
CREATE INDEX incidents_by_start ON incidents(started_ns);
CREATE UNIQUE INDEX incidents_open_by_gpu ON incidents(gpu) WHERE ended_ns IS NULL;
)sql",
    // 4: the GPU job queue (src/queue). `jobs` holds every job ever submitted (ids are never
    // reused); `job_attempts` one row per start (a requeue is a new attempt); `fences` GPUs
    // kept free of new work, kept after they are cleared; `queue_usage` the fair-share usage.
    R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  state TEXT NOT NULL,
  user TEXT NOT NULL,
  uid INTEGER NOT NULL,
  gid INTEGER NOT NULL,
  groups_json TEXT NOT NULL DEFAULT '[]',
  account TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL DEFAULT '',
  argv_json TEXT NOT NULL,
  env_json TEXT NOT NULL DEFAULT '{}',
  cwd TEXT NOT NULL DEFAULT '/',
  gpus INTEGER NOT NULL,
  gpu_mem INTEGER NOT NULL DEFAULT 0,
  shared INTEGER NOT NULL DEFAULT 0,
  priority INTEGER NOT NULL DEFAULT 0,
  time_limit_ns INTEGER NOT NULL DEFAULT 0,
  after_json TEXT NOT NULL DEFAULT '[]',
  submit_ns INTEGER NOT NULL,
  first_start_ns INTEGER,
  start_ns INTEGER,
  end_ns INTEGER,
  exit_code INTEGER,
  signal INTEGER,
  gpu_indices_json TEXT NOT NULL DEFAULT '[]',
  gpu_uuids_json TEXT NOT NULL DEFAULT '[]',
  runner_pid INTEGER,
  runner_start INTEGER,
  attempt INTEGER NOT NULL DEFAULT 0,
  restarts INTEGER NOT NULL DEFAULT 0,
  not_before_ns INTEGER NOT NULL DEFAULT 0,
  stop_action TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_by_state ON jobs(state, id);
CREATE INDEX jobs_by_end ON jobs(end_ns);
CREATE TABLE job_attempts (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER,
  gpu_indices_json TEXT NOT NULL DEFAULT '[]',
  gpu_uuids_json TEXT NOT NULL DEFAULT '[]',
  exit_code INTEGER,
  signal INTEGER,
  outcome TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (job_id, attempt)
);
CREATE TABLE fences (
  id INTEGER PRIMARY KEY,
  gpu INTEGER NOT NULL,
  uuid TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL,
  who TEXT NOT NULL,
  automatic INTEGER NOT NULL DEFAULT 0,
  created_ns INTEGER NOT NULL,
  cleared_ns INTEGER,
  cleared_by TEXT
);
CREATE INDEX fences_active ON fences(gpu) WHERE cleared_ns IS NULL;
CREATE TABLE queue_usage (
  user TEXT PRIMARY KEY,
  decayed REAL NOT NULL DEFAULT 0,
  total_gpu_seconds REAL NOT NULL DEFAULT 0,
  updated_ns INTEGER NOT NULL DEFAULT 0
);
)sql",
    // 5: when a queued job became eligible (released from hold, its dependencies met): the
    // multifactor age counts from here, like Slurm's accrue time. NULL: from its submit time.
    R"sql(
ALTER TABLE jobs ADD COLUMN eligible_ns INTEGER;
)sql",
    // 6: compressed samples (store/chunk.h). The writer commits each flush as one row of
    // `sample_tail` (every series of the batch, bit-packed), and about every 600 samples per
    // series seals the tail into one `sample_seals` row (the instants, shared by its chunks)
    // and one `sample_chunks` row per series. Chunks are found by (seal, metric, gpu), so a
    // seal's chunks are appended together rather than into one place of the tree per series;
    // a rowid table with that index rather than a WITHOUT ROWID table keyed so, because rowid
    // appends fill their pages (about half the pages and WAL frames for the same chunks).
    // Rows already in `samples` stay readable there and are sealed a batch at a time.
    R"sql(
CREATE TABLE sample_seals (
  id INTEGER PRIMARY KEY,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  times BLOB NOT NULL
);
CREATE TABLE sample_chunks (
  id INTEGER PRIMARY KEY,
  seal_id INTEGER NOT NULL REFERENCES sample_seals(id),
  metric_id INTEGER NOT NULL REFERENCES metrics(id),
  gpu INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  count INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE UNIQUE INDEX sample_chunks_by_seal ON sample_chunks(seal_id, metric_id, gpu);
CREATE TABLE sample_tail (
  id INTEGER PRIMARY KEY,
  segment INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  count INTEGER NOT NULL,
  data BLOB NOT NULL
);
)sql",
    // 7: the unsealed tail moves out of SQLite into two append-only files beside the database
    // (store/tail_log.h): a commit per 5 s flush cost a new B-tree leaf and its parent in the
    // WAL and again at the checkpoint, about 12 kB a flush. `tail_log` holds the last segment
    // whose records are sealed; rows still in `sample_tail` stay readable and are sealed by
    // the next writer, so the files' segments count on from theirs.
    // Minute roll-ups become one block per series and hour (store/minute_blocks.h), found by
    // (hour, metric, gpu): a roll-up appends them together, where `rollup_1m`, keyed by series,
    // rewrote at least one B-tree page per series per run. Its rows stay readable and are
    // pruned by age; a roll-up that recomputes one of their minutes moves it into a block.
    R"sql(
CREATE TABLE tail_log (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  sealed_segment INTEGER NOT NULL
);
INSERT INTO tail_log(id, sealed_segment) SELECT 1, coalesce(max(segment), 0) FROM sample_tail;
CREATE TABLE rollup_1m_blocks (
  id INTEGER PRIMARY KEY,
  hour_ns INTEGER NOT NULL,
  metric_id INTEGER NOT NULL REFERENCES metrics(id),
  gpu INTEGER NOT NULL,
  buckets INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE UNIQUE INDEX rollup_1m_blocks_by_hour ON rollup_1m_blocks(hour_ns, metric_id, gpu);
)sql",
    // 8: an incident's whole lifecycle, for the repeat-offender rules (store/incidents.h): the
    // card (serial, UUID) and node it happened on, what caused it, when cardiac saw it, when
    // the queue fenced the GPU, who or what returned it to service (`ended_ns`), and what
    // people did about it in between (`incident_remediations`). Rows from before were opened
    // by the sample that saw them: their detection is their start.
    R"sql(
ALTER TABLE incidents ADD COLUMN serial TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN hostname TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN cause TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN detected_ns INTEGER;
ALTER TABLE incidents ADD COLUMN fenced_ns INTEGER;
ALTER TABLE incidents ADD COLUMN returned_by TEXT NOT NULL DEFAULT '';
UPDATE incidents SET detected_ns = started_ns;
CREATE TABLE incident_remediations (
  id INTEGER PRIMARY KEY,
  incident_id INTEGER NOT NULL REFERENCES incidents(id),
  action TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT '',
  who TEXT NOT NULL,
  at_ns INTEGER NOT NULL
);
CREATE INDEX incident_remediations_by_incident ON incident_remediations(incident_id);
)sql",
    // 9: no table changes. From here on seals write chunks of format 5 (a skipped instant
    // repeated in two bits) and roll-ups write packed minute blocks (store/chunk.h,
    // store/minute_blocks.h); this cardiac reads both the old and the new, but a cardiac from
    // before would call the new blobs corrupt, so the version tells it to refuse the store.
    R"sql(
SELECT 1;
)sql",
};

}  // namespace

int latest_schema_version() {
  return static_cast<int>(kMigrations.size());
}

Result<int> schema_version(const Db& db) {
  auto exists = db.query_int64(
      "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'");
  if (!exists) return fail(std::move(exists).error());
  if (exists->value_or(0) == 0) return 0;
  auto v = db.query_int64("SELECT max(version) FROM schema_version");
  if (!v) return fail(std::move(v).error());
  return static_cast<int>(v->value_or(0));
}

Status migrate(Db& db) {
  CARDIAC_TRY(
      db.exec("CREATE TABLE IF NOT EXISTS schema_version ("
              "version INTEGER PRIMARY KEY, applied_ns INTEGER NOT NULL DEFAULT 0)"));
  auto current = schema_version(db);
  if (!current) return fail(std::move(current).error());
  const int latest = latest_schema_version();
  if (*current > latest) {
    return fail(Error::unsupported(
        fmt::format("schema version {} is newer than this cardiac understands ({}); upgrade "
                    "cardiac or point it at another state directory",
                    *current, latest),
        fmt::format("database {}", db.path())));
  }
  for (int v = *current + 1; v <= latest; ++v) {
    auto tx = Transaction::begin(db);
    if (!tx) return fail(std::move(tx).error());
    // Another process may have migrated between our read and taking the write lock.
    auto now_at = schema_version(db);
    if (!now_at) return fail(std::move(now_at).error());
    if (*now_at >= v) continue;
    auto applied = db.exec(kMigrations[static_cast<std::size_t>(v - 1)]);
    if (!applied) return fail(applied.error().with_context(fmt::format("migration {}", v)));
    auto st = db.prepare(
        "INSERT INTO schema_version(version, applied_ns) "
        "VALUES (?, CAST((julianday('now') - 2440587.5) * 86400000000000 AS INTEGER))");
    if (!st) return fail(std::move(st).error());
    CARDIAC_TRY(st->bind_all(v).run());
    CARDIAC_TRY(tx->commit());
  }
  return {};
}

Result<Db> open_store(const std::string& path, const OpenOptions& options) {
  auto db = Db::open(path, options);
  if (!db) return fail(std::move(db).error());
  CARDIAC_TRY(migrate(*db));
  return db;
}

}  // namespace cardiac::store
