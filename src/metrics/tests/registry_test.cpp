// SPDX-License-Identifier: Apache-2.0
// The registry's own rules: names, types, units, getters, dcgm names and the docs page.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cardiac::metrics {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

TEST(Registry, NamesAreValidUniqueAndNamespaced) {
  const std::regex name_re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  std::set<std::string_view> seen;
  for (const auto& m : metric_registry()) {
    SCOPED_TRACE(std::string(m.name));
    EXPECT_TRUE(std::regex_match(std::string(m.name), name_re));
    EXPECT_TRUE(m.name.starts_with("cardiac_"));
    EXPECT_TRUE(seen.insert(m.name).second) << "duplicate";
    EXPECT_FALSE(m.help.empty());
    EXPECT_FALSE(m.source.empty());
    if (!m.dcgm.name.empty()) {
      EXPECT_TRUE(m.dcgm.name.starts_with("DCGM_FI_"));
      EXPECT_TRUE(seen.insert(m.dcgm.name).second) << "duplicate dcgm name";
    }
  }
}

TEST(Registry, CountersEndInTotalAndGaugesDoNot) {
  for (const auto& m : metric_registry()) {
    SCOPED_TRACE(std::string(m.name));
    EXPECT_EQ(m.type == MetricType::kCounter, ends_with(m.name, "_total"));
  }
}

TEST(Registry, BaseUnitsAppearInTheName) {
  for (const auto& m : metric_registry()) {
    SCOPED_TRACE(std::string(m.name));
    for (std::string_view u :
         {"bytes", "celsius", "watts", "joules", "hertz", "seconds", "ratio"}) {
      if (m.unit != u) continue;
      EXPECT_NE(m.name.find(std::string("_") + std::string(u)), std::string_view::npos);
    }
  }
}

TEST(Registry, ExactlyTheScopesGetterIsSet) {
  for (const auto& m : metric_registry()) {
    SCOPED_TRACE(std::string(m.name));
    int set = (m.report != nullptr) + (m.gpu != nullptr) + (m.fs != nullptr) + (m.nic != nullptr) +
              (m.agent != nullptr) + (m.queue != nullptr);
    switch (m.scope) {
      case Scope::kReport:
        EXPECT_TRUE(m.report && set == 1);
        break;
      case Scope::kGpu:
        EXPECT_TRUE(m.gpu && set == 1);
        break;
      case Scope::kFilesystem:
        EXPECT_TRUE(m.fs && set == 1);
        break;
      case Scope::kNic:
        EXPECT_TRUE(m.nic && set == 1);
        break;
      case Scope::kAgent:
        EXPECT_TRUE(m.agent && set == 1);
        break;
      case Scope::kQueue:
        EXPECT_TRUE(m.queue && set == 1);
        break;
      case Scope::kClockEvent:
      case Scope::kXidCount:
      case Scope::kFaultCount:
      case Scope::kLastXid:
      case Scope::kGpuJob:
      case Scope::kQueueState:
      case Scope::kQueueUser:
      case Scope::kQueueWait:
      case Scope::kNodeConfig:
      case Scope::kGpuConfig:
        EXPECT_EQ(set, 0);
        break;
    }
  }
}

TEST(Registry, HasTheDcgmExporterDefaultsWeCanRead) {
  std::set<std::string_view> dcgm;
  for (const auto& m : metric_registry()) dcgm.insert(m.dcgm.name);
  for (std::string_view n :
       {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_RETIRED_SBE",
        "DCGM_FI_DEV_RETIRED_DBE"}) {
    EXPECT_TRUE(dcgm.count(n)) << n;
  }
  // Not read by cardiac, so not claimed.
  EXPECT_FALSE(dcgm.count("DCGM_FI_DEV_ENC_UTIL"));
  EXPECT_FALSE(dcgm.count("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"));
}

// gpu_fields.def lists every optional scalar of GpuReading; each one is exported or left out
// here on purpose, so a new field cannot be forgotten silently.
TEST(Registry, EveryGpuFieldIsExportedOrDeliberatelyNot) {
  const std::set<std::string> not_exported = {
      "pci_device_id", "pci_subsystem_id",  // identity, not a measurement
      "minor_number",                       // the dcgm "device" label
      "temperature_memory_max",             // thresholds without a dcgm counterpart; later
      "temperature_gpu_max", "ecc_pending_enabled",
      "recovery_action",  // read by the queue's auto-unfence; an enum, not a measurement
      // configuration, compared by `cardiac doctor --baseline` (drift.clocks)
      "app_clock_graphics_mhz", "app_clock_memory_mhz", "default_app_clock_graphics_mhz",
      "default_app_clock_memory_mhz"};
  std::set<std::string> sources;
  for (const auto& m : metric_registry()) {
    std::string s(m.source);
    if (s.starts_with("GpuReading.")) sources.insert(s.substr(11, s.find(' ') - 11));
  }
#define CARDIAC_GPU_FIELD(member, ...) \
  EXPECT_TRUE(sources.count(#member) + not_exported.count(#member) == 1) << #member;
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
}

// The table of docs/metrics.md is the generated one, row for row and in order: a field added to
// gpu_fields.def, or a row moved, shows here until the page is regenerated.
TEST(Registry, TheMetricsPageTableIsTheGeneratedOne) {
  auto rows = [](std::istream& in) {
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("| `")) out.push_back(line);
    }
    return out;
  };
  std::ifstream page(std::string(CARDIAC_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_TRUE(page) << "docs/metrics.md";
  std::istringstream generated(metrics_reference_markdown());
  EXPECT_EQ(rows(page), rows(generated));
}

TEST(Registry, MarkdownListsEveryEntry) {
  std::string md = metrics_reference_markdown();
  for (const auto& m : metric_registry()) {
    EXPECT_NE(md.find("| `" + std::string(m.name) + "` |"), std::string::npos) << m.name;
    if (!m.dcgm.name.empty()) {
      EXPECT_NE(md.find("`" + std::string(m.dcgm.name) + "`"), std::string::npos) << m.dcgm.name;
    }
  }
  // One table row per entry: header, separator, rows.
  std::size_t rows = 0;
  for (std::size_t p = md.find("\n| `"); p != std::string::npos; p = md.find("\n| `", p + 1))
    ++rows;
  EXPECT_EQ(rows, metric_registry().size());
}

}  // namespace
}  // namespace cardiac::metrics
