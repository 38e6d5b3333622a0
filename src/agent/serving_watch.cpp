// SPDX-License-Identifier: Apache-2.0
#include "agent/serving_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "serving/scrape.h"

namespace cardiac::agent {
namespace {

// The book (about 18 kB for four processes with a full window) is written every 5 minutes and
// at stop: every minute it was about 25 MB a day of disk writes. A crash loses at most the last
// 5 minutes of a 30-minute window.
constexpr DurationNs kSaveEvery = 300 * kNsPerSec;

serving::VramBookOptions book_options(const config::ServingSettings& s) {
  serving::VramBookOptions o;
  o.window = s.vram_window;
  o.step = s.vram_step;
  o.criteria.min_span = s.vram_min_span;
  o.criteria.min_growth_bytes = s.vram_min_growth_mib * 1024 * 1024;
  return o;
}

// Written to a temporary file and renamed, so the doctor never reads half a book. Command
// lines may carry secrets: the file gets the store's mode and group (owner only, or
// `[agent] group`), never the umask's.
Status write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  struct stat db {};
  const std::string db_path = (std::filesystem::path(path).parent_path() / "cardiac.db").string();
  const bool have_db = ::stat(db_path.c_str(), &db) == 0;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail(Error::io(tmp, errno));
  bool ok = true;
  if (have_db) {
    ok = ::fchmod(fd, db.st_mode & 0640) == 0 &&
         (db.st_gid == ::getegid() || ::fchown(fd, static_cast<uid_t>(-1), db.st_gid) == 0);
  }
  std::size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  const int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return fail(Error::io(tmp, err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail(Error::io(path, errno));
  return {};
}

}  // namespace

ServingWatch::ServingWatch(const config::ServingSettings& s, std::string book_path,
                           std::shared_ptr<const FileSystem> fs, const Latest<EngineReads>* engines,
                           const Clock& clock)
    : book_(book_options(s)),
      book_path_(std::move(book_path)),
      fs_(std::move(fs)),
      engines_(engines),
      clock_(clock),
      last_save_(clock.monotonic()) {
  // A restart keeps the window: what the last run saw of each process still counts.
  if (book_path_.empty()) return;
  std::ifstream in(book_path_);
  if (!in) return;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) {
    log::warn("{}: not JSON; the per-process VRAM history starts afresh", book_path_);
    return;
  }
  if (auto st = book_.from_json(j, clock_.now(), book_path_); !st) {
    log::warn("{}; the per-process VRAM history starts afresh", st.error().what());
  }
}

void ServingWatch::add(const nvml::GpuSnapshot& gpus, TimeNs now, std::vector<rules::Point>& out) {
  const auto cmdline = [this](std::uint32_t pid) {
    auto raw = fs_->read_file(fmt::format("/proc/{}/cmdline", pid));
    return raw ? *raw : std::string();
  };
  if (book_.add(gpus, now, cmdline)) dirty_ = true;
  // The projection follows the GPU's free memory at every sample; the rate only changes when
  // a point is stored.
  for (const auto& [key, t] : book_.tracks()) {
    if (!t.growth || t.growth->fit.slope_per_s <= 0) continue;
    const double minutes = t.gpu_free_bytes / t.growth->fit.slope_per_s / 60;
    rules::Labels l{{"gpu", std::to_string(t.gpu)},
                    {"pid", std::to_string(t.pid)},
                    {"process", t.name.empty() ? "?" : t.name}};
    if (!t.uuid.empty()) l["uuid"] = t.uuid;
    out.push_back({"gpu_process_vram_oom_minutes", std::move(l), minutes});
  }
  if (engines_ != nullptr) engine_points(gpus, out);
  save();
}

void ServingWatch::engine_points(const nvml::GpuSnapshot& gpus,
                                 std::vector<rules::Point>& out) const {
  const EngineReads reads = engines_->get();
  for (const auto& r : reads) {
    const auto& s = r.last;
    if (s.url.empty()) continue;  // not read yet
    const rules::Labels l{{"engine", s.url}};
    out.push_back({"serving_engine_up", l, s.ok() ? 1.0 : 0.0});
    if (!s.ok()) continue;
    auto add = [&](const char* metric, const std::optional<double>& v, double scale = 1) {
      if (v) out.push_back({metric, l, *v * scale});
    };
    add("serving_kv_cache_usage_pct", s.kv_cache_usage, 100);
    add("serving_requests_waiting", s.requests_waiting);
    add("serving_requests_running", s.requests_running);
    add("serving_preemptions_total", s.preemptions_total);
    // The GPUs it runs on: those holding a process recognised as this engine, else every GPU
    // a compute process holds; their utilization in this sample.
    std::set<unsigned> mine;
    std::set<unsigned> held;
    for (const auto& [key, t] : book_.tracks()) {
      held.insert(t.gpu);
      if (t.engine && t.engine->engine == s.engine) mine.insert(t.gpu);
    }
    const auto& pick = mine.empty() ? held : mine;
    double sum = 0;
    int n = 0;
    for (const auto& g : gpus.gpus) {
      if (pick.contains(g.index) && g.utilization_gpu) {
        sum += *g.utilization_gpu;
        ++n;
      }
    }
    std::optional<double> busy;
    if (n > 0) busy = sum / n;
    const auto verdict = serving::judge_engine(s, r.before ? &*r.before : nullptr, busy);
    const bool kv = verdict && verdict->kind == serving::Bottleneck::kKvCacheFull;
    const bool sched = verdict && verdict->kind == serving::Bottleneck::kScheduling;
    out.push_back({"serving_kv_cache_full", l, kv ? 1.0 : 0.0});
    if (busy) out.push_back({"serving_queue_while_gpu_idle", l, sched ? 1.0 : 0.0});
  }
}

void ServingWatch::save(bool force) {
  if (book_path_.empty() || !dirty_) return;
  if (!force && clock_.monotonic() - last_save_ < kSaveEvery) return;
  last_save_ = clock_.monotonic();
  dirty_ = false;
  if (auto st = write_atomically(book_path_, book_.to_json().dump()); !st) {
    log::warn("per-process VRAM history: {}", st.error().what());
  }
}

void run_engine_scrapes(const config::ServingSettings& s, Latest<EngineReads>& out,
                        const Clock& clock, Stopper& stop) {
  EngineReads reads(s.engines.size());
  std::vector<std::string> logged(s.engines.size());
  while (true) {
    for (std::size_t i = 0; i < s.engines.size(); ++i) {
      auto now = serving::scrape_engine(s.engines[i], {.timeout = s.scrape_timeout}, clock.now());
      // Logged when the reason changes, not at every scrape.
      if (now.error != logged[i]) {
        if (now.ok()) {
          log::info("inference engine {}: read again ({})", now.url, now.engine);
        } else {
          log::warn("inference engine {}: {}", now.url, now.error);
        }
        logged[i] = now.error;
      }
      if (!reads[i].last.url.empty()) reads[i].before = std::move(reads[i].last);
      reads[i].last = std::move(now);
    }
    out.set(reads);
    if (!stop.sleep_for(s.scrape_interval)) return;
  }
}

}  // namespace cardiac::agent
