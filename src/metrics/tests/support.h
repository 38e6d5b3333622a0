// SPDX-License-Identifier: Apache-2.0
// A hand-built status report shared by the metrics tests: two GPUs (one lost) and a host.
#pragma once

#include <memory>

#include "metrics/exposition.h"

namespace cardiac::metrics::testing {

// GPU 0 healthy H100 at 0000:18:00.0; GPU 1 lost at 0000:2a:00.0 with no readings.
health::StatusReport two_gpu_report();
// two_gpu_report() plus Xid counters and agent metrics.
ExpositionInput full_input(const health::StatusReport& r);
// The configuration facts of two_gpu_report()'s node (cardiac_*_config_info).
std::shared_ptr<const ConfigLabels> two_gpu_config();

}  // namespace cardiac::metrics::testing
