// SPDX-License-Identifier: Apache-2.0
// Private to the checks: the top talkers (netproc, rated over the sampling window) as
// evidence, shared by the uplink-flood check (traffic.cpp) and NIC saturation (nic.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "doctor/checks/checks.h"

namespace cardiac::doctor::traffic_detail {

// The busiest `n` talkers by bytes sent (`sent`) or received, each a "process" evidence.
std::vector<Evidence> talker_evidence(const DoctorInput& in, bool sent, std::size_t n);

// "By whom: pid 4242 (alice) rsync …: sent 940 Mb/s (94 % of eth0), …; pid …." for an
// explanation, or "" when the window measured no talker.
std::string by_whom(const DoctorInput& in, bool sent, std::size_t n);

}  // namespace cardiac::doctor::traffic_detail
