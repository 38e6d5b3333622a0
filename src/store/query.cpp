// SPDX-License-Identifier: Apache-2.0
// History queries across raw samples and the rollup levels.
#include "store/query.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "core/format.h"
#include "store/minute_blocks.h"
#include "store/retention.h"
#include "store/schema.h"
#include "store/sealed.h"
#include "store/writer.h"

namespace cardiac::store {
namespace {

struct Acc {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  std::int64_t count = 0;
};

using Steps = std::map<TimeNs, Acc>;

// Adds the raw samples in [from, to) to `steps`, summed in time order as SQL's sum() over the
// series index would.
Status read_raw(const Db& db, std::int64_t metric, std::optional<unsigned> gpu, DurationNs step,
                TimeNs from, TimeNs to, Steps& steps, TailCache* tail) {
  if (from >= to) return {};
  auto points =
      read_series(db, SeriesKey{metric, gpu ? std::int64_t{*gpu} : kHostGpu}, from, to, tail);
  if (!points) return fail(std::move(points).error());
  Acc part;
  std::optional<TimeNs> at;
  const auto add = [&] {
    if (!at) return;
    // Raw steps come last and in time order: appending at the end of the map is O(1).
    Acc& a = steps.emplace_hint(steps.end(), *at, Acc{})->second;
    a.min = std::min(a.min, part.min);
    a.max = std::max(a.max, part.max);
    a.sum += part.sum;
    a.count += part.count;
  };
  for (const Point& p : *points) {
    // The points are in time order: while one stays inside the current step there is no need
    // for a division (which costs more than the rest of the loop). Negative times round
    // towards zero, like SQL's %, so they always divide.
    if (at && *at >= 0 && p.time >= *at && p.time - *at < step) {
      part.min = std::min(part.min, p.value);
      part.max = std::max(part.max, p.value);
      part.sum += p.value;
      ++part.count;
      continue;
    }
    const TimeNs t = p.time - (p.time % step);
    if (at != t) {
      add();
      part = Acc{};
      at = t;
    }
    part.min = std::min(part.min, p.value);
    part.max = std::max(part.max, p.value);
    part.sum += p.value;
    ++part.count;
  }
  add();
  return {};
}

// Adds the minute buckets in [from, to) to `steps`, per step as the SQL over `rollup_1m` rows
// gave them: min(min), max(max), sum(avg * count) summed in minute order, sum(count).
Status read_minutes(const Db& db, std::int64_t metric, std::optional<unsigned> gpu, DurationNs step,
                    TimeNs from, TimeNs to, Steps& steps) {
  auto buckets =
      read_minute_buckets(db, SeriesKey{metric, gpu ? std::int64_t{*gpu} : kHostGpu}, from, to);
  if (!buckets) return fail(std::move(buckets).error());
  std::size_t i = 0;
  while (i < buckets->size()) {
    const TimeNs t = (*buckets)[i].bucket - ((*buckets)[i].bucket % step);
    Acc part;
    for (; i < buckets->size() && (*buckets)[i].bucket - ((*buckets)[i].bucket % step) == t; ++i) {
      const MinuteBucket& b = (*buckets)[i];
      part.min = std::min(part.min, b.min);
      part.max = std::max(part.max, b.max);
      part.sum += b.avg * static_cast<double>(b.count);
      part.count += b.count;
    }
    Acc& a = steps[t];
    a.min = std::min(a.min, part.min);
    a.max = std::max(a.max, part.max);
    a.sum += part.sum;
    a.count += part.count;
  }
  return {};
}

// Adds the rows of one rollup level in [from, to) to `steps`. Columns: step start, min, max,
// sum, count; parameters: ?1 step, ?2 metric, ?3 gpu, ?4 from, ?5 to.
Status read_level(const Db& db, Resolution level, std::int64_t metric, std::optional<unsigned> gpu,
                  DurationNs step, TimeNs from, TimeNs to, Steps& steps,
                  TailCache* tail = nullptr) {
  if (from >= to) return {};
  if (level == Resolution::kRaw) return read_raw(db, metric, gpu, step, from, to, steps, tail);
  if (level == Resolution::kMinute) return read_minutes(db, metric, gpu, step, from, to, steps);
  const std::string sql = fmt::format(
      "SELECT bucket_ns - (bucket_ns % ?1), min(min), max(max), sum(avg * count), sum(count) "
      "FROM {} WHERE metric_id = ?2 AND gpu = ?3 AND bucket_ns >= ?4 AND bucket_ns < ?5 "
      "GROUP BY 1",
      level == Resolution::kMinute ? "rollup_1m" : "rollup_1h");
  const std::int64_t stored_gpu = gpu ? std::int64_t{*gpu} : kHostGpu;
  auto st = db.prepare(sql);
  if (!st) return fail(std::move(st).error());
  st->bind_all(step, metric, stored_gpu, from, to);
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    Acc& a = steps[st->column_int64(0)];
    a.min = std::min(a.min, st->column_double(1));
    a.max = std::max(a.max, st->column_double(2));
    a.sum += st->column_double(3);
    a.count += st->column_int64(4);
  }
  return {};
}

Result<TimeNs> covered_until(const Db& db, std::string_view level) {
  auto done = rolled_up_until(db, level);
  if (!done) return fail(std::move(done).error());
  return done->value_or(std::numeric_limits<TimeNs>::min());
}

}  // namespace

