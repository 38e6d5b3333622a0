// SPDX-License-Identifier: Apache-2.0
// Fitting sim::FailureModel.
#include "failstats/fit.h"

#include <algorithm>
#include <cmath>

#include "core/format.h"

namespace cardiac::failstats {

Result<sim::FailureModel> fit_model(const FailureStats& s) {
  if (!(s.gpu_days > 0)) {
    return fail(Error::invalid(
        "the statistics cover no exposure (0 GPU-days observed): no failure rate follows from "
        "them"));
  }
  sim::FailureModel m;
  m.name = "fitted";
  RepairSums all;
  double within = 0;  // sum over classes of the squared log deviations from the class mean
  for (const RepairSums& r : s.repairs) {
    all.merge(r);
    if (r.n > 0) within += r.sum_log2 - r.sum_log * r.sum_log / static_cast<double>(r.n);
  }
  const double fallback_hours =
      all.n > 0 ? all.sum_hours / static_cast<double>(all.n) : kDefaultRepairHours;
  for (FaultClass c : kFaultClasses) {
    const auto i = static_cast<std::size_t>(c);
    if (s.counts[i] == 0) continue;
    const RepairSums& r = s.repairs[i];
    const double hours = r.n > 0 ? r.sum_hours / static_cast<double>(r.n) : fallback_hours;
    // Checked before the conversion to nanoseconds, which overflows past ~292 years.
    if (class_scope(c) != sim::Scope::kJob && !(hours <= kMaxRepairHours)) {
      return fail(Error::invalid(fmt::format(
          "the mean repair time of class {} is {:.6g} hours, over the {:.0f} (ten years) a "
          "fitted model takes: are the repair sums in hours?",
          class_name(c), hours, kMaxRepairHours)));
    }
    sim::Component comp;
    comp.name = std::string(class_title(c));
    comp.category = std::string(class_category(c));
    comp.per_gpu_day = static_cast<double>(s.counts[i]) / s.gpu_days;
    comp.scope = class_scope(c);
    comp.repair =
        comp.scope == sim::Scope::kJob ? 0 : static_cast<DurationNs>(std::llround(hours * 3600e9));
    m.components.push_back(std::move(comp));
  }
  m.repair_sigma =
      all.n >= 2
          ? std::clamp(std::sqrt(std::max(0.0, within) / static_cast<double>(all.n)), 0.0, 5.0)
          : 0.0;
  const Lemons lemons = estimate_lemons(s);
  m.lemon_fraction = lemons.fraction;
  m.lemon_factor = lemons.factor;
  m.detection = kFittedDetection;
  if (auto st = sim::validate_model(m); !st) return fail(st.error());
  return m;
}

}  // namespace cardiac::failstats
