// SPDX-License-Identifier: Apache-2.0
// The Xid catalog in the doctor's terms: health/faults.h holds the table (the one home of
// GPU-fault knowledge); this adds the doctor's finding category to each entry.
#pragma once

#include <span>
#include <string_view>

#include "doctor/finding.h"
#include "health/faults.h"

namespace cardiac::doctor {

using health::xid_action_name;
using health::XidAction;

struct XidInfo : health::XidInfo {
  Category category = Category::kDriver;  // kHardware when the catalog says hardware
};

// The entry for `code`; for a code not in the table a generic entry (warning, driver,
// investigate) whose text names the code's lookup in NVIDIA's catalog. Never fails.
XidInfo lookup_xid(int code);

// Every entry of the table, by code (for docs and tests).
std::span<const XidInfo> xid_catalog();

}  // namespace cardiac::doctor
