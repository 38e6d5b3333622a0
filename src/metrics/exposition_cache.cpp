// SPDX-License-Identifier: Apache-2.0
// The /metrics text rendered once per distinct input.
#include "metrics/exposition_cache.h"

namespace cardiac::metrics {

std::shared_ptr<const std::string> ExpositionCache::render(
    const ExpositionInput& in, const ExpositionOptions& opt,
    std::shared_ptr<const health::StatusReport> report) {
  std::lock_guard lock(mu_);
  // The report compares by address (a new sample is a new report); the rest by value.
  if (text_ && in == in_ && opt == opt_) return text_;
  text_ = std::make_shared<const std::string>(render_metrics(in, opt, scratch_));
  ++renders_;
  in_ = in;
  opt_ = opt;
  report_ = std::move(report);
  return text_;
}

std::uint64_t ExpositionCache::renders() const {
  std::lock_guard lock(mu_);
  return renders_;
}

}  // namespace cardiac::metrics
