// SPDX-License-Identifier: Apache-2.0
// Simulator workload input: job traces from CSV files (generic and Alibaba openb) and their stats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::sim {

// A duration long enough to mean "holds its GPUs until the simulation ends", yet small enough
// that adding it to any trace time cannot overflow int64 nanoseconds (about 73 years).
constexpr DurationNs kForever = INT64_MAX / 4;

// One GPU job as the simulator sees it. Times are nanoseconds from the trace start.
struct TraceJob {
  std::int64_t id = 0;  // the trace's number for the job, or its position when ids are text
  std::string name;     // the trace's id as written ("application_…_0042", "17"); "j17" synthetic
  TimeNs submit = 0;
  unsigned gpus = 0;        // GPUs the job needs, >= 1
  double gpu_share = 1.0;   // share of each GPU: 1.0 whole GPUs; 0.46 for openb gpu_milli 460
  DurationNs duration = 0;  // run time once started
  std::string user;
  int priority = 0;
  DurationNs time_limit = 0;  // 0: none
  std::string gpu_type;       // "" any; openb: the gpu_spec text ("V100M16|V100M32")
  std::string qos;            // openb: LS, BE, Burstable, Guaranteed; "" elsewhere
};

struct Trace {
  std::vector<TraceJob> jobs;  // sorted by submit, then id
  std::string source;          // file name or "synth:<preset>"
  std::size_t skipped = 0;     // input rows that did not become jobs
  // What was skipped and why, counted ("1088 CPU-only pods (num_gpu 0)"), and any assumption
  // the parser had to make (arrival times for an untimed file).
  std::vector<std::string> notes;
};

// How openb pod lists without times (the multigpu50 form) are turned into arrivals.
struct OpenbOptions {
  DurationNs untimed_interarrival = kNsPerSec;  // data row k is submitted at k * this
  DurationNs untimed_duration = kForever;       // every pod holds its GPUs to the end
};

// Parses a generic trace: a header naming job_id, submit_time, gpus, duration (any order) and
// optionally user, priority, time_limit, gpu_type; times in seconds, decimals allowed. Job ids
// are any non-empty text, unique in the file (whole numbers compare by value).
// RFC 4180 quoting, CRLF, a UTF-8 BOM and blank lines are accepted. Rows with gpus = 0 are
// skipped and counted. Errors read "FILE:LINE:FIELD: field 'name': ..." where LINE is the
// 1-based line the record starts on and FIELD the 1-based field number.
[[nodiscard]] Result<Trace> parse_generic_csv(std::string_view text, std::string_view file);

// Parses an Alibaba GPU 2023 openb pod list: the default form (creation/deletion/scheduled
// times) or the untimed multigpu50 form. CPU-only pods and pods that never ran are skipped and
// counted in Trace::notes; malformed numbers are errors in the generic format above.
[[nodiscard]] Result<Trace> parse_openb_csv(std::string_view text, std::string_view file,
                                            const OpenbOptions& options = {});

// Reads and parses a trace file. format: "generic", "openb", or "auto" (decided by the header:
// a job_id column means generic, name plus num_gpu means openb).
[[nodiscard]] Result<Trace> load_trace(const std::string& path, std::string_view format,
                                       const OpenbOptions& options = {});

// GPU nodes of one kind, from the openb node list grouped by (model, GPUs per node).
struct NodeGroup {
  std::string model;
  unsigned gpus_per_node = 0;
  unsigned count = 0;
};

// Groups an openb node list (sn,cpu_milli,memory_mib,gpu,model); sorted by model, then GPUs.
[[nodiscard]] Result<std::vector<NodeGroup>> parse_openb_nodes(std::string_view text,
                                                               std::string_view file);
[[nodiscard]] Result<std::vector<NodeGroup>> load_openb_nodes(const std::string& path);

struct TraceStats {
  std::size_t jobs = 0;
  std::size_t skipped = 0;
  double gpu_jobs_share = 0;  // jobs / (jobs + skipped): the input rows that became GPU jobs
  // Per job GPU demand gpus * gpu_share, so a 0.46 share counts as 0.46 (the PAI convention).
  double mean_gpus = 0, median_gpus = 0;
  unsigned max_gpus = 0;  // largest gpus (whole-GPU count)
  double mean_duration_s = 0, median_duration_s = 0, p99_duration_s = 0;
  double span_s = 0;                               // last submit - first submit
  double arrival_rate_per_hour = 0;                // jobs / span; 0 when the span is 0
  double total_gpu_hours = 0;                      // sum of gpus * gpu_share * duration
  std::map<unsigned, std::size_t> size_histogram;  // gpus -> jobs
  double fractional_share = 0;                     // share of jobs with gpu_share < 1
};

// Medians average the two middle values; p99 is the nearest-rank value (ceil(0.99 n)-th).
[[nodiscard]] TraceStats trace_stats(const Trace& trace);

}  // namespace cardiac::sim