std::string_view resolution_name(Resolution r) {
  switch (r) {
    case Resolution::kRaw:
      return "raw";
    case Resolution::kMinute:
      return "1m";
    case Resolution::kHour:
      return "1h";
  }
  return "raw";
}

Resolution choose_resolution(DurationNs step) {
  if (step >= kHourNs) return Resolution::kHour;
  if (step >= kMinuteNs) return Resolution::kMinute;
  return Resolution::kRaw;
}

Status check_history_query(const Db& db, const HistoryQuery& q) {
  if (q.step <= 0) return fail(Error::invalid("the step must be positive", q.metric));
  if (q.until < q.since) return fail(Error::invalid("until is before since", q.metric));
  const auto& known = stored_metrics();
  auto it = std::find_if(known.begin(), known.end(),
                         [&](const StoredMetric& m) { return m.name == q.metric; });
  if (it == known.end()) {
    // A name the agent registered that this build does not list is still a real series.
    auto st = db.prepare("SELECT 1 FROM metrics WHERE name = ?");
    if (!st) return fail(std::move(st).error());
    st->bind_all(q.metric);
    auto found = st->step();
    if (!found) return fail(std::move(found).error());
    if (*found) return {};
    // Suggest the names that share the typed prefix (up to its last '_'), else list them all.
    const std::string_view typed = q.metric;
    const std::string_view stem = typed.substr(0, typed.rfind('_') + 1);
    std::vector<std::string_view> near;
    for (const StoredMetric& m : known) {
      if (!stem.empty() && m.name.starts_with(stem)) near.push_back(m.name);
    }
    if (near.empty()) {
      for (const StoredMetric& m : known) near.push_back(m.name);
    }
    return fail(Error::invalid(
        fmt::format("unknown metric '{}' (known: {})", q.metric, fmt::join(near, ", "))));
  }
  if (it->per_gpu && !q.gpu) {
    return fail(Error::invalid(
        fmt::format("'{}' is a GPU metric: name the GPU (--gpu N; gpu= in the API)", q.metric)));
  }
  if (!it->per_gpu && q.gpu) {
    return fail(
        Error::invalid(fmt::format("'{}' is a host metric: it has no GPU index", q.metric)));
  }
  return {};
}

Result<bool> has_gpu_series(const Db& db, const std::string& metric, unsigned gpu) {
  // Each probe is one seek on a (metric_id, gpu, time) key.
  auto st = db.prepare(
      "SELECT (SELECT id FROM metrics WHERE name = ?1), "
      "EXISTS (SELECT 1 FROM rollup_1m WHERE metric_id = "
      "(SELECT id FROM metrics WHERE name = ?1) AND gpu = ?2) "
      "OR EXISTS (SELECT 1 FROM rollup_1h WHERE metric_id = "
      "(SELECT id FROM metrics WHERE name = ?1) AND gpu = ?2)");
  if (!st) return fail(std::move(st).error());
  st->bind_all(metric, std::int64_t{gpu});
  auto row = st->step();
  if (!row) return fail(std::move(row).error());
  if (!*row || st->column_is_null(0)) return false;
  if (st->column_int64(1) != 0) return true;
  return has_raw_series(db, SeriesKey{st->column_int64(0), std::int64_t{gpu}});
}

Result<History> history(const Db& db, const HistoryQuery& q, TailCache* tail) {
  if (q.step <= 0) return fail(Error::invalid("history step must be positive", q.metric));
  History out;
  out.resolution = choose_resolution(q.step);
  if (q.since >= q.until) return out;

  auto id_st = db.prepare("SELECT id FROM metrics WHERE name = ?");
  if (!id_st) return fail(std::move(id_st).error());
  id_st->bind_all(q.metric);
  auto found = id_st->step();
  if (!found) return fail(std::move(found).error());
  if (!*found) return out;
  const std::int64_t metric = id_st->column_int64(0);

  // Walk from the coarsest chosen level to raw: each level serves the range up to where it has
  // been rolled up, the next finer level the rest.
  Steps steps;
  TimeNs from = q.since;
  if (out.resolution == Resolution::kHour) {
    auto until = covered_until(db, "1h");
    if (!until) return fail(std::move(until).error());
    const TimeNs to = std::clamp(*until, from, q.until);
    CARDIAC_TRY(read_level(db, Resolution::kHour, metric, q.gpu, q.step, from, to, steps));
    from = to;
  }
  if (out.resolution != Resolution::kRaw) {
    auto until = covered_until(db, "1m");
    if (!until) return fail(std::move(until).error());
    const TimeNs to = std::clamp(*until, from, q.until);
    CARDIAC_TRY(read_level(db, Resolution::kMinute, metric, q.gpu, q.step, from, to, steps));
    from = to;
  }
  CARDIAC_TRY(read_level(db, Resolution::kRaw, metric, q.gpu, q.step, from, q.until, steps, tail));

  out.points.reserve(steps.size());
  for (const auto& [t, a] : steps) {
    out.points.push_back(
        HistoryPoint{t, a.sum / static_cast<double>(a.count), a.min, a.max, a.count});
  }
  return out;
}

}  // namespace cardiac::store
