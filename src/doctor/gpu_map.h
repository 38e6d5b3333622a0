// SPDX-License-Identifier: Apache-2.0
// Which GPU is which: joins what NVML says (index, bus id, UUID, serial), the driver's boot
// lines in the kernel log ("NVRM: GPU at PCI:… GPU-<uuid>", "GPU Board Serial Number") and the
// PCI bus, so a kernel line that names only a bus id still points at "GPU 3, serial …".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "doctor/finding.h"
#include "doctor/input.h"

namespace cardiac::doctor {

class GpuMap {
 public:
  explicit GpuMap(const DoctorInput& in);

  // Every GPU known, ordered by NVML index, then bus id.
  [[nodiscard]] const std::vector<GpuRef>& all() const { return gpus_; }
  // The GPU with that bus id (any form normalize_kernel_bus_id accepts); a ref holding just
  // the normalised bus id when nothing else is known, empty when `bus_id` is not one.
  [[nodiscard]] GpuRef by_bus_id(std::string_view bus_id) const;
  [[nodiscard]] GpuRef by_index(unsigned index) const;
  [[nodiscard]] GpuRef by_uuid(std::string_view uuid) const;

 private:
  GpuRef& entry_for_bus(const std::string& bus_id);
  GpuRef& entry_for_index(unsigned index);
  std::vector<GpuRef> gpus_;
};

}  // namespace cardiac::doctor
