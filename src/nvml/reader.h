// SPDX-License-Identifier: Apache-2.0
// Typed reads of NVML: one call per value, every value optional, errors mapped to health.
// Runs only inside the isolated worker process (see telemetry/gpu_worker.h): any call here
// may block forever on a wedged driver.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "nvml/gpu.h"
#include "nvml/library.h"

namespace cardiac::nvml {

// Called before every NVML call with the device index (-1 for library calls) and the
// exported function's family name. The worker uses it to publish which call is in flight.
using CallHook = std::function<void(int device, std::string_view function)>;

// Why Reader::init() failed, as the name the worker reports: the error's code carries it,
// kNotFound "driver_not_loaded", kUnsupported "version_mismatch", kPermission "no_permission",
// anything else "init_failed". The error's message explains it and names the next step.
std::string_view init_failure_kind(const Error& e);

class Reader {
 public:
  // `lib` must outlive the reader. `clock` stamps readings.
  Reader(const Library& lib, const Clock& clock, CallHook hook = {});
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // nvmlInit plus versions and device count. On failure returns the reason (see
  // init_failure_kind); the reader stays unusable until init() succeeds.
  [[nodiscard]] Result<NvmlSystem> init();

  // Reads every value of device `index`. Never fails: problems become health and
  // call_errors. Static facts (name, UUID, limits, …) are cached after the first good read.
  [[nodiscard]] GpuReading read_device(unsigned index);

 private:
  struct Static;
  template <class F>
  nvmlReturn_t call(int device, std::string_view function, F&& f) {
    if (hook_) hook_(device, function);
    return f();
  }
  bool read_identity(nvmlDevice_t h, GpuReading& g);
  void read_dynamic(nvmlDevice_t h, GpuReading& g);
  void read_memory_errors(nvmlDevice_t h, GpuReading& g);
  void read_pcie(nvmlDevice_t h, GpuReading& g);
  void read_processes(nvmlDevice_t h, GpuReading& g);
  void read_nvlinks(nvmlDevice_t h, GpuReading& g);
  // Records a non-success code: returns false when the device must not be asked further.
  bool note(GpuReading& g, std::string_view function, nvmlReturn_t rc);

  const Library& lib_;
  const Clock& clock_;
  CallHook hook_;
  bool initialized_ = false;
  int current_ = -1;  // device being read, for the call hook
  std::vector<std::optional<GpuReading>> static_cache_;
  // (device, link) → the bus id at the link's far end: wiring, fixed while the driver is
  // loaded, so asked once per link instead of once per link and sample.
  std::map<std::pair<unsigned, unsigned>, std::string> nvlink_remote_;
};

}  // namespace cardiac::nvml
