// SPDX-License-Identifier: Apache-2.0
// Tests for the event log.
#include "store/events.h"

#include <gtest/gtest.h>

#include "store/tests/support.h"

namespace cardiac::store {
namespace {

Event xid(TimeNs t, unsigned gpu, std::int64_t code, const std::string& key) {
  Event e;
  e.time_ns = t;
  e.kind = "xid";
  e.gpu = gpu;
  e.pci_bus_id = "0000:3b:00.0";
  e.xid = code;
  e.message = "NVRM: Xid (PCI:0000:3b:00): " + std::to_string(code);
  e.source = "kmsg";
  e.dedup_key = key;
  return e;
}

TEST(StoreEvents, DedupKeyKeepsOneCopy) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  EXPECT_TRUE(insert_event(db, xid(100, 0, 79, "kmsg:1")).value());
  EXPECT_FALSE(insert_event(db, xid(100, 0, 79, "kmsg:1")).value());
  EXPECT_EQ(testing::scalar(db, "SELECT count(*) FROM events"), 1);
}

TEST(StoreEvents, ListSinceAndCount) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  ASSERT_TRUE(insert_event(db, xid(100, 0, 79, "a")));
  ASSERT_TRUE(insert_event(db, xid(200, 1, 79, "b")));
  ASSERT_TRUE(insert_event(db, xid(300, 1, 48, "c")));
  Event k;
  k.time_ns = 400;
  k.kind = "kmsg";
  k.message = "nvidia-nvlink: fatal";
  k.dedup_key = "d";
  ASSERT_TRUE(insert_event(db, k));

  auto since = events_since(db, 200);
  ASSERT_TRUE(since) << since.error().what();
  ASSERT_EQ(since->size(), 3u);
  EXPECT_EQ((*since)[0].dedup_key, "b");
  EXPECT_EQ((*since)[0].gpu, 1u);
  EXPECT_EQ((*since)[0].xid, 79);
  EXPECT_EQ((*since)[2].kind, "kmsg");
  EXPECT_FALSE((*since)[2].gpu);
  EXPECT_FALSE((*since)[2].xid);

  auto counts = count_events(db, 0);
  ASSERT_TRUE(counts);
  ASSERT_EQ(counts->size(), 3u);
  EXPECT_EQ((*counts)[0].kind, "kmsg");
  EXPECT_EQ((*counts)[1].xid, 48);
  EXPECT_EQ((*counts)[1].count, 1);
  EXPECT_EQ((*counts)[2].xid, 79);
  EXPECT_EQ((*counts)[2].count, 2);
}

}  // namespace
}  // namespace cardiac::store
