// SPDX-License-Identifier: Apache-2.0
// cardiac-nvml-worker: the NVML worker as a program of its own (gpu_worker.h). The agent starts
// it as `cardiac-nvml-worker __nvml-worker …`, the same command line `cardiac` itself answers,
// so either serves and `ps` shows the same arguments.
#include <cstdio>
#include <cstring>

#include "telemetry/gpu_worker.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], cardiac::telemetry::kWorkerSubcommand) != 0) {
    std::fprintf(stderr,
                 "%s is started by `cardiac agent` and `cardiac status`; it is not run by hand\n",
                 argc > 0 ? argv[0] : "cardiac-nvml-worker");
    return 2;
  }
  return cardiac::telemetry::worker_main(argc, argv);
}
