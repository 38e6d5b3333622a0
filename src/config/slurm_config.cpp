// SPDX-License-Identifier: Apache-2.0
#include "config/slurm_config.h"

#include "config/toml_reader.h"

namespace cardiac::config {

Status read_slurm(const toml::table& t, std::string_view origin, SlurmSettings& s) {
  TableReader r(t, "slurm", origin);
  CARDIAC_TRY(r.only({"scontrol", "scontrol_timeout", "drain_limit_percent",
                      "drain_limit_min_nodes", "drain_limit_max_nodes", "drain_window"}));
  CARDIAC_TRY(r.get("scontrol", s.scontrol));
  CARDIAC_TRY(r.get_duration("scontrol_timeout", s.scontrol_timeout));
  CARDIAC_TRY(r.get_number("drain_limit_percent", s.drain_limit_percent, 0));
  CARDIAC_TRY(r.get("drain_limit_min_nodes", s.drain_limit_min_nodes));
  CARDIAC_TRY(r.get("drain_limit_max_nodes", s.drain_limit_max_nodes));
  CARDIAC_TRY(r.get_duration("drain_window", s.drain_window));
  if (s.scontrol.empty()) return fail(r.invalid("scontrol", "must name a program"));
  if (s.drain_limit_percent > 100) {
    return fail(r.invalid("drain_limit_percent", "must be between 0 and 100"));
  }
  return {};
}

}  // namespace cardiac::config
