// SPDX-License-Identifier: Apache-2.0
// The doctor's view of health's Xid catalog.
#include "doctor/checks/xid_catalog.h"

#include <vector>

namespace cardiac::doctor {
namespace {

XidInfo with_category(const health::XidInfo& h) {
  XidInfo x;
  static_cast<health::XidInfo&>(x) = h;
  x.category = h.hardware ? Category::kHardware : Category::kDriver;
  return x;
}

}  // namespace

XidInfo lookup_xid(int code) {
  return with_category(health::lookup_xid(code));
}

std::span<const XidInfo> xid_catalog() {
  static const std::vector<XidInfo> kTable = [] {
    std::vector<XidInfo> out;
    for (const auto& h : health::xid_catalog()) out.push_back(with_category(h));
    return out;
  }();
  return kTable;
}

}  // namespace cardiac::doctor
