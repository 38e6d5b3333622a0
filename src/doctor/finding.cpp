// SPDX-License-Identifier: Apache-2.0
#include "doctor/finding.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "doctor/input.h"

namespace cardiac::doctor {

std::string_view category_name(Category c) {
  switch (c) {
    case Category::kHardware:
      return "hardware";
    case Category::kDriver:
      return "driver";
    case Category::kResources:
      return "resources";
    case Category::kNetwork:
      return "network";
    case Category::kConfiguration:
      return "configuration";
    case Category::kSecurity:
      return "security";
  }
  return "hardware";
}

std::string_view confidence_name(Confidence c) {
  switch (c) {
    case Confidence::kLow:
      return "low";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kHigh:
      return "high";
  }
  return "medium";
}

std::string GpuRef::label() const {
  if (index && !pci_bus_id.empty()) return fmt::format("GPU {} ({})", *index, pci_bus_id);
  if (index) return fmt::format("GPU {}", *index);
  if (!pci_bus_id.empty()) return fmt::format("GPU {}", pci_bus_id);
  if (!uuid.empty()) return uuid;
  if (!serial.empty()) return fmt::format("GPU serial {}", serial);
  return {};
}

Severity Report::worst() const {
  Severity w = Severity::kInfo;
  for (const auto& f : findings) w = std::max(w, f.severity);
  return w;
}

void sort_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.category != b.category) return a.category < b.category;
    unsigned ai = a.gpu.index.value_or(~0U);
    unsigned bi = b.gpu.index.value_or(~0U);
    if (ai != bi) return ai < bi;
    if (a.gpu.pci_bus_id != b.gpu.pci_bus_id) return a.gpu.pci_bus_id < b.gpu.pci_bus_id;
    return a.id < b.id;
  });
}

double ProbeResult::loss_percent() const {
  if (sent == 0) return 0;
  return 100.0 * static_cast<double>(sent - std::min(sent, received)) / sent;
}

std::optional<double> ProbeResult::mean_ms() const {
  if (rtt_ms.empty()) return std::nullopt;
  return std::accumulate(rtt_ms.begin(), rtt_ms.end(), 0.0) / static_cast<double>(rtt_ms.size());
}

std::optional<double> ProbeResult::jitter_ms() const {
  if (rtt_ms.size() < 2) return std::nullopt;
  double sum = 0;
  for (std::size_t i = 1; i < rtt_ms.size(); ++i) sum += std::fabs(rtt_ms[i] - rtt_ms[i - 1]);
  return sum / static_cast<double>(rtt_ms.size() - 1);
}

}  // namespace cardiac::doctor
