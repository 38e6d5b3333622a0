// SPDX-License-Identifier: Apache-2.0
// Tests for Xid counting and cross-source de-duplication.
#include "kmsg/xid_counter.h"

#include <gtest/gtest.h>

namespace cardiac::kmsg {
namespace {

constexpr TimeNs kT0 = 1'700'000'000LL * kNsPerSec;

TEST(XidCounter, SameOccurrenceFromBothSourcesCountsOnce) {
  XidCounter c;
  EXPECT_TRUE(c.record("0000:3b:00.0", 79, kT0, XidSource::kKernelLog));
  EXPECT_FALSE(c.record("00000000:3B:00.0", 79, kT0 + 2 * kNsPerSec, XidSource::kNvml));
  EXPECT_EQ(c.count("0000:3b:00.0", 79), 1u);
  EXPECT_EQ(c.total(), 1u);
  EXPECT_EQ(c.duplicates(), 1u);
}

TEST(XidCounter, NvmlFirstThenKernelLogAlsoFolds) {
  XidCounter c;
  EXPECT_TRUE(c.record("0000:3b:00.0", 48, kT0 + kNsPerSec, XidSource::kNvml));
  EXPECT_FALSE(c.record("0000:3b:00", 48, kT0, XidSource::kKernelLog));  // earlier, out of order
  EXPECT_EQ(c.count("0000:3b:00.0", 48), 1u);
}

TEST(XidCounter, OutsideWindowOrDifferentKeyCountsAgain) {
  XidCounter c;
  EXPECT_TRUE(c.record("0000:3b:00.0", 79, kT0, XidSource::kKernelLog));
  EXPECT_TRUE(c.record("0000:3b:00.0", 79, kT0 + 6 * kNsPerSec, XidSource::kNvml));
  EXPECT_TRUE(c.record("0000:3b:00.0", 13, kT0 + 6 * kNsPerSec, XidSource::kNvml));
  EXPECT_TRUE(c.record("0000:5e:00.0", 79, kT0 + 6 * kNsPerSec, XidSource::kKernelLog));
  EXPECT_EQ(c.count("0000:3b:00.0", 79), 2u);
  EXPECT_EQ(c.total(), 4u);
}

TEST(XidCounter, RepeatsFromOneSourceAreDistinctAndPairOneToOne) {
  XidCounter c;
  // Two Xid 13 lines in one second (reference lines 1 and 2), then NVML's two events.
  EXPECT_TRUE(c.record("0000:cb:00.0", 13, kT0, XidSource::kKernelLog));
  EXPECT_TRUE(c.record("0000:cb:00.0", 13, kT0, XidSource::kKernelLog));
  EXPECT_FALSE(c.record("0000:cb:00.0", 13, kT0 + 1, XidSource::kNvml));
  EXPECT_FALSE(c.record("0000:cb:00.0", 13, kT0 + 2, XidSource::kNvml));
  EXPECT_TRUE(c.record("0000:cb:00.0", 13, kT0 + 3, XidSource::kNvml));  // a third occurrence
  EXPECT_EQ(c.count("0000:cb:00.0", 13), 3u);
}

TEST(XidCounter, RecordsKernelEventsAndListsCounts) {
  XidCounter c;
  KernelEvent e;
  e.kind = EventKind::kXid;
  e.xid = 119;
  e.pci_bus_id = "0000:61:00.0";
  EXPECT_TRUE(c.record(e, kT0));
  e.time_ns = kT0 + 10 * kNsPerSec;
  EXPECT_TRUE(c.record(e, 0));
  KernelEvent aer;
  aer.kind = EventKind::kAer;
  EXPECT_FALSE(c.record(aer, kT0));
  auto all = c.counts();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].pci_bus_id, "0000:61:00.0");
  EXPECT_EQ(all[0].xid, 119);
  EXPECT_EQ(all[0].count, 2u);
  EXPECT_EQ(all[0].first_ns, kT0);
  EXPECT_EQ(all[0].last_ns, kT0 + 10 * kNsPerSec);
}

}  // namespace
}  // namespace cardiac::kmsg
