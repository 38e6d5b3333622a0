// SPDX-License-Identifier: Apache-2.0
// Host collection with a deadline: a file system that never answers does not hold the caller.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "host/bounded.h"

namespace cardiac::host {
namespace {

// A file system whose reads wait until the test opens the gate, like a dead NFS server.
class GatedFs final : public FileSystem {
 public:
  void open_gate() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  Result<std::string> read_file(std::string_view path, std::size_t max) const override {
    wait();
    return inner_.read_file(path, max);
  }
  Result<std::vector<std::string>> list_dir(std::string_view path) const override {
    wait();
    return inner_.list_dir(path);
  }
  Result<std::string> read_link(std::string_view path) const override {
    return inner_.read_link(path);
  }
  bool exists(std::string_view path) const override { return inner_.exists(path); }
  Result<DiskSpace> disk_space(std::string_view m) const override { return inner_.disk_space(m); }
  std::string root() const override { return "gated"; }
  MemFs inner_;

 private:
  void wait() const {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool open_ = false;
};

TEST(HostBounded, ReturnsTheSnapshotWhenCollectionFinishes) {
  auto fs = std::make_shared<MemFs>();
  fs->add_file("/proc/meminfo", "MemTotal: 1024 kB\nMemAvailable: 512 kB\n");
  auto snap = collect_host_within(fs, 42, 60 * kNsPerSec);
  ASSERT_TRUE(snap);
  EXPECT_EQ(snap->taken_at, 42);
  ASSERT_TRUE(snap->memory);
  EXPECT_EQ(snap->memory->total, 1024u * 1024);
}

TEST(HostBounded, GivesUpAtTheDeadlineWhileReadsBlock) {
  auto fs = std::make_shared<GatedFs>();
  fs->inner_.add_file("/proc/meminfo", "MemTotal: 1024 kB\n");
  // A deadline of zero: the gate is closed, so the collection cannot have finished.
  EXPECT_FALSE(collect_host_within(fs, 1, 0));
  fs->open_gate();  // let the abandoned thread finish; it owns a reference to `fs`
}

}  // namespace
}  // namespace cardiac::host
