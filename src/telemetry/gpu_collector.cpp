// SPDX-License-Identifier: Apache-2.0
// Parent side of the NVML worker: deadlines, abandonment, restart and backoff.
#include "telemetry/gpu_collector.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/format.h"
#include "core/log.h"
#include "core/time.h"
#include "nvml/gpu_json.h"
#include "nvml/gpu_wire.h"
#include "telemetry/gpu_worker.h"

namespace cardiac::telemetry {
namespace {

DurationNs next_backoff(DurationNs current, DurationNs lo, DurationNs hi) {
  return current == 0 ? lo : std::min(current * 2, hi);
}

std::string describe_exit(std::optional<int> status) {
  if (!status || *status < 0) return "the NVML worker stopped answering";
  if (WIFSIGNALED(*status)) {
    return fmt::format("the NVML worker died with signal {} ({})", WTERMSIG(*status),
                       strsignal(WTERMSIG(*status)));
  }
  return fmt::format("the NVML worker exited with status {}", WEXITSTATUS(*status));
}

}  // namespace

GpuCollector::GpuCollector(GpuCollectorOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock) {
  if (options_.executable.empty()) {
    if (auto self = self_executable()) options_.executable = *self;
  }
  options_.executable = worker_executable(options_.executable);
}

GpuCollector::~GpuCollector() {
  if (!worker_.running()) return;
  (void)worker_.write_all("{\"cmd\":\"quit\"}\n");
  worker_.wait_exit_within(200 * kNsPerMs);
  worker_.kill_and_abandon();
}

void GpuCollector::drop_worker() {
  worker_.kill_and_abandon();
  worker_ = Child();
  hello_ok_ = false;
}

Result<void> GpuCollector::ensure_worker(nvml::GpuSnapshot& snap) {
  if (hello_ok_ && worker_.running()) return {};
  auto fail_with = [&](std::string kind, std::string message) -> Result<void> {
    hello_kind_ = std::move(kind);
    hello_message_ = std::move(message);
    snap.error_kind = hello_kind_;
    snap.error = hello_message_;
    return fail(Error::unavailable(hello_message_));
  };
  if (clock_.monotonic() < worker_retry_at_) return fail_with(hello_kind_, hello_message_);
  auto schedule_retry = [&] {
    worker_backoff_ = next_backoff(worker_backoff_, options_.retry_min, options_.retry_max);
    worker_retry_at_ = clock_.monotonic() + worker_backoff_;
  };

  if (!progress_) {
    auto p = WorkerProgress::create();
    if (p) progress_ = std::move(*p);
  }
  if (progress_) progress_->clear();
  SpawnOptions spawn;
  spawn.argv = {options_.executable, kWorkerSubcommand};
  if (!options_.nvml_lib.empty()) {
    spawn.argv.push_back("--nvml-lib");
    spawn.argv.push_back(options_.nvml_lib);
  }
  if (options_.events) {
    spawn.argv.push_back("--events");
    spawn.argv.push_back("1");
  }
  int passed_fd = -1;
  if (progress_) {
    // Hand the page over on a fixed number; dup first so that dup2 never sees from == to.
    passed_fd = fcntl(progress_->fd(), F_DUPFD_CLOEXEC, 10);
    if (passed_fd >= 0) {
      spawn.pass_fds.emplace_back(passed_fd, kWorkerProgressFd);
      spawn.argv.push_back("--progress-fd");
      spawn.argv.push_back(std::to_string(kWorkerProgressFd));
    }
  }
  spawn.env = options_.env;
  auto child = Child::spawn(spawn);
  if (passed_fd >= 0) close(passed_fd);
  if (!child) {
    schedule_retry();
    return fail_with("worker_failed",
                     fmt::format("cannot start the NVML worker: {}", child.error().what()));
  }
  worker_ = std::move(*child);
  ++stats_.worker_starts;
  if (stats_.worker_starts > 1) ++stats_.worker_restarts;

  auto line = worker_.read_line(io_deadline(options_.timeout));
  if (!line) {
    bool timed_out = line.error().code == ErrorCode::kTimeout;
    std::string what = timed_out ? fmt::format(
                                       "NVML did not finish initialising within {} (nvmlInit "
                                       "hung): the driver is stuck; processes touching the GPU "
                                       "may be in D state",
                                       format_duration(options_.timeout))
                                 : describe_exit(worker_.try_wait()) + " before answering";
    if (timed_out) ++stats_.timeouts;
    drop_worker();
    schedule_retry();
    return fail_with(timed_out ? "unresponsive" : "worker_failed", what);
  }
  auto hello = nlohmann::json::parse(*line, nullptr, false);
  if (!hello.is_object() || hello.value("type", "") != "hello") {
    drop_worker();
    schedule_retry();
    return fail_with("worker_failed", "the NVML worker sent an unexpected greeting: " + *line);
  }
  if (!hello.value("ok", false)) {
    std::string kind = hello.value("kind", "init_failed");
    std::string message = hello.value("message", "NVML initialisation failed");
    drop_worker();
    schedule_retry();
    return fail_with(kind, message);
  }
  if (hello.value("wire", "") != nvml::wire_layout_id()) {
    drop_worker();
    schedule_retry();
    return fail_with("worker_failed",
                     fmt::format("the NVML worker {} is from another build of cardiac: its "
                                 "readings are laid out differently; restart the agent (after an "
                                 "upgrade, so that both are the new build)",
                                 spawn.argv.front()));
  }
  auto system = nvml::nvml_system_from_json(hello.value("system", nlohmann::json::object()));
  if (!system) {
    drop_worker();
    schedule_retry();
    return fail_with("worker_failed", system.error().what());
  }
  system_ = *system;
  hello_ok_ = true;
  worker_backoff_ = 0;
  return {};
}

void GpuCollector::note_events(const nlohmann::json& msg) {
  // "" while events are followed, else why not.
  std::string note;
  if (msg.value("ok", nlohmann::json()) != true) {
    auto message = msg.value("message", nlohmann::json());
    note = message.is_string() ? message.get<std::string>() : "";
    if (note.empty()) note = "unavailable";
  }
  if (note == events_note_) return;
  if (note.empty()) {
    log::info("following NVML's events");
  } else {
    log::info("NVML events unavailable: {}", note);
  }
  events_note_ = std::move(note);
}

void GpuCollector::mark_wedged(unsigned device, const std::string& detail) {
  Wedged& w = wedged_[device];
  w.backoff = next_backoff(w.backoff, options_.retry_min, options_.retry_max);
  w.retry_at = clock_.monotonic() + w.backoff;
  w.detail = detail;
}

bool GpuCollector::collect(const std::vector<unsigned>& only, nvml::GpuSnapshot& snap) {
  nlohmann::json cmd{{"cmd", "sample"}, {"only", only}};
  if (!worker_.write_all(cmd.dump() + "\n")) {
    drop_worker();
    return false;
  }
  std::set<unsigned> pending(only.begin(), only.end());
  while (true) {
    auto line = worker_.read_line(io_deadline(options_.timeout));
    if (!line) {
      bool timed_out = line.error().code == ErrorCode::kTimeout;
      auto in_flight = progress_ ? progress_->read() : std::nullopt;
      int device = in_flight && in_flight->device >= 0 ? in_flight->device : -1;
      if (device < 0 || !pending.count(static_cast<unsigned>(device))) {
        device = pending.empty() ? -1 : static_cast<int>(*pending.begin());
      }
      std::string call = in_flight && !in_flight->function.empty() ? in_flight->function : "NVML";
      std::string detail;
      if (timed_out) {
        ++stats_.timeouts;
        detail =
            fmt::format("{} did not return within {}", call, format_duration(options_.timeout));
      } else {
        detail = fmt::format("{} during {}", describe_exit(worker_.try_wait()), call);
      }
      log::info("GPU {}: {}", device, detail);
      drop_worker();
      if (device >= 0) {
        mark_wedged(static_cast<unsigned>(device), detail);
        nvml::GpuReading r;
        r.index = static_cast<unsigned>(device);
        r.health = timed_out ? nvml::DeviceHealth::kUnresponsive : nvml::DeviceHealth::kError;
        r.health_detail = detail;
        r.sampled_at = clock_.now();
        snap.gpus.push_back(std::move(r));
      }
      return false;
    }
    std::string_view text = *line;
    if (!text.starts_with(kGpuLinePrefix)) {
      auto msg = nlohmann::json::parse(text, nullptr, false);
      // Checked by type: a worker's line must never throw in the sampler.
      auto t = msg.is_object() ? msg.value("type", nlohmann::json()) : nlohmann::json();
      const std::string type = t.is_string() ? t.get<std::string>() : "";
      if (type == "end") return true;
      if (type == "event") {
        if (auto event = gpu_event_from_json(msg)) events_.push_back(std::move(*event));
      } else if (type == "events") {
        note_events(msg);
      }
      continue;
    }
    text.remove_prefix(kGpuLinePrefix.size());
    auto reading = nvml::gpu_reading_from_wire(text);
    if (!reading) {
      log::warn("ignoring malformed reading from the NVML worker: {}", reading.error().what());
      continue;
    }
    pending.erase(reading->index);
    if (reading->health == nvml::DeviceHealth::kOk) {
      wedged_.erase(reading->index);
      if (!reading->uuid.empty()) identity_[reading->index] = *reading;
    }
    snap.gpus.push_back(std::move(*reading));
  }
}

nvml::GpuSnapshot GpuCollector::sample() {
  nvml::GpuSnapshot snap;
  snap.taken_at = clock_.now();
  TimeNs start = clock_.monotonic();
  ++stats_.samples;
  reap_abandoned();
  if (!ensure_worker(snap)) {
    snap.duration_us = (clock_.monotonic() - start) / kNsPerUs;
    return snap;
  }
  snap.available = true;
  snap.system = system_;

  std::vector<unsigned> ask;
  TimeNs now = clock_.monotonic();
  for (unsigned i = 0; i < system_.device_count; ++i) {
    auto it = wedged_.find(i);
    if (it != wedged_.end() && it->second.retry_at > now) {
      nvml::GpuReading r;
      r.index = i;
      r.health = nvml::DeviceHealth::kUnresponsive;
      r.health_detail = it->second.detail + " (not asked again until its retry time)";
      r.sampled_at = snap.taken_at;
      snap.gpus.push_back(std::move(r));
    } else {
      ask.push_back(i);
    }
  }
  while (!ask.empty()) {
    size_t before = snap.gpus.size();
    bool complete = collect(ask, snap);
    std::set<unsigned> got;
    for (size_t k = before; k < snap.gpus.size(); ++k) got.insert(snap.gpus[k].index);
    std::erase_if(ask, [&](unsigned i) { return got.count(i) > 0; });
    if (complete || ask.empty()) break;
    if (got.empty() || !ensure_worker(snap)) {
      // No progress or no new worker: the rest cannot be read this time.
      for (unsigned i : ask) {
        nvml::GpuReading r;
        r.index = i;
        r.health = nvml::DeviceHealth::kNotSampled;
        r.health_detail = snap.error.empty()
                              ? std::string("not read: the NVML worker was abandoned")
                              : "not read: " + snap.error;
        r.sampled_at = snap.taken_at;
        snap.gpus.push_back(std::move(r));
      }
      snap.error.clear();
      snap.error_kind.clear();
      break;
    }
  }
  std::sort(snap.gpus.begin(), snap.gpus.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  // A device that stops answering keeps the name and bus id it had when it last answered.
  for (auto& g : snap.gpus) {
    auto it = identity_.find(g.index);
    if (g.uuid.empty() && it != identity_.end()) {
      g.name = it->second.name;
      g.uuid = it->second.uuid;
      g.serial = it->second.serial;
      g.pci_bus_id = it->second.pci_bus_id;
      g.minor_number = it->second.minor_number;
    }
  }
  snap.duration_us = (clock_.monotonic() - start) / kNsPerUs;
  return snap;
}

}  // namespace cardiac::telemetry
