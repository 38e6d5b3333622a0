// SPDX-License-Identifier: Apache-2.0
// Tests for the one-block point pool and the merged instants of a seal.
#include "store/point_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace cardiac::store {
namespace {

std::vector<TimeNs> times_of(std::span<const Point> points) {
  std::vector<TimeNs> t;
  for (const Point& p : points) t.push_back(p.time);
  return t;
}

TEST(PointPool, EachSeriesGetsItsOwnPointsInOrderOfAdding) {
  PointPool pool;
  const std::vector<PointPool::Size> sizes{{{1, 0}, 2}, {{1, 1}, 3}, {{2, -1}, 1}};
  pool.reset(sizes);
  EXPECT_EQ(pool.series(), 3u);
  // Interleaved, as a tail's records list them.
  pool.add({1, 1}, Point{10, 1.0});
  pool.add({1, 0}, std::vector<Point>{{10, 2.0}, {11, 2.5}});
  pool.add({2, -1}, Point{10, 3.0});
  pool.add({1, 1}, std::vector<Point>{{11, 1.5}, {12, 1.75}});
  EXPECT_TRUE(pool.exact());
  EXPECT_EQ(times_of(pool.points({1, 0})), (std::vector<TimeNs>{10, 11}));
  EXPECT_EQ(times_of(pool.points({1, 1})), (std::vector<TimeNs>{10, 11, 12}));
  EXPECT_EQ(pool.points({1, 1})[2].value, 1.75);
  EXPECT_EQ(pool.points({2, -1})[0].value, 3.0);
  std::vector<SeriesKey> order;
  pool.for_each([&](const SeriesKey& key, std::span<const Point>) { order.push_back(key); });
  EXPECT_EQ(order, (std::vector<SeriesKey>{{1, 0}, {1, 1}, {2, -1}}));
}

TEST(PointPool, AKeyNotInThePoolIsLeftOutAndAnOverflowIsToldNotWritten) {
  PointPool pool;
  const std::vector<PointPool::Size> sizes{{{1, 0}, 1}, {{1, 2}, 1}};
  pool.reset(sizes);
  pool.add({1, 1}, Point{5, 9.0});  // another group's series
  EXPECT_TRUE(pool.points({1, 1}).empty());
  EXPECT_FALSE(pool.exact());  // nothing added to the pool's own series yet
  pool.add({1, 0}, Point{5, 1.0});
  pool.add({1, 2}, Point{5, 2.0});
  EXPECT_TRUE(pool.exact());
  // One point past its size: the neighbour's point stays as it was.
  pool.add({1, 0}, Point{6, 7.0});
  EXPECT_FALSE(pool.exact());
  ASSERT_EQ(pool.points({1, 2}).size(), 1u);
  EXPECT_EQ(pool.points({1, 2})[0].value, 2.0);
  EXPECT_EQ(pool.points({1, 0}).size(), 1u);
}

TEST(PointPool, AResetDropsThePointsAndTheSeriesBefore) {
  PointPool pool;
  std::vector<PointPool::Size> sizes{{{1, 0}, 3}};
  pool.reset(sizes);
  pool.add({1, 0}, std::vector<Point>{{1, 1.0}, {2, 2.0}, {3, 3.0}});
  sizes = {{{4, 0}, 1}, {{5, 0}, 1}};
  pool.reset(sizes);
  EXPECT_TRUE(pool.points({1, 0}).empty());
  EXPECT_TRUE(pool.points({4, 0}).empty());
  pool.add({5, 0}, Point{8, 8.0});
  pool.add({4, 0}, Point{7, 7.0});
  EXPECT_TRUE(pool.exact());
  EXPECT_EQ(pool.points({4, 0})[0].time, 7);
  EXPECT_EQ(pool.points({5, 0})[0].time, 8);
  pool.reset({});
  EXPECT_EQ(pool.series(), 0u);
  EXPECT_TRUE(pool.exact());
}

TEST(InstantSet, MergesRecordsInAnyOrderIntoOneAscendingColumn) {
  InstantSet set;
  set.merge();  // nothing added: nothing changes
  EXPECT_TRUE(set.times().empty());
  // A record's instants, repeated across its series and out of order.
  for (TimeNs t : {20, 10, 20, 10}) set.add(t);
  set.merge();
  EXPECT_EQ(set.times(), (std::vector<TimeNs>{10, 20}));
  // After the last one: appended.
  set.add(std::vector<Point>{{30, 0.0}, {30, 1.0}});
  set.merge();
  // Before and between (a clock stepped back, a batch flushed late): merged in.
  for (TimeNs t : {5, 15, 20, 40}) set.add(t);
  set.merge();
  EXPECT_EQ(set.times(), (std::vector<TimeNs>{5, 10, 15, 20, 30, 40}));
}

}  // namespace
}  // namespace cardiac::store
