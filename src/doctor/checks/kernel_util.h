// SPDX-License-Identifier: Apache-2.0
// Shared by check_kernel.cpp (Xids and the driver's GPU messages) and check_kernel_other.cpp
// (AER, hung tasks, NVSwitch, Fabric Manager, NVLink, InfiniBand). Not a public API.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/finding.h"
#include "doctor/gpu_map.h"
#include "doctor/input.h"

namespace cardiac::doctor::kernel_detail {

// What the kernel checks share: the input, who is which GPU, which boot each event is in.
struct Analysis {
  explicit Analysis(const DoctorInput& input);

  [[nodiscard]] const kmsg::KernelEvent& ev(std::size_t i) const { return in.events[i]; }
  // Context lines of event i (empty when none).
  [[nodiscard]] const std::vector<std::string>& context(std::size_t i) const;
  // Messages of event i's context lines, their time prefixes removed.
  [[nodiscard]] std::vector<std::string> context_messages(std::size_t i) const;
  // Every bus id known to be a GPU: NVML, the PCI bus, and the driver's own lines.
  [[nodiscard]] const std::vector<std::string>& gpu_buses() const { return gpu_buses_; }
  // The GPUs at or below PCI device `device` (their sysfs path passes through it), or the
  // device itself when it is a GPU. `resolved` tells whether sysfs answered for any GPU.
  [[nodiscard]] std::vector<std::string> gpus_behind(const std::string& device,
                                                     bool& resolved) const;

  const DoctorInput& in;
  GpuMap map;
  std::vector<std::size_t> boot_of;  // event index → boot number (0 = before the first seen)

 private:
  std::vector<std::string> gpu_buses_;
  std::map<std::string, std::string> sysfs_path_;  // GPU bus id → its sysfs device path
  std::map<std::size_t, const std::vector<std::string>*> context_;
};

// A PCIe AER report: one or two kernel lines ("error received" + "PCIe Bus Error") and their
// detail lines, with the GPU(s) behind the erring device.
struct AerIncident {
  std::vector<std::size_t> events;
  std::string device;                // the erring device (a port or an endpoint)
  std::string reporter;              // the port that reported it, when the line says
  std::string severity;              // "corrected" | "uncorrected_non_fatal" | "uncorrected_fatal"
  std::string type;                  // "Data Link Layer", … when the line says
  std::vector<std::string> details;  // "Surprise Down Error (First)", …
  std::vector<std::string> gpus;     // bus ids of the GPUs behind `device`
  // How `gpus` was found: "sysfs" (the GPU's path passes through the device), "driver line"
  // ("nvidia <bus>: device has no AER-aware driver"), "timing" (the GPU lost its link right
  // after), or "" when no GPU is behind it.
  std::string linked_by;
  bool folded = false;  // told by an Xid finding already
};

std::vector<AerIncident> aer_incidents(const Analysis& a);

// The other kernel findings: AER not folded into an Xid story, hung tasks, SXid, Fabric
// Manager, non-Xid NVLink lines and mlx5/InfiniBand.
void check_kernel_other(const Analysis& a, const std::vector<AerIncident>& aer,
                        std::vector<Finding>& out);

// ---- small helpers (check_kernel.cpp) ----

// Up to `max` log evidence lines for the events, first ones first and the last one kept.
void add_log_evidence(Finding& f, const Analysis& a, const std::vector<std::size_t>& events,
                      std::size_t max = 5);
// Evidence for event `event`: its raw line, or `text` (a context line) when given.
Evidence log_evidence(const Analysis& a, std::size_t event, std::string_view text = {});
// " between <first> and <last>", " at <time>", or "" when no event has a time.
std::string span_text(const Analysis& a, const std::vector<std::size_t>& events);
std::string times_text(std::size_t n);  // "once", "twice", "5 times"
// A driver line quoted as the end of a sentence: its own full stop ends it ("…off the bus.").
std::string quoted_sentence(std::string_view line);
// What `nvidia-smi -i` accepts for the GPU: its index, else its bus id, else "<GPU>".
std::string cli_id(const GpuRef& g);
// A catalog step with "{gpu}" and "{id}" filled in.
std::string fill_step(std::string_view step, const GpuRef& g);
// "GPU 3 (0000:3b:00.0)", or "the GPU" when nothing is known.
std::string gpu_label(const GpuRef& g);
// "python (pid 1234), nvidia-smi (pid 99)" for the processes on the events, at most 3.
std::string process_list(const Analysis& a, const std::vector<std::size_t>& events);
// Distinct boots the events fall in.
std::vector<std::size_t> boots_of(const Analysis& a, const std::vector<std::size_t>& events);
// Whether event `later` follows `earlier` closely: same boot and, when both have times, within
// `window`; without times, within `max_events` events.
bool follows_closely(const Analysis& a, std::size_t earlier, std::size_t later, DurationNs window,
                     std::size_t max_events);

}  // namespace cardiac::doctor::kernel_detail
