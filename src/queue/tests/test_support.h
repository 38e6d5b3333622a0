// SPDX-License-Identifier: Apache-2.0
// Queue test helpers: a temporary state directory, hand-made GPU reports, polling.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include "health/report.h"
#include "queue/auth.h"

namespace cardiac::queue::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cardiac-queue-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls `ready` every 10 ms until it holds or `seconds` pass: waits for an observable
// condition; the bound only keeps a broken test from hanging.
inline bool eventually(const std::function<bool()>& ready, double seconds = 20) {
  for (int i = 0; i < static_cast<int>(seconds * 100); ++i) {
    if (ready()) return true;
    usleep(10000);
  }
  return ready();
}

// `n` healthy 80 GiB GPUs with UUIDs GPU-test-<i> on buses 0000:<i+10>:00.0.
inline std::shared_ptr<health::StatusReport> make_report(unsigned n) {
  auto r = std::make_shared<health::StatusReport>();
  r->nvml.available = true;
  for (unsigned i = 0; i < n; ++i) {
    health::GpuStatus g;
    g.reading.index = i;
    g.reading.uuid = "GPU-test-" + std::to_string(i);
    g.reading.pci_bus_id = "0000:" + std::to_string(10 + i) + ":00.0";
    g.reading.memory_total = 80ULL << 30;
    g.reading.memory_used = 4ULL << 20;
    g.reading.utilization_gpu = 0;
    g.reading.processes_supported = true;
    r->gpus.push_back(g);
  }
  return r;
}

inline Principal self_principal() {
  return resolve_principal(getuid(), getgid(), getpid());
}

}  // namespace cardiac::queue::testing
