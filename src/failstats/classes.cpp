// SPDX-License-Identifier: Apache-2.0
// The fault-class tables.
#include "failstats/classes.h"

#include <cctype>
#include <string>

#include "core/strings.h"

namespace cardiac::failstats {
namespace {

struct ClassInfo {
  std::string_view name;
  std::string_view title;
  sim::Scope scope;
  std::string_view category;
};

constexpr std::array<ClassInfo, kFaultClassCount> kInfo = {{
    {"gpu_lost", "GPU lost / off the bus", sim::Scope::kGpu, "GPU"},
    {"reset_required", "GPU reset required", sim::Scope::kGpu, "GPU"},
    {"gpu_memory", "GPU memory (ECC, HBM)", sim::Scope::kGpu, "GPU"},
    {"thermal", "GPU thermal", sim::Scope::kGpu, "GPU"},
    {"node", "Node / host", sim::Scope::kNode, "Host"},
    // Per-node statistics cannot tell how far a network fault reached: the node it was seen on.
    {"network", "Network", sim::Scope::kNode, "Network"},
    {"software", "Software (job only)", sim::Scope::kJob, "Dependency"},
    {"other", "Other GPU fault", sim::Scope::kGpu, "Unknown"},
}};

const ClassInfo& info(FaultClass c) {
  return kInfo[static_cast<std::size_t>(c)];
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// The first number after "xid" in the evidence ("Xid 79", "xid=48", "NVRM: Xid (PCI:...): 79"
// is matched by its first digits after the word, which for the kernel's form is the bus id: the
// kernel's form is recognised by the "): " that precedes the number).
std::optional<int> xid_in(std::string_view lower) {
  auto at = lower.find("xid");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = lower.substr(at + 3);
  if (auto close = rest.find("): "); close != std::string_view::npos && rest.starts_with(" (")) {
    rest = rest.substr(close + 3);
  }
  std::size_t i = 0;
  while (i < rest.size() && (rest[i] == ' ' || rest[i] == '=' || rest[i] == ':')) ++i;
  int value = 0;
  std::size_t digits = 0;
  while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])) && digits < 5) {
    value = value * 10 + (rest[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return value;
}

}  // namespace

std::string_view class_name(FaultClass c) {
  return info(c).name;
}
std::string_view class_title(FaultClass c) {
  return info(c).title;
}
sim::Scope class_scope(FaultClass c) {
  return info(c).scope;
}
std::string_view class_category(FaultClass c) {
  return info(c).category;
}
bool is_hardware(FaultClass c) {
  return c != FaultClass::kSoftware;
}

std::optional<FaultClass> class_from_name(std::string_view name) {
  for (FaultClass c : kFaultClasses) {
    if (class_name(c) == name) return c;
  }
  return std::nullopt;
}

std::optional<FaultClass> class_of_xid(int xid) {
  switch (xid) {
    case 79:  // fallen off the bus
      return FaultClass::kGpuLost;
    case 48:   // double-bit ECC
    case 63:   // row remapping pending
    case 64:   // row remapping failed
    case 92:   // high single-bit ECC rate
    case 94:   // contained ECC
    case 95:   // uncontained ECC
    case 140:  // unrecovered ECC
      return FaultClass::kGpuMemory;
    case 119:  // GSP RPC timeout
    case 120:  // GSP error
    case 154:  // recovery action changed (reset or reboot needed)
      return FaultClass::kResetRequired;
    case 74:  // NVLink
      return FaultClass::kOther;
    default:
      return std::nullopt;
  }
}

FaultClass classify_incident(std::string_view kind, std::string_view evidence) {
  const std::string text = to_lower(evidence);
  if (auto xid = xid_in(text)) {
    if (auto c = class_of_xid(*xid)) return *c;
  }
  const std::string k = to_lower(kind);
  if (k == "lost" || k == "unresponsive") return FaultClass::kGpuLost;
  if (k == "reset_required") return FaultClass::kResetRequired;
  for (std::string_view s : {std::string_view(k), std::string_view(text)}) {
    if (contains(s, "thermal") || contains(s, "temperature")) return FaultClass::kThermal;
    if (contains(s, "ecc") || contains(s, "memory")) return FaultClass::kGpuMemory;
    if (contains(s, "network") || contains(s, "link")) return FaultClass::kNetwork;
    if (contains(s, "node") || contains(s, "host")) return FaultClass::kNode;
  }
  return FaultClass::kOther;
}

FaultClass classify_component(const sim::Component& c) {
  if (c.scope == sim::Scope::kJob) return FaultClass::kSoftware;
  if (c.scope == sim::Scope::kDomain || c.category == "Network") return FaultClass::kNetwork;
  const std::string name = to_lower(c.name);
  if (c.category != "GPU" && c.scope == sim::Scope::kNode) return FaultClass::kNode;
  if (contains(name, "memory") || contains(name, "ecc") || contains(name, "hbm")) {
    return FaultClass::kGpuMemory;
  }
  if (contains(name, "thermal")) return FaultClass::kThermal;
  if (contains(name, "off the bus") || contains(name, "xid 79") || contains(name, "lost")) {
    return FaultClass::kGpuLost;
  }
  if (contains(name, "reset") || contains(name, "gsp")) return FaultClass::kResetRequired;
  if (c.scope == sim::Scope::kNode) return FaultClass::kNode;
  return FaultClass::kOther;
}

}  // namespace cardiac::failstats
