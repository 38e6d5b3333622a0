// SPDX-License-Identifier: Apache-2.0
// Prometheus text exposition (format 0.0.4) of the latest status report, for /metrics.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "health/faults.h"
#include "health/report.h"
#include "metrics/config_info.h"
#include "metrics/registry.h"

namespace cardiac::metrics {

// The Content-Type header /metrics must send with render_metrics()' output.
inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

struct ExpositionInput {
  const health::StatusReport* report = nullptr;  // null before the first sample: agent only
  // Xid counts since the agent started, keyed by (normalised PCI bus id, Xid code).
  std::map<std::pair<std::string, int>, std::uint64_t> xid_counts;
  // Kernel-log faults since the agent started, keyed by (PCI bus id, class).
  health::FaultCounts fault_counts;
  // The most recent Xid code per PCI bus id.
  std::map<std::string, int> last_xid;
  // False when no kernel-log watcher runs: then no Xid series at all, since "0 Xids" would be
  // a claim nobody checked.
  bool xids_watched = true;
  AgentMetrics agent;
  // The job queue's numbers; absent when the agent runs no queue (then no queue series).
  std::optional<QueueMetrics> queue;
  // The node's configuration facts (read at start and on reload, not per scrape); null: no
  // config info series. Compared by address, like the report.
  std::shared_ptr<const ConfigLabels> config;

  // The report by address, the rest by value (ExpositionCache).
  bool operator==(const ExpositionInput&) const = default;
};

struct ExpositionOptions {
  std::string hostname;
  bool compat_dcgm = false;  // also emit dcgm-exporter names and labels

  bool operator==(const ExpositionOptions&) const = default;
};

// The whole /metrics body. Families sorted by name, HELP and TYPE once each, absent values
// and NaN omitted, label values escaped.
std::string render_metrics(const ExpositionInput& in, const ExpositionOptions& opt);

// What render_metrics keeps from one render to the next when given one: each family's text
// buffer, so that rendering a new sample allocates little besides the answer itself. Not
// thread-safe: one per renderer (ExpositionCache holds one under its lock).
class RenderScratch {
 public:
  RenderScratch();
  ~RenderScratch();
  RenderScratch(const RenderScratch&) = delete;
  RenderScratch& operator=(const RenderScratch&) = delete;

 private:
  friend std::string render_metrics(const ExpositionInput&, const ExpositionOptions&,
                                    RenderScratch&);
  struct State;
  std::unique_ptr<State> s_;
};

// The same text as render_metrics(in, opt), made in `scratch`'s kept buffers.
std::string render_metrics(const ExpositionInput& in, const ExpositionOptions& opt,
                           RenderScratch& scratch);

// Escaping rules of the text format, exposed for tests.
std::string escape_label_value(std::string_view v);  // \ " and newline
std::string escape_help(std::string_view v);         // \ and newline
// A sample value: integers without a fraction, others in shortest round-trip form, +Inf/-Inf.
std::string format_value(double v);
// "0000:3b:00.0" -> "00000000:3B:00.0", the form dcgm-exporter shows.
std::string dcgm_bus_id(std::string_view bus_id);

}  // namespace cardiac::metrics
