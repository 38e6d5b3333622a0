// SPDX-License-Identifier: Apache-2.0
// The pieces the agent's threads share. Each guards itself, so no caller takes a lock by hand:
//  - Latest<T>: a value replaced as a whole (the published snapshot, the latest host reading);
//  - Inbox: what the kernel-log, NVML-event and queue threads hand to the sampler;
//  - KmsgStatus: whether the kernel log is being read now, and why not;
//  - AgentStore: the writer connection with the sample writer and the alert book (the sampler's
//    persist and evaluate stages, and the alert mutations of HTTP and the control socket);
//  - Guarded<T>: anything else used from several threads (the HTTP reader connection);
//  - Stopper: a stop flag that wakes every sleeping loop;
//  - HeapTrimmer: gives the heap's free pages back to the system once in a while.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alerts/alert_book.h"
#include "core/clock.h"
#include "health/faults.h"
#include "health/report.h"
#include "host/host.h"
#include "kmsg/event.h"
#include "queue/queue.h"
#include "store/db.h"
#include "store/writer.h"
#include "telemetry/event_worker.h"

namespace cardiac::agent {

// Kernel-log and NVML fault tallies since the agent started.
struct FaultTally {
  std::map<std::pair<std::string, int>, std::uint64_t> xid_counts;  // (bus id, xid) → count
  std::map<std::string, int> last_xid;                              // bus id → latest xid
  health::FaultCounts fault_counts;  // by (bus id, class), for rules and /metrics
};

// The latest view of the machine, published as a whole after every sample.
// Where the agent's own memory is, for /metrics: what glibc's allocator holds in live blocks and
// keeps free (mallinfo2), and SQLite's share of the live blocks. Read with a sample, at most once
// per kMemoryReadPeriod; the samples between carry the last reading.
inline constexpr DurationNs kMemoryReadPeriod = 10 * kNsPerSec;
struct ProcessMemory {
  // uordblks + hblkhd: live blocks, mapped ones included; fordblks: free in the arenas, not
  // given back. Absent when glibc's allocator is not the one in use (a sanitizer's or a
  // preloaded one answers mallinfo2 with zeros).
  std::optional<double> heap_in_use;
  std::optional<double> heap_free;
  double sqlite = 0;  // sqlite3_memory_used()
};
ProcessMemory read_process_memory();

struct Snapshot {
  std::shared_ptr<const health::StatusReport> report;  // null before the first sample
  FaultTally faults;
  // GPU index → a critical alert firing on it, for the queue's placement.
  std::map<unsigned, std::string> critical_alerts;
  std::uint64_t samples = 0;
  std::uint64_t missed_samples = 0;
  std::uint64_t worker_restarts = 0;
  double last_sample_seconds = 0;
  TimeNs last_sample_at = 0;            // wall clock
  TimeNs last_sample_mono = 0;          // monotonic, for /healthz
  bool gpus_seen = false;               // some sample since the start listed a GPU
  std::optional<ProcessMemory> memory;  // as of the latest reading
};

struct HostView {
  std::optional<host::HostSnapshot> snapshot;
  std::optional<host::HostRates> rates;
};

template <class T>
class Latest {
 public:
  [[nodiscard]] T get() const {
    std::lock_guard lock(mu_);
    return value_;
  }
  void set(T v) {
    std::lock_guard lock(mu_);
    value_ = std::move(v);
  }

 private:
  mutable std::mutex mu_;
  T value_{};
};

template <class T>
class Guarded {
 public:
  explicit Guarded(T v) : value_(std::move(v)) {}
  template <class F>
  auto with(F&& f) {
    std::lock_guard lock(mu_);
    return std::forward<F>(f)(value_);
  }

 private:
  std::mutex mu_;
  T value_;
};

class Inbox {
 public:
  struct Batch {
    std::vector<kmsg::KernelEvent> kernel;
    std::vector<telemetry::GpuEvent> nvml;
    std::vector<queue::FenceNotice> fences;
  };
  void add_kernel(std::vector<kmsg::KernelEvent> events);
  void add_nvml(telemetry::GpuEvent e);
  void add_fence(queue::FenceNotice n);
  // Everything added since the last take, in arrival order per kind.
  [[nodiscard]] Batch take();

 private:
  std::mutex mu_;
  Batch pending_;
};

class KmsgStatus {
 public:
  void set(bool up, std::string error);
  [[nodiscard]] bool up() const { return up_.load(); }
  [[nodiscard]] std::string error() const;

 private:
  std::atomic<bool> up_{false};
  mutable std::mutex mu_;
  std::string error_;
};

// Owns the writer connection; the writer and the book hold references into it, so it never
// moves (make it with std::make_unique).
class AgentStore {
 public:
  AgentStore(store::Db db, const Clock& clock);
  AgentStore(const AgentStore&) = delete;
  AgentStore& operator=(const AgentStore&) = delete;

  struct Access {
    store::Db& db;
    store::SampleWriter& writer;
    alerts::AlertBook& alerts;
  };
  template <class F>
  auto with(F&& f) {
    std::lock_guard lock(mu_);
    Access a{db_, writer_, alerts_};
    return std::forward<F>(f)(a);
  }

 private:
  std::mutex mu_;
  store::Db db_;
  store::SampleWriter writer_;
  alerts::AlertBook alerts_;
};

class Stopper {
 public:
  // Waits up to `d` (real time) or until stop(); false when stopping.
  bool sleep_for(DurationNs d);
  void stop();
  [[nodiscard]] bool stopping() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

// glibc keeps what a thread frees in that thread's arena for later use, so the agent's RSS holds
// the high-water mark of every burst (a render, a history query, a roll-up) and grew by 5–8 MiB
// over its first ten minutes with only 3–4 MiB of the heap in use. maybe_trim() hands the free
// pages back (malloc_trim) at most once per `period`, from a loop that runs anyway (the
// sampler's); a page given back and needed again costs one page fault.
class HeapTrimmer {
 public:
  static constexpr DurationNs kPeriod = 60 * kNsPerSec;

  // `trim` replaces malloc_trim(0) (tests count the calls).
  explicit HeapTrimmer(const Clock& clock, DurationNs period = kPeriod,
                       std::function<void()> trim = {});
  // Trims when `period` has passed since the last trim (or since construction).
  void maybe_trim();
  [[nodiscard]] std::uint64_t trims() const { return trims_; }

 private:
  const Clock& clock_;
  DurationNs period_;
  std::function<void()> trim_;
  TimeNs last_;
  std::uint64_t trims_ = 0;
};

}  // namespace cardiac::agent
