// SPDX-License-Identifier: Apache-2.0
// Test helpers: a temporary directory with a real store file, and hand-made GPU readings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tests/temp_dir.h"
#include "nvml/gpu.h"
#include "store/db.h"

namespace cardiac::store::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
using cardiac::testing::TempDir;

// open_store() on dir/name; fails the test on error.
Db open_test_store(const TempDir& dir, const std::string& name = "cardiac.db");

// A healthy H100-like reading with most fields present and a few absent (fan, memory
// temperature, retired pages), as NVML reports them on an SXM part.
nvml::GpuReading healthy_gpu(unsigned index);

// One raw sample as the tests look at it, wherever the store keeps it.
struct RawRow {
  TimeNs time = 0;
  std::optional<std::int64_t> gpu;  // nullopt = host
  std::string metric;
  double value = 0;
};
// Every raw sample (legacy rows, chunks, tail) through read_all_series(); fails the test on error.
std::vector<RawRow> raw_rows(const Db& db);

// Tail records not sealed yet (the tail files' records after the sealed segment); fails the
// test on error.
std::int64_t tail_records(const Db& db);

// Copies every minute bucket (rows of `rollup_1m` and blocks) into the temporary table
// `minute_rows` (metric_id, gpu, bucket_ns, min, avg, max, count), replacing what it held, for
// SQL over them; fails the test on error.
void copy_minute_rows(Db& db);

// Undoes migration 8 (the incident lifecycle) but not its schema_version row, for tests that
// rewind a store to an older schema before opening it again.
inline constexpr const char* kUndoMigration8 =
    "DROP TABLE incident_remediations; ALTER TABLE incidents DROP COLUMN serial; "
    "ALTER TABLE incidents DROP COLUMN hostname; ALTER TABLE incidents DROP COLUMN cause; "
    "ALTER TABLE incidents DROP COLUMN detected_ns; ALTER TABLE incidents DROP COLUMN fenced_ns; "
    "ALTER TABLE incidents DROP COLUMN returned_by;";

// count(*) of a table or any scalar query.
std::int64_t scalar(const Db& db, const std::string& sql);

}  // namespace cardiac::store::testing
