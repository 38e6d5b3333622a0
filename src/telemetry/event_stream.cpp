// SPDX-License-Identifier: Apache-2.0
// The agent's end of the NVML event worker (event_worker.h). Apart from the worker's side so that
// cardiac-nvml-worker, which links only that side, maps no logging library.
#include "telemetry/event_worker.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "telemetry/gpu_worker.h"

namespace cardiac::telemetry {

GpuEventStream::GpuEventStream(std::string executable, std::string nvml_lib,
                               std::vector<std::pair<std::string, std::string>> env,
                               const Clock& clock)
    : executable_(std::move(executable)),
      nvml_lib_(std::move(nvml_lib)),
      env_(std::move(env)),
      clock_(clock) {
  if (executable_.empty()) {
    if (auto self = self_executable()) executable_ = *self;
  }
  executable_ = worker_executable(executable_);
}

bool GpuEventStream::ensure_running() {
  if (ready_ && worker_.running() && !worker_.try_wait()) return true;
  ready_ = false;  // running() is false until a new worker has said hello
  TimeNs now = clock_.monotonic();
  if (now < retry_at_) return false;
  backoff_ = backoff_ == 0 ? 30 * kNsPerSec : std::min(backoff_ * 2, 600 * kNsPerSec);
  retry_at_ = now + backoff_;
  worker_.kill_and_abandon();
  SpawnOptions o;
  o.argv = {executable_, kWorkerSubcommand, "--events", "1"};
  if (!nvml_lib_.empty()) {
    o.argv.push_back("--nvml-lib");
    o.argv.push_back(nvml_lib_);
  }
  o.env = env_;
  auto child = Child::spawn(o);
  if (!child) return false;
  worker_ = std::move(*child);
  auto hello = worker_.read_line_within(10 * kNsPerSec);
  auto j = hello ? nlohmann::json::parse(*hello, nullptr, false) : nlohmann::json();
  ready_ = j.is_object() && j.value("ok", false);
  if (!ready_) {
    log::info("NVML events unavailable: {}", j.is_object() ? j.value("message", "") : "no answer");
    worker_.kill_and_abandon();
    return false;
  }
  backoff_ = 0;
  return true;
}

DurationNs GpuEventStream::until_restart() const {
  return std::max<DurationNs>(retry_at_ - clock_.monotonic(), kNsPerMs);
}

std::optional<GpuEvent> GpuEventStream::next(DurationNs wait) {
  if (!ensure_running()) return std::nullopt;
  while (true) {
    auto line = worker_.read_line_within(wait);
    if (!line) {
      if (line.error().code != ErrorCode::kTimeout) ready_ = false;  // the worker died
      return std::nullopt;
    }
    auto j = nlohmann::json::parse(*line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "event") continue;
    GpuEvent e;
    e.gpu = j.value("gpu", 0u);
    e.pci_bus_id = j.value("pci_bus_id", "");
    e.kind = parse_gpu_event_kind(j.value("event", ""));
    if (j.contains("xid")) e.xid = j["xid"].get<int>();
    e.time_ns = j.value("time_ns", TimeNs{0});
    return e;
  }
}

}  // namespace cardiac::telemetry
