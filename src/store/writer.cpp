// SPDX-License-Identifier: Apache-2.0
// SampleWriter: snapshot → rows, and the batched insert.
#include "store/writer.h"

#include <array>

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

Status SampleWriter::flush() {
  if (batch_.empty()) return {};
  if (!insert_) {
    auto st = db_.prepare("INSERT INTO samples(time_ns, gpu, metric_id, value) VALUES (?,?,?,?)");
    if (!st) return fail(std::move(st).error());
    insert_.emplace(std::move(*st));
  }
  auto tx = Transaction::begin(db_);
  if (!tx) return fail(std::move(tx).error());
  for (const auto& r : batch_) {
    insert_->bind_all(r.time_ns, r.gpu, r.metric_id, r.value);
    auto ok = insert_->run();
    if (!ok) return fail(ok.error().with_context("sample flush"));  // tx rolls back
  }
  CARDIAC_TRY(tx->commit());
  batch_.clear();
  return {};
}

}  // namespace cardiac::store
