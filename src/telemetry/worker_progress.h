// SPDX-License-Identifier: Apache-2.0
// A page of shared memory where the NVML worker publishes which call is in flight, so that
// the parent can name the hung call ("nvmlDeviceGetTemperature on GPU 3") without the worker
// writing anything to the pipe per call.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace cardiac::telemetry {

struct InFlightCall {
  int device = -1;  // -1: a library-wide call (nvmlInit, nvmlDeviceGetCount…)
  std::string function;
};

// Seqlock-protected record in a memfd mapping: one writer (the worker), one reader (parent).
class WorkerProgress {
 public:
  WorkerProgress() = default;
  ~WorkerProgress();
  WorkerProgress(const WorkerProgress&) = delete;
  WorkerProgress& operator=(const WorkerProgress&) = delete;

  // Parent: creates the memfd and maps it. fd() is then passed to the worker.
  [[nodiscard]] static Result<std::unique_ptr<WorkerProgress>> create();
  // Worker: maps an inherited descriptor.
  [[nodiscard]] static Result<std::unique_ptr<WorkerProgress>> attach(int fd);

  [[nodiscard]] int fd() const { return fd_; }
  // Worker side; async-signal-safe and allocation-free.
  void publish(int device, std::string_view function);
  // Parent side: the last published call, or nullopt when none (or torn after retries).
  [[nodiscard]] std::optional<InFlightCall> read() const;
  void clear();

 private:
  struct Page {
    std::atomic<std::uint64_t> seq;
    std::int32_t device;
    char function[116];
  };
  int fd_ = -1;
  Page* page_ = nullptr;
};

}  // namespace cardiac::telemetry
