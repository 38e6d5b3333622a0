// SPDX-License-Identifier: Apache-2.0
// Tests for the mounts parser, the data-file-system rule and capacity collection.
#include "host/mounts.h"

#include <gtest/gtest.h>

#include <string>

namespace cardiac::host {
namespace {

constexpr const char* kMounts =
    "proc /proc proc rw,relatime 0 0\n"
    "sysfs /sys sysfs rw,relatime 0 0\n"
    "tmpfs /dev/shm tmpfs rw,relatime,size=24683584k 0 0\n"
    "/dev/vda / ext4 rw,relatime,discard 0 0\n"
    "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
    "overlay /var/lib/docker/overlay2/x/merged overlay rw,relatime,lowerdir=/a 0 0\n"
    "/dev/nvme0n1p1 /data xfs rw,noatime 0 0\n"
    "/dev/nvme0n1p1 /var/lib/docker/bind xfs rw,noatime 0 0\n"
    "fs1:/export /mnt/my\\040data nfs4 rw,vers=4.2 0 0\n";

TEST(HostMounts, ParsesAndUnescapes) {
  auto m = parse_mounts(kMounts);
  ASSERT_TRUE(m) << m.error().what();
  ASSERT_EQ(m->size(), 9u);
  EXPECT_EQ((*m)[3].device, "/dev/vda");
  EXPECT_EQ((*m)[3].mount_point, "/");
  EXPECT_EQ((*m)[3].fs_type, "ext4");
  EXPECT_EQ((*m)[8].mount_point, "/mnt/my data");
}

TEST(HostMounts, EmptyIsNoMounts) {
  auto m = parse_mounts("");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->empty());
}

TEST(HostMounts, TruncatedAndGarbageNameTheLine) {
  auto t = parse_mounts("/dev/vda / ext4 rw 0 0\n/dev/vdb /data");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().context, "line 2");
  auto g = parse_mounts(std::string("\x01\x02 \xff \x00 x\n", 9));
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().context, "line 1");
}

TEST(HostMounts, DataFilesystemRule) {
  for (const char* fs : {"ext4", "xfs", "btrfs", "zfs", "vfat", "nfs", "nfs4", "lustre", "gpfs"}) {
    EXPECT_TRUE(is_data_filesystem(fs)) << fs;
  }
  for (const char* fs : {"proc", "sysfs", "tmpfs", "devtmpfs", "overlay", "cgroup", "cgroup2",
                         "squashfs", "devpts", "autofs", "fuse.lxcfs", "rootfs"}) {
    EXPECT_FALSE(is_data_filesystem(fs)) << fs;
  }
  EXPECT_TRUE(is_network_filesystem("nfs4"));
  EXPECT_FALSE(is_network_filesystem("ext4"));
}

TEST(HostMounts, SelectKeepsOneMountPerDeviceAndPoint) {
  auto all = parse_mounts(std::string(kMounts) + "/dev/vdb / ext4 rw 0 0\n");
  ASSERT_TRUE(all);
  auto sel = select_data_mounts(*all);
  ASSERT_EQ(sel.size(), 3u);
  EXPECT_EQ(sel[0].mount_point, "/");
  EXPECT_EQ(sel[0].device, "/dev/vdb");  // mounted over the first root
  EXPECT_EQ(sel[1].mount_point, "/data");
  EXPECT_EQ(sel[2].mount_point, "/mnt/my data");
}

TEST(HostMounts, CollectAddsCapacityAndKeepsUnknownAsAbsent) {
  MemFs fs;
  fs.add_file("/proc/self/mounts", kMounts);
  fs.add_disk("/", DiskSpace{1000, 400, 300});
  auto f = collect_filesystems(fs);
  ASSERT_TRUE(f) << f.error().what();
  ASSERT_EQ(f->size(), 3u);
  EXPECT_EQ((*f)[0].total, 1000u);
  EXPECT_EQ((*f)[0].available, 300u);
  EXPECT_FALSE((*f)[1].total);
  EXPECT_TRUE((*f)[2].network);
}

TEST(HostMounts, CollectFallsBackToProcMounts) {
  MemFs fs;
  fs.add_file("/proc/mounts", "/dev/sda1 / ext3 rw 0 0\n");
  auto f = collect_filesystems(fs);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].fs_type, "ext3");
}

TEST(HostMounts, CollectMissingIsNotFound) {
  MemFs fs;
  auto f = collect_filesystems(fs);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace cardiac::host
