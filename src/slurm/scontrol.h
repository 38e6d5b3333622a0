// SPDX-License-Identifier: Apache-2.0
// Slurm's scontrol run as a child process with a deadline: the one way cardiac reads and
// changes Slurm's state (a hung slurmctld must not hang the health check).
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "slurm/nodes.h"

namespace cardiac::slurm {

class Scontrol {
 public:
  // `path`: the program ("scontrol" is looked up in PATH); `timeout`: for each call.
  Scontrol(std::string path, DurationNs timeout) : path_(std::move(path)), timeout_(timeout) {}

  // Standard output of `scontrol ARGS…`; an error with scontrol's own message when it exits
  // non-zero, or kTimeout past the deadline (the child is killed).
  [[nodiscard]] Result<std::string> run(const std::vector<std::string>& args) const;

  [[nodiscard]] Result<std::vector<NodeInfo>> nodes() const;
  [[nodiscard]] Result<JobInfo> job(const std::string& id) const;
  [[nodiscard]] Status drain(const std::string& node, const std::string& reason) const;
  [[nodiscard]] Status resume(const std::string& node) const;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  DurationNs timeout_;
};

}  // namespace cardiac::slurm
