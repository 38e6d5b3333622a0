// SPDX-License-Identifier: Apache-2.0
// Listening ports: first seen kept, last seen moved on, a store without the table reads empty.
#include <gtest/gtest.h>

#include "store/listen_ports.h"
#include "store/tests/support.h"

namespace cardiac::store {
namespace {

TEST(ListenPorts, AStoreThatNeverRecordedAnyHasNone) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  auto none = listen_ports(db);
  ASSERT_TRUE(none) << none.error().what();
  EXPECT_TRUE(none->empty());
}

TEST(ListenPorts, FirstSeenStaysLastSeenMovesOn) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  ASSERT_TRUE(record_listen_ports(db, {{"tcp", 22}, {"udp", 53}}, 100));
  ASSERT_TRUE(record_listen_ports(db, {{"tcp", 22}, {"tcp", 4444}}, 200));
  auto got = listen_ports(db);
  ASSERT_TRUE(got) << got.error().what();
  std::vector<ListenPort> want = {
      {"tcp", 22, 100, 200}, {"udp", 53, 100, 100}, {"tcp", 4444, 200, 200}};
  EXPECT_EQ(*got, want);
  // An empty scan changes nothing.
  ASSERT_TRUE(record_listen_ports(db, {}, 300));
  EXPECT_EQ(*listen_ports(db), want);
}

}  // namespace
}  // namespace cardiac::store
