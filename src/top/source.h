// SPDX-License-Identifier: Apache-2.0
// Where `cardiac top` gets its data: the running agent's HTTP API (status, alerts, queue, and
// once its stored history for the sparklines) when one answers and is sampling, else a sample
// of its own through the isolated NVML worker, as `cardiac status --watch` takes them. A
// `Poller` fetches on its own thread, so a slow driver or agent never freezes the keys.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/clock.h"
#include "top/history.h"
#include "top/snapshot.h"

namespace cardiac {
class RootFs;
}

namespace cardiac::top {

struct SourceOptions {
  config::Config config;
  std::string state_dir;  // for the agent's API token
  std::string nvml_lib;   // the local sample's; empty: the configuration's
  DurationNs timeout = 5 * kNsPerSec;
  DurationNs interval = kNsPerSec;
  bool use_agent = true;
};

// A stored value from the agent, to seed the sparklines.
struct HistoryPoint {
  unsigned gpu = 0;
  Metric metric = Metric::kUtil;
  TimeNs time = 0;
  double value = 0;
};

struct Update {
  Snapshot snapshot;
  std::vector<HistoryPoint> seed;  // only with the first answer of an agent
};

// One fetch at a time, on the caller's thread.
class Source {
 public:
  Source(SourceOptions o, const Clock& clock);
  ~Source();
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  // Never fails: what could not be read is in the snapshot's notes or message.
  Update fetch();

 private:
  struct Local;
  std::optional<Update> from_agent(std::string& why_not);
  Update from_local();
  void name_users(Snapshot& s);

  SourceOptions o_;
  const Clock& clock_;
  std::shared_ptr<RootFs> fs_;
  std::unique_ptr<Local> local_;
  bool seeded_ = false;  // the agent's history has been read
  std::map<unsigned, std::string> users_;
};

// Runs a Source every interval on its own thread; the screen takes the newest update.
class Poller {
 public:
  Poller(SourceOptions o, const Clock& clock);
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;
  // The newest update since the last call, if any.
  std::optional<Update> take();

 private:
  void run();
  DurationNs interval_;
  Source source_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::optional<Update> latest_;
  std::thread thread_;
};

}  // namespace cardiac::top
