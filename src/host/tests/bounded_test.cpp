// SPDX-License-Identifier: Apache-2.0
// Host collection with a deadline: a file system that never answers does not hold the caller.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

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

// A MemFs that notes which threads read it.
class ThreadNotingFs final : public FileSystem {
 public:
  Result<std::string> read_file(std::string_view path, std::size_t max) const override {
    note();
    return inner_.read_file(path, max);
  }
  Result<std::vector<std::string>> list_dir(std::string_view path) const override {
    note();
    return inner_.list_dir(path);
  }
  Result<std::string> read_link(std::string_view path) const override {
    return inner_.read_link(path);
  }
  bool exists(std::string_view path) const override { return inner_.exists(path); }
  Result<DiskSpace> disk_space(std::string_view m) const override { return inner_.disk_space(m); }
  std::string root() const override { return "noting"; }
  std::set<std::thread::id> readers() const {
    std::lock_guard lock(mu_);
    return readers_;
  }
  MemFs inner_;

 private:
  void note() const {
    std::lock_guard lock(mu_);
    readers_.insert(std::this_thread::get_id());
  }
  mutable std::mutex mu_;
  mutable std::set<std::thread::id> readers_;
};

TEST(HostBounded, AReaderKeepsOneThreadForAllItsReads) {
  auto fs = std::make_shared<ThreadNotingFs>();
  fs->inner_.add_file("/proc/meminfo", "MemTotal: 1024 kB\n");
  HostReader reader(fs);
  for (TimeNs at : {1, 2, 3}) {
    auto snap = reader.collect(at, 60 * kNsPerSec);
    ASSERT_TRUE(snap);
    EXPECT_EQ(snap->taken_at, at);
    ASSERT_TRUE(snap->memory);
  }
  EXPECT_EQ(reader.reads(), 3u);
  const auto readers = fs->readers();
  ASSERT_EQ(readers.size(), 1u);
  EXPECT_NE(*readers.begin(), std::this_thread::get_id());
}

// A read stuck on a hung file system is not joined by a second one: later calls give up at
// once, and the first answer after it comes back is a fresh read, not the stale one.
TEST(HostBounded, AStuckReadIsNeitherQueuedBehindNorDoubled) {
  auto fs = std::make_shared<GatedFs>();
  fs->inner_.add_file("/proc/meminfo", "MemTotal: 1024 kB\n");
  HostReader reader(fs);
  EXPECT_FALSE(reader.collect(1, 0));
  EXPECT_FALSE(reader.collect(2, 60 * kNsPerSec));  // would wait a minute if it queued
  EXPECT_LE(reader.reads(), 1u);
  fs->open_gate();
  std::optional<HostSnapshot> snap;
  while (!(snap = reader.collect(3, 60 * kNsPerSec))) std::this_thread::yield();
  EXPECT_EQ(snap->taken_at, 3);
  EXPECT_EQ(reader.reads(), 2u);
}

}  // namespace
}  // namespace cardiac::host
