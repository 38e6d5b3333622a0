// SPDX-License-Identifier: Apache-2.0
// The recent values behind the sparklines: per GPU and metric, a bounded series kept in time
// order, fed by each new sample (and, with an agent, first by its stored history).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "top/snapshot.h"

namespace cardiac::top {

enum class Metric { kUtil, kMem, kTemp, kPower };

class History {
 public:
  explicit History(std::size_t capacity = 512) : capacity_(capacity) {}

  // Adds one value; a time at or before the series' last one is ignored, so the same sample
  // read twice (an agent that has not sampled since) counts once.
  void add(unsigned gpu, Metric m, TimeNs t, std::optional<double> v);
  // Each GPU's four values at its sample time.
  void record(const Snapshot& s);
  // The values of one series, oldest first (at most `capacity`).
  std::vector<std::optional<double>> values(unsigned gpu, Metric m) const;

 private:
  struct Series {
    TimeNs last = 0;
    std::vector<std::optional<double>> values;
  };
  std::size_t capacity_;
  std::map<std::pair<unsigned, Metric>, Series> series_;
};

}  // namespace cardiac::top
