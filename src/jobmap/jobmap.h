// SPDX-License-Identifier: Apache-2.0
// Which job a GPU process belongs to: a Slurm job (its cgroup path, else SLURM_JOB_ID in its
// environment) or a job of cardiac's own queue (CARDIAC_JOB_ID, which the queue's runner sets).
// Pure parsers over the text of /proc/<pid>/cgroup and /proc/<pid>/environ, and a thin reader
// through the rooted FileSystem so that tests run on fixture trees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nvml/gpu.h"
#include "platform/fs.h"

namespace cardiac::jobmap {

struct JobRef {
  std::string id;      // "123"
  std::string source;  // "slurm" or "cardiac"
  std::string from;    // "cgroup" or "environ"
  bool operator==(const JobRef&) const = default;
};

// The Slurm job id in a /proc/<pid>/cgroup text: the first path component "job_<digits>" on
// any line, cgroup v2 ("0::/system.slice/slurmstepd.scope/job_123/step_0/user/task_0") or v1
// ("4:memory:/slurm/uid_1000/job_123/step_batch"). nullopt when no line names a job.
std::optional<std::string> slurm_job_from_cgroup(std::string_view text);

// The job in a /proc/<pid>/environ text (NUL-separated NAME=value): CARDIAC_JOB_ID (set by
// cardiac's runner when it starts the job, so the most specific) before SLURM_JOB_ID (which a
// shell inside an allocation hands down to whatever it starts). Values that are not a decimal
// job id are ignored. nullopt when neither is there.
std::optional<JobRef> job_from_environ(std::string_view text);

// What is known about one process.
struct Attribution {
  std::optional<JobRef> job;
  // Why no job is known when a file could not be read for a reason other than the process
  // being gone, e.g. "/proc/4242/environ: permission denied (cardiac needs root to read
  // another user's environment)". Empty otherwise.
  std::string note;
};

// Reads /proc/<pid>/cgroup, then /proc/<pid>/environ, under `fs`.
Attribution find_job(const FileSystem& fs, std::uint32_t pid);

// Fills job, job_source, job_from and job_note of every GPU process in `snap`.
void attribute_jobs(const FileSystem& fs, nvml::GpuSnapshot& snap);

// "slurm job 123", "cardiac job 7": how a person names it.
std::string describe(std::string_view source, std::string_view id);

}  // namespace cardiac::jobmap
