// SPDX-License-Identifier: Apache-2.0
// The NVML event worker and its parent-side reader.
#include "telemetry/event_worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "nvml/library.h"
#include "nvml/pci.h"
#include "telemetry/gpu_worker.h"

namespace cardiac::telemetry {
namespace {

void emit(const nlohmann::json& j) {
  std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

constexpr std::array<std::pair<GpuEventKind, std::string_view>, 4> kKindNames{{
    {GpuEventKind::kXid, "xid"},
    {GpuEventKind::kDoubleBitEcc, "dbe"},
    {GpuEventKind::kSingleBitEcc, "sbe"},
    {GpuEventKind::kOther, "other"},
}};

// How long one nvmlEventSetWait may block. An event ends it at once, and the parent stops the
// worker with a signal, so the timeout only sets how often an idle worker wakes: rarely.
constexpr unsigned kEventWaitMs = 5000;

GpuEventKind event_kind(unsigned long long type) {
  if (type & nvml::kEventXidCritical) return GpuEventKind::kXid;
  if (type & nvml::kEventDoubleBitEcc) return GpuEventKind::kDoubleBitEcc;
  if (type & nvml::kEventSingleBitEcc) return GpuEventKind::kSingleBitEcc;
  return GpuEventKind::kOther;
}

}  // namespace

std::string_view gpu_event_kind_name(GpuEventKind k) {
  for (const auto& [kind, name] : kKindNames) {
    if (kind == k) return name;
  }
  return "other";
}

GpuEventKind parse_gpu_event_kind(std::string_view name) {
  for (const auto& [kind, n] : kKindNames) {
    if (n == name) return kind;
  }
  return GpuEventKind::kOther;
}

int run_event_worker(const WorkerOptions& options, const Clock& clock) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;
  signal(SIGPIPE, SIG_IGN);
  auto lib = nvml::Library::open(options.nvml_lib);
  if (!lib) {
    emit({{"type", "hello"}, {"ok", false}, {"message", lib.error().what()}});
    return 0;
  }
  const nvml::Api& api = (*lib)->api();
  if (api.init() != nvml::kSuccess || !api.event_set_create || !api.event_set_wait ||
      !api.register_events) {
    emit({{"type", "hello"}, {"ok", false}, {"message", "NVML events are not available"}});
    return 0;
  }
  unsigned count = 0;
  api.device_count(&count);
  nvmlEventSet_t set = nullptr;
  if (api.event_set_create(&set) != nvml::kSuccess) {
    emit({{"type", "hello"}, {"ok", false}, {"message", "nvmlEventSetCreate failed"}});
    return 0;
  }
  struct Device {
    nvmlDevice_t handle = nullptr;
    std::string bus_id;
  };
  std::vector<Device> devices(count);
  const unsigned long long wanted =
      nvml::kEventXidCritical | nvml::kEventDoubleBitEcc | nvml::kEventSingleBitEcc;
  for (unsigned i = 0; i < count; ++i) {
    if (api.handle_by_index(i, &devices[i].handle) != nvml::kSuccess) continue;
    nvmlPciInfo_t pci{};
    if (api.pci_info && api.pci_info(devices[i].handle, &pci) == nvml::kSuccess) {
      devices[i].bus_id = nvml::normalize_pci_bus_id(pci.busId);
    }
    unsigned long long supported = wanted;
    if (api.supported_event_types) api.supported_event_types(devices[i].handle, &supported);
    // Registering a type the device does not support fails the whole call.
    if (supported & wanted) api.register_events(devices[i].handle, supported & wanted, set);
  }
  emit({{"type", "hello"}, {"ok", true}, {"devices", count}});
  bool lost = false;
  while (true) {
    nvmlEventData_t data{};
    nvmlReturn_t rc = api.event_set_wait(set, &data, kEventWaitMs);
    if (rc == nvml::kTimeout) continue;
    if (rc == nvml::kGpuIsLost) {
      if (!lost) emit({{"type", "lost"}});  // once: the driver answers LOST to every wait
      lost = true;
      sleep(1);  // it answers at once: do not spin, but keep the other GPUs' events coming
      continue;
    }
    lost = false;
    if (rc != nvml::kSuccess) {
      sleep(1);
      continue;
    }
    unsigned index = 0;
    for (unsigned i = 0; i < count; ++i) {
      if (devices[i].handle == data.device) index = i;
    }
    nlohmann::json j{{"type", "event"},
                     {"gpu", index},
                     {"pci_bus_id", devices[index].bus_id},
                     {"event", gpu_event_kind_name(event_kind(data.eventType))},
                     {"time_ns", clock.now()}};
    if (data.eventType & nvml::kEventXidCritical) j["xid"] = data.eventData;
    emit(j);
  }
}

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
