// SPDX-License-Identifier: Apache-2.0
#include "top/history.h"

namespace cardiac::top {

void History::add(unsigned gpu, Metric m, TimeNs t, std::optional<double> v) {
  Series& s = series_[{gpu, m}];
  if (!s.values.empty() && t <= s.last) return;
  s.last = t;
  s.values.push_back(v);
  if (s.values.size() > capacity_) s.values.erase(s.values.begin());
}

void History::record(const Snapshot& snap) {
  for (const auto& g : snap.gpus) {
    // A GPU that did not answer has no values; its gap shows as blanks.
    add(g.index, Metric::kUtil, g.sampled_at, g.util);
    add(g.index, Metric::kMem, g.sampled_at, g.mem_used);
    add(g.index, Metric::kTemp, g.sampled_at, g.temp);
    add(g.index, Metric::kPower, g.sampled_at, g.power);
  }
}

std::vector<std::optional<double>> History::values(unsigned gpu, Metric m) const {
  auto it = series_.find({gpu, m});
  return it == series_.end() ? std::vector<std::optional<double>>{} : it->second.values;
}

}  // namespace cardiac::top
