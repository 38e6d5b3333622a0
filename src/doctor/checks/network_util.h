// SPDX-License-Identifier: Apache-2.0
// Private to the network check: what network.cpp (probes, the verdict, DNS) and
// nic.cpp (this host's NICs) share.
#pragma once

#include <string>
#include <vector>

#include "doctor/checks/checks.h"

namespace cardiac::doctor::network_detail {

inline Evidence evidence(std::string kind, std::string text, TimeNs time, std::string source) {
  Evidence e;
  e.kind = std::move(kind);
  e.text = std::move(text);
  e.time = time;
  e.source = std::move(source);
  return e;
}

inline Finding make(std::string id, Severity s, Confidence c, std::string title, std::string why) {
  Finding f;
  f.id = std::move(id);
  f.category = Category::kNetwork;
  f.severity = s;
  f.confidence = c;
  f.title = std::move(title);
  f.explanation = std::move(why);
  return f;
}

// Link down, rising errors and drops, saturation. Each adds its findings to `out` and, when
// the trouble is this host's own, evidence to `local` for the "is it only me?" verdict.
void check_links(const DoctorInput& in, std::vector<Finding>& out, std::vector<Evidence>& local);
void check_nic_errors(const DoctorInput& in, std::vector<Finding>& out,
                      std::vector<Evidence>& local);
void check_saturation(const DoctorInput& in, std::vector<Finding>& out,
                      std::vector<Evidence>& local);

}  // namespace cardiac::doctor::network_detail
