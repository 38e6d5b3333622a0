// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "telemetry/event_worker.h"

namespace cardiac::telemetry {
namespace {

TEST(GpuEventKindName, EveryKindReadsBackAndUnknownNamesAreOther) {
  for (auto k : {GpuEventKind::kXid, GpuEventKind::kDoubleBitEcc, GpuEventKind::kSingleBitEcc,
                 GpuEventKind::kOther}) {
    EXPECT_EQ(parse_gpu_event_kind(gpu_event_kind_name(k)), k) << gpu_event_kind_name(k);
  }
  EXPECT_EQ(gpu_event_kind_name(GpuEventKind::kXid), "xid");
  EXPECT_EQ(gpu_event_kind_name(GpuEventKind::kDoubleBitEcc), "dbe");
  EXPECT_EQ(parse_gpu_event_kind("nonsense"), GpuEventKind::kOther);
}

}  // namespace
}  // namespace cardiac::telemetry
