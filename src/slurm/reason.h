// SPDX-License-Identifier: Apache-2.0
// Drain reasons cardiac writes into Slurm, and how it recognises its own: every reason it sets
// starts with kReasonPrefix, so a node a person drained ("maintenance") is never resumed by it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cardiac::slurm {

inline constexpr std::string_view kReasonPrefix = "cardiac: ";
// Slurm keeps reasons of any length, but sinfo and scontrol show them on one line: keep them
// readable there.
inline constexpr std::size_t kMaxReasonBytes = 200;

// "cardiac: GPU 3 (0000:3b:00.0): fell off the bus (Xid 79)" from a problem's text, one line,
// no double quotes (scontrol strips them), at most kMaxReasonBytes, cut on a UTF-8 boundary.
std::string make_reason(std::string_view text);

// True for a reason cardiac set (scontrol's trailing " [user@time]" already removed).
bool is_cardiac_reason(std::string_view reason);

}  // namespace cardiac::slurm
