// SPDX-License-Identifier: Apache-2.0
// SampleWriter: snapshot → rows, and the batched insert.
#include "store/writer.h"

#include <algorithm>
#include <array>
#include <limits>

#include "store/schema.h"
#include "store/sealed.h"
#include "store/tail_log.h"

namespace cardiac::store {
namespace {

// Metric names of the optional GPU fields, in gpu_fields.def order.
constexpr std::array kGpuFieldNames = {
#define CARDIAC_GPU_FIELD(member, ...) std::string_view("gpu_" #member),
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
};

}  // namespace

const std::vector<StoredMetric>& stored_metrics() {
  static const std::vector<StoredMetric> kAll = [] {
    std::vector<StoredMetric> v;
    for (std::string_view n : kGpuFieldNames) v.push_back({n, true});
    for (std::string_view n :
         {kHostCpuBusy, kHostCpuIowait, kHostMemAvailable, kHostSwapUsed, kHostLoad1}) {
      v.push_back({n, false});
    }
    return v;
  }();
  return kAll;
}

SampleWriter::SampleWriter(Db& db, std::size_t max_batch)
    : db_(db), max_batch_(max_batch == 0 ? 1 : max_batch), gpu_field_ids_(kGpuFieldNames.size()) {
  batch_.reserve(max_batch_);
}

Result<std::int64_t> SampleWriter::metric_id(std::string_view name) {
  std::string key(name);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  // Registered in its own statement (autocommit or the caller's transaction): metric names
  // are few and permanent, so they need not wait for the batch.
  auto ins = db_.prepare("INSERT OR IGNORE INTO metrics(name) VALUES (?)");
  if (!ins) return fail(std::move(ins).error());
  CARDIAC_TRY(ins->bind_all(key).run());
  auto sel = db_.prepare("SELECT id FROM metrics WHERE name = ?");
  if (!sel) return fail(std::move(sel).error());
  sel->bind_all(key);
  auto row = sel->step();
  if (!row) return fail(std::move(row).error());
  if (!*row) return fail(Error::internal("metric vanished after insert: " + key));
  std::int64_t id = sel->column_int64(0);
  ids_.emplace(std::move(key), id);
  return id;
}

Status SampleWriter::push(std::int64_t metric, std::optional<unsigned> gpu, TimeNs at,
                          double value) {
  batch_.push_back(SampleRow{at, gpu, metric, value});
  if (batch_.size() >= max_batch_) return flush();
  return {};
}

Status SampleWriter::append(std::string_view metric, std::optional<unsigned> gpu, TimeNs at,
                            double value) {
  auto id = metric_id(metric);
  if (!id) return fail(std::move(id).error());
  return push(*id, gpu, at, value);
}

Status SampleWriter::push_gpu_fields(const nvml::GpuReading& g, TimeNs at) {
  std::size_t pos = 0;
  // Absent readings produce no row: a missing value must never read as 0.
#define CARDIAC_GPU_FIELD(member, ...)                                   \
  if (g.member) {                                                        \
    auto& id = gpu_field_ids_[pos];                                      \
    if (!id) {                                                           \
      auto got = metric_id(kGpuFieldNames[pos]);                         \
      if (!got) return fail(std::move(got).error());                     \
      id = *got;                                                         \
    }                                                                    \
    CARDIAC_TRY(push(*id, g.index, at, static_cast<double>(*g.member))); \
  }                                                                      \
  ++pos;
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  return {};
}

Status SampleWriter::add_gpus(const nvml::GpuSnapshot& gpus, TimeNs at) {
  if (!gpus.available) return {};
  for (const auto& g : gpus.gpus) CARDIAC_TRY(push_gpu_fields(g, at));
  return {};
}

Status SampleWriter::add_host(const host::HostSnapshot& host, TimeNs at) {
  if (host.cpu) {
    if (prev_cpu_) {
      auto usage = host::compute_cpu_usage(*prev_cpu_, *host.cpu);
      if (usage.total) {
        CARDIAC_TRY(append(kHostCpuBusy, std::nullopt, at, usage.total->busy));
        if (usage.total->iowait) {
          CARDIAC_TRY(append(kHostCpuIowait, std::nullopt, at, *usage.total->iowait));
        }
      }
    }
    prev_cpu_ = host.cpu;
  }
  if (host.memory) {
    const auto& m = *host.memory;
    if (m.available) {
      CARDIAC_TRY(append(kHostMemAvailable, std::nullopt, at, static_cast<double>(*m.available)));
    }
    if (m.swap_total && m.swap_free && *m.swap_total >= *m.swap_free) {
      CARDIAC_TRY(append(kHostSwapUsed, std::nullopt, at,
                         static_cast<double>(*m.swap_total - *m.swap_free)));
    }
  }
  if (host.load) CARDIAC_TRY(append(kHostLoad1, std::nullopt, at, host.load->load1));
  return {};
}

Status SampleWriter::add(const nvml::GpuSnapshot& gpus, const host::HostSnapshot& host, TimeNs at) {
  CARDIAC_TRY(add_gpus(gpus, at));
  return add_host(host, at);
}

// Inside the flush's transaction (which holds the write lock, so writers take turns): appends
// the batch to the segment's tail file as one record, or seals tail and batch together. Returns
// whether it sealed; `seg` is the state after the commit.
Result<bool> SampleWriter::write_batch(std::span<const SeriesPoints> batch,
                                       std::optional<Segment>& seg) {
  auto sealed_until = sealed_tail_segment(db_);
  if (!sealed_until) return fail(std::move(sealed_until).error());
  // Another writer's first flush seals every segment: ours is then gone, start another.
  if (seg && *sealed_until >= seg->id) seg.reset();
  if (!seg) {
    // Records left by an earlier writer (a crash, a restart) and rows of the older tail table:
    // their chains are complete. They are sealed on their own, so a seal never spans the time
    // the agent was down.
    auto left = seal_tail_locked(db_);
    if (!left) return fail(std::move(left).error());
  }
  bool seal = false;
  for (const auto& [key, points] : batch) {
    if (points.empty()) continue;
    const std::size_t before = seg ? seg->counts[key] : 0;
    if (before + points.size() >= kSealPoints) seal = true;
  }
  if (seal) {
    SeriesMap series;
    for (const auto& [key, points] : batch) {
      if (!points.empty()) series.emplace(key, points);
    }
    auto sealed = seal_tail_locked(db_, series);
    if (!sealed) return fail(std::move(sealed).error());
    seg.reset();
    return true;
  }

  if (!seg) {
    auto last = sealed_tail_segment(db_);
    if (!last) return fail(std::move(last).error());
    seg.emplace();
    seg->id = *last + 1;
    // Its first record truncates the file of the segment two before, sealed by an earlier
    // commit: that seal must be on disk before its records leave the file.
    CARDIAC_TRY(sync_wal(db_.path()));
  }
  TailRecord record;
  record.segment = seg->id;
  record.seq = seg->next_seq;
  record.start_ns = std::numeric_limits<TimeNs>::max();
  record.end_ns = std::numeric_limits<TimeNs>::min();
  for (const auto& [key, points] : batch) {
    if (points.empty()) continue;
    seg->counts[key] += points.size();
    for (const Point& p : points) {
      record.start_ns = std::min(record.start_ns, p.time);
      record.end_ns = std::max(record.end_ns, p.time);
    }
    record.count += static_cast<std::int64_t>(points.size());
  }
  auto data = encode_tail_row(batch, seg->chain);
  if (!data) return fail(std::move(data).error());
  record.data = *data;
  CARDIAC_TRY(append_tail_record(db_.path(), record));
  ++seg->next_seq;
  return false;
}

void SampleWriter::gather() {
  for (auto& s : series_) s.points.clear();
  for (const auto& r : batch_) {
    const SeriesKey key{r.metric_id, r.gpu ? std::int64_t{*r.gpu} : kHostGpu};
    auto [at, added] = series_at_.try_emplace(key, series_.size());
    if (added) series_.push_back({key, {}});
    series_[at->second].points.push_back({r.time_ns, r.value});
  }
  // A series absent from this batch (the host's are read every few samples) stays, empty: the
  // tail row leaves it out, and its vector is there when it comes back.
}

Status SampleWriter::flush() {
  if (batch_.empty()) return {};
  gather();
  auto tx = Transaction::begin(db_);
  if (!tx) return fail(std::move(tx).error());
  // Work on a copy: a failed flush rolls back, and the segment must match what is committed.
  // The copy is assigned into the one kept from the last flush, whose map nodes it reuses.
  scratch_ = segment_;
  auto sealed = write_batch(series_, scratch_);
  if (!sealed) return fail(sealed.error().with_context("sample flush"));  // tx rolls back
  CARDIAC_TRY(tx->commit());
  std::swap(segment_, scratch_);
  batch_.clear();
  if (*sealed) {
    auto moved = seal_legacy_samples(db_, kLegacyRowsPerSeal);
    if (!moved) return fail(moved.error().with_context("sealing rows of the older samples table"));
  }
  return {};
}

}  // namespace cardiac::store
