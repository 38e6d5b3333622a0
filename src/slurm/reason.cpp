// SPDX-License-Identifier: Apache-2.0
#include "slurm/reason.h"

namespace cardiac::slurm {

std::string make_reason(std::string_view text) {
  std::string r(kReasonPrefix);
  bool space = false;
  for (char c : text) {
    // Control characters would split the line Slurm shows; quotes are eaten by scontrol's
    // own argument parser.
    const bool blank =
        c == '\n' || c == '\r' || c == '\t' || c == '"' || static_cast<unsigned char>(c) < 0x20;
    if (blank || c == ' ') {
      space = true;
      continue;
    }
    if (space && r.size() > kReasonPrefix.size()) r += ' ';
    space = false;
    r += c;
  }
  if (r.size() <= kMaxReasonBytes) return r;
  const std::string_view ellipsis = "…";
  std::size_t cut = kMaxReasonBytes - ellipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(r[cut]) & 0xC0) == 0x80) --cut;
  r.resize(cut);
  r += ellipsis;
  return r;
}

bool is_cardiac_reason(std::string_view reason) {
  return reason.starts_with(kReasonPrefix);
}

}  // namespace cardiac::slurm
