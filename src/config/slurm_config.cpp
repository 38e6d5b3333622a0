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

Status read_fleet(const toml::table& t, std::string_view origin, FleetSettings& f) {
  TableReader r(t, "fleet", origin);
  CARDIAC_TRY(r.only({"prometheus", "job", "timeout", "bearer_token_file"}));
  CARDIAC_TRY(r.get("prometheus", f.prometheus));
  CARDIAC_TRY(r.get("job", f.job));
  CARDIAC_TRY(r.get_duration("timeout", f.timeout));
  CARDIAC_TRY(r.get("bearer_token_file", f.bearer_token_file));
  if (f.job.empty()) return fail(r.invalid("job", "must name the agents' scrape job"));
  if (f.timeout <= 0) return fail(r.invalid("timeout", "must be more than 0"));
  return {};
}

}  // namespace cardiac::config
