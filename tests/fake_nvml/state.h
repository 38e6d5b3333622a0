// SPDX-License-Identifier: Apache-2.0
// The fake library's process-wide state and the prologue every exported function runs.
#pragma once

#include <chrono>
#include <mutex>
#include <string_view>

#include "nvml/types.h"
#include "scenario.h"

// The first line of an exported device function: runs the prologue as `call` and returns its
// code unless the body should go on.
#define FAKE_DEVICE_CALL(device)                  \
  fake::Call call(__func__, device);              \
  if (call.status() != cardiac::nvml::kSuccess) { \
    return call.status();                         \
  }

namespace fake {

// nvmlInit_v2 / nvmlInit: loads the scenario when the reference count goes 0 → 1.
nvmlReturn_t init(const char* function);

// The handle of device `index` (always the same pointer for one index).
nvmlDevice_t handle_of(unsigned index);

// The prologue of an exported function, holding the library mutex for the body.
//
// In order it: counts the call, requires nvmlInit (UNINITIALIZED), re-reads the scenario when
// its file changed, checks the handle (INVALID_ARGUMENT), sleeps through any matching hang,
// then applies the library-wide `returns`, the device's `returns` and the device's `state`.
// status() is SUCCESS when the body should run.
class Call {
 public:
  enum class Target { kLibrary, kDevice, kIndex };

  // A call that concerns no device (system queries, event sets, shutdown).
  explicit Call(const char* function);
  // A call on a device handle.
  Call(const char* function, nvmlDevice_t device);
  // nvmlDeviceGetHandleByIndex: the index is checked against the device count, and only the
  // `returns` entries apply, not the device's state (a lost GPU still has a handle).
  Call(const char* function, unsigned index);

  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  [[nodiscard]] nvmlReturn_t status() const { return status_; }
  [[nodiscard]] unsigned index() const { return index_; }
  // Values in force now. The reference is valid until the next wait_unlocked().
  [[nodiscard]] const View& view();
  [[nodiscard]] const Json& device() { return view().devices.at(index_); }
  [[nodiscard]] std::size_t device_count() const;
  [[nodiscard]] const Scenario& scenario() const;
  // Scenario time t in seconds.
  [[nodiscard]] double now() const;

  // Blocks with the mutex released, as the driver's event wait does: until `d` has passed, the
  // scenario file is rewritten (which is how a test injects an event), or wake_waiters() is
  // called. Wakes nowhere in between, so a long wait costs no CPU. Re-reads the scenario before
  // returning; false when the library was shut down meanwhile.
  bool wait_unlocked(std::chrono::nanoseconds d);
  // Ends every wait_unlocked() in progress (nvmlShutdown, nvmlEventSetFree).
  void wake_waiters();

  // Values of the current device. A null output → INVALID_ARGUMENT; an absent key →
  // NOT_SUPPORTED; a string longer than `length - 1` → INSUFFICIENT_SIZE.
  nvmlReturn_t get(const char* key, unsigned int* out);
  nvmlReturn_t get(const char* key, unsigned long long* out);
  nvmlReturn_t get_bool(const char* key, unsigned int* out);
  nvmlReturn_t get_string(const char* key, char* out, unsigned int length);

  // nvmlShutdown's body: drops one reference taken by nvmlInit.
  void drop_reference();

 private:
  void prologue(Target target);
  void hang();

  const char* function_;
  std::unique_lock<std::mutex> lock_;
  nvmlReturn_t status_ = cardiac::nvml::kSuccess;
  unsigned index_ = 0;
  bool has_device_ = false;
};

// Copies `text` into a caller's buffer with NVML's rules (INSUFFICIENT_SIZE when it does not
// fit with its terminator).
nvmlReturn_t copy_string(const std::string& text, char* out, unsigned int length);

// Fills the bus-id fields of nvmlPciInfo_t from "DDDDDDDD:BB:DD.F" the way the driver does
// (upper-case hex, a 16-byte legacy id with a 4-digit domain); the other fields are zeroed.
void fill_pci_bus_id(const std::string& bus_id, nvmlPciInfo_t* pci);

}  // namespace fake
