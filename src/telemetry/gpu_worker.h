// SPDX-License-Identifier: Apache-2.0
// The isolated NVML worker: cardiac re-executes itself with a hidden subcommand, loads NVML
// there and answers sample requests over a pipe. A wedged driver can only ever block this
// process, never the agent or `cardiac status`.
//
// Protocol (lines; JSON but for the readings):
//   worker → parent, once:  {"type":"hello","ok":true,"wire":"<layout id>","system":{…}}
//                        or {"type":"hello","ok":false,"kind":"…","message":"…"}
//   parent → worker:        {"cmd":"sample","only":[4,5]}   (omit "only" for every GPU)
//   worker → parent:        "gpu " and the reading's compact line (nvml/gpu_wire.h) per device,
//                           then {"type":"end"}
//   parent → worker:        {"cmd":"quit"}  (or closes stdin)
//   worker → parent, with --events 1, at any time between those lines: the event thread's
//                           lines (event_worker.h)
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"

namespace cardiac::telemetry {

inline constexpr const char* kWorkerSubcommand = "__nvml-worker";
inline constexpr int kWorkerProgressFd = 3;
// What starts a reading's line (the rest is nvml::append_wire's form).
inline constexpr std::string_view kGpuLinePrefix = "gpu ";

struct WorkerOptions {
  std::string nvml_lib;  // empty: the default search order
  int progress_fd = -1;  // inherited memfd, or -1
  bool events = false;   // also wait for NVML's events in a thread (event_worker.h)
};

// Runs the worker loop on stdin/stdout until the parent quits; returns the exit code.
int run_gpu_worker(const WorkerOptions& options, const Clock& clock);

// The whole worker process from its command line (`… __nvml-worker [--events 1] [--nvml-lib P]
// [--progress-fd N]`).
int worker_main(int argc, char** argv);

// The worker's own executable, installed beside cardiac (or in ../libexec/cardiac/): a small
// program that links NVML's loader and nothing of the agent (no SQLite, HTTP, TLS), so the
// agent's worker holds a few MiB instead of a copy of everything cardiac maps.
inline constexpr const char* kWorkerExecutable = "cardiac-nvml-worker";

// What to start a worker with, given the cardiac executable that asks: the worker executable
// found beside it (or in <its dir>/../libexec/cardiac/), else `main_executable` itself, which
// answers the same subcommand.
std::string worker_executable(const std::string& main_executable);

}  // namespace cardiac::telemetry
