// SPDX-License-Identifier: Apache-2.0
// Worker side of the NVML isolation.
#include "telemetry/gpu_worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/strings.h"
#include "core/thread_name.h"
#include "nvml/gpu_json.h"
#include "nvml/gpu_wire.h"
#include "nvml/library.h"
#include "nvml/reader.h"
#include "telemetry/event_worker.h"
#include "telemetry/worker_progress.h"

namespace cardiac::telemetry {
namespace {

// The sampling thread and the event thread both write whole lines to stdout: one at a time,
// each flushed at once, so that the parent never sees two interleaved.
std::mutex out_mutex;

void write_line(const std::string& line) {
  std::lock_guard lock(out_mutex);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

void emit(const nlohmann::json& j) {
  write_line(j.dump() + "\n");
}

// "library_not_found" means no driver is installed, which is a normal state for a machine
// without GPUs; a library the user named that cannot be loaded is a configuration problem.
std::string library_error_kind(const Error& e, bool named) {
  return e.code == ErrorCode::kNotFound && !named ? "library_not_found" : "library_unusable";
}

}  // namespace

int worker_main(int argc, char** argv) {
  WorkerOptions options;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string_view flag = argv[i];
    if (flag == "--nvml-lib") options.nvml_lib = argv[i + 1];
    if (flag == "--progress-fd") {
      // A number the agent wrote; anything else leaves progress off rather than writing to fd 0.
      auto fd = parse_i64(argv[i + 1]);
      options.progress_fd = fd && *fd >= 0 && *fd <= INT32_MAX ? static_cast<int>(*fd) : -1;
    }
    if (flag == "--events") options.events = std::string_view(argv[i + 1]) == "1";
  }
  // The worker process's own clock: it stamps readings and events.
  return run_gpu_worker(options, SystemClock::instance());
}

std::string worker_executable(const std::string& main_executable) {
  const auto slash = main_executable.rfind('/');
  if (slash == std::string::npos) return main_executable;
  const std::string dir = main_executable.substr(0, slash);
  for (const std::string& candidate :
       {dir + "/" + kWorkerExecutable, dir + "/../libexec/cardiac/" + kWorkerExecutable}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return main_executable;
}

int run_gpu_worker(const WorkerOptions& options, const Clock& clock) {
  // Die with the parent; never outlive it holding the driver.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<WorkerProgress> progress;
  if (options.progress_fd >= 0) {
    auto attached = WorkerProgress::attach(options.progress_fd);
    if (attached) progress = std::move(*attached);
  }

  auto lib = nvml::Library::open(options.nvml_lib);
  if (!lib) {
    emit({{"type", "hello"},
          {"ok", false},
          {"kind", library_error_kind(lib.error(), !options.nvml_lib.empty())},
          {"message", lib.error().context.empty()
                          ? lib.error().message
                          : lib.error().message + " (" + lib.error().context + ")"}});
    return 0;
  }
  nvml::CallHook hook;
  if (progress) {
    hook = [p = progress.get()](int device, std::string_view fn) { p->publish(device, fn); };
  }
  nvml::Reader reader(**lib, clock, hook);
  auto system = reader.init();
  if (!system) {
    emit({{"type", "hello"},
          {"ok", false},
          {"kind", nvml::init_failure_kind(system.error())},
          {"message", system.error().message},
          {"library_path", (*lib)->path()}});
    return 0;
  }
  emit({{"type", "hello"},
        {"ok", true},
        {"wire", nvml::wire_layout_id()},
        {"system", nvml::to_json(*system)}});
  if (options.events) {
    // Never joined: it blocks in the driver's wait, and the process ends with the parent.
    std::thread([api = &(*lib)->api(), &clock] {
      name_this_thread("nvml-events");
      run_event_loop(*api, write_line, clock);
    }).detach();
  }

  std::string line;
  std::string out;
  while (std::getline(std::cin, line)) {
    nlohmann::json cmd = nlohmann::json::parse(line, nullptr, false);
    std::string name = cmd.is_object() ? cmd.value("cmd", "") : "";
    if (name == "quit") break;
    if (name != "sample") {
      emit({{"type", "error"}, {"message", "unknown command: " + line}});
      continue;
    }
    std::set<unsigned> only;
    if (auto it = cmd.find("only"); it != cmd.end() && it->is_array()) {
      for (const auto& v : *it) {
        if (v.is_number_unsigned()) only.insert(v.get<unsigned>());
      }
    }
    for (unsigned i = 0; i < system->device_count; ++i) {
      if (!only.empty() && !only.count(i)) continue;
      // One line and one write per GPU, so that the parent has every reading before a device
      // that hangs (gpu_collector.cpp keeps those and names the one in flight).
      out.assign(kGpuLinePrefix);
      nvml::append_wire(reader.read_device(i), out);
      out += '\n';
      write_line(out);
    }
    if (progress) progress->publish(-1, "");
    emit({{"type", "end"}});
  }
  if (options.events) {
    // The event thread may be inside the driver's wait: end the process without unloading
    // NVML or running destructors under it.
    std::fflush(stdout);
    std::_Exit(0);
  }
  return 0;
}

}  // namespace cardiac::telemetry
