// SPDX-License-Identifier: Apache-2.0
// Tests for the rooted file-system view and the in-memory one.
#include "platform/fs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace cardiac {
namespace {

class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cardiac-fs-XXXXXX";
    root_ = mkdtemp(tmpl);
    std::filesystem::create_directories(root_ + "/proc/sys/kernel");
    std::ofstream(root_ + "/proc/sys/kernel/osrelease") << "6.1.0-test\n";
    std::filesystem::create_directories(root_ + "/.cardiac");
    std::ofstream(root_ + "/.cardiac/statvfs") << "/ 1000 400 300\n/data 10 x 1\n";
    std::filesystem::create_symlink("../target", root_ + "/proc/link");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

TEST_F(TempTree, ReadsThroughTheRoot) {
  RootFs fs(root_ + "/");
  auto text = fs.read_file("/proc/sys/kernel/osrelease");
  ASSERT_TRUE(text) << text.error().what();
  EXPECT_EQ(*text, "6.1.0-test\n");
  EXPECT_TRUE(fs.exists("/proc/sys"));
  EXPECT_FALSE(fs.exists("/proc/nope"));
  auto names = fs.list_dir("/proc");
  ASSERT_TRUE(names);
  EXPECT_NE(std::find(names->begin(), names->end(), "sys"), names->end());
  EXPECT_EQ(*fs.read_link("/proc/link"), "../target");
}

TEST_F(TempTree, MissingFileIsNotFoundAndNamesThePath) {
  RootFs fs(root_);
  auto r = fs.read_file("/proc/meminfo");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().what().find("/proc/meminfo"), std::string::npos);
}

TEST_F(TempTree, ReadIsCappedAtMaxBytes) {
  RootFs fs(root_);
  auto r = fs.read_file("/proc/sys/kernel/osrelease", 3);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "6.1");
}

TEST_F(TempTree, CapturedDiskSpaceComesFromTheTable) {
  RootFs fs(root_);
  auto d = fs.disk_space("/");
  ASSERT_TRUE(d) << d.error().what();
  EXPECT_EQ(d->total, 1000u);
  EXPECT_EQ(d->available, 300u);
  auto bad = fs.disk_space("/data");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kParse);
  EXPECT_FALSE(fs.disk_space("/home"));
}

TEST(RootFsLive, StatvfsOfRootWorks) {
  RootFs fs;
  auto d = fs.disk_space("/");
  ASSERT_TRUE(d) << d.error().what();
  EXPECT_GT(d->total, 0u);
  EXPECT_GE(d->free, d->available);
}

TEST(MemFs, ListsImplicitDirectories) {
  MemFs fs;
  fs.add_file("/proc/1/stat", "x");
  fs.add_file("/proc/22/stat", "y");
  auto names = fs.list_dir("/proc");
  ASSERT_TRUE(names);
  EXPECT_EQ(names->size(), 2u);
  EXPECT_TRUE(fs.exists("/proc/1"));
  EXPECT_FALSE(fs.read_file("/proc/3/stat"));
}

}  // namespace
}  // namespace cardiac
