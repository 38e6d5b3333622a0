// SPDX-License-Identifier: Apache-2.0
// Fault classes: the few kinds of failure the statistics count apart, each mapped onto what the
// simulator's failure model needs (a scope and a category), from the store's incidents (kind and
// Xid) and from the simulator's components. docs/stats.md has the tables.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "sim/failures.h"

namespace cardiac::failstats {

enum class FaultClass {
  kGpuLost,        // lost, fell off the bus (Xid 79), unresponsive
  kResetRequired,  // the GPU needs a reset (GSP errors, the driver's reset request)
  kGpuMemory,      // ECC, row remapping, HBM/SRAM
  kThermal,        // thermal interface, sensors, slowdown
  kNode,           // the host: PSU, CPU, DIMM, NIC, SSD, chassis, unplanned maintenance
  kNetwork,        // switch, cable, IB link
  kSoftware,       // kills the job, no hardware goes out (software bug, NCCL timeout)
  kOther,          // any other GPU fault
};

inline constexpr std::size_t kFaultClassCount = 8;
inline constexpr std::array<FaultClass, kFaultClassCount> kFaultClasses = {
    FaultClass::kGpuLost, FaultClass::kResetRequired, FaultClass::kGpuMemory, FaultClass::kThermal,
    FaultClass::kNode,    FaultClass::kNetwork,       FaultClass::kSoftware,  FaultClass::kOther};

// "gpu_lost", "reset_required", "gpu_memory", "thermal", "node", "network", "software", "other".
[[nodiscard]] std::string_view class_name(FaultClass c);
[[nodiscard]] std::optional<FaultClass> class_from_name(std::string_view name);
// For tables: "GPU lost / off the bus".
[[nodiscard]] std::string_view class_title(FaultClass c);
// Hardware classes take hardware out of service and count towards lemon nodes; software does not.
[[nodiscard]] bool is_hardware(FaultClass c);

// What the fitted simulator component of a class takes out, and its category (Llama 3's table 5
// names, which the simulator's correlated secondaries group by).
[[nodiscard]] sim::Scope class_scope(FaultClass c);
[[nodiscard]] std::string_view class_category(FaultClass c);

// An Xid's class, when the Xid says one (79 lost, 48/63/64/92/94/95 memory, 119/120/154 reset...).
[[nodiscard]] std::optional<FaultClass> class_of_xid(int xid);

// A store incident: `kind` is nvml::device_health_name of what opened it ("lost",
// "reset_required", "unresponsive", "error"; other names are matched by word: "node", "network",
// "thermal"), `evidence` its text. An Xid named in the evidence ("Xid 79", "xid=48") wins over
// the kind, the kind over words of the evidence.
[[nodiscard]] FaultClass classify_incident(std::string_view kind, std::string_view evidence);

// A simulator component, by scope, category and name.
[[nodiscard]] FaultClass classify_component(const sim::Component& c);

}  // namespace cardiac::failstats
