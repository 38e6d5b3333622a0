// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "baseline/baseline.h"
#include "baseline/capture_util.h"

namespace cardiac::baseline {
namespace {

using namespace std::string_literals;

constexpr const char* kNode01 = CARDIAC_FIXTURES_DIR "/hosts/debian-gpu-8x";
constexpr const char* kNode02 = CARDIAC_FIXTURES_DIR "/hosts/gpu-node-02-drift";

std::optional<std::string> value(const Baseline& b, std::string_view key) {
  const Fact* f = b.find(key);
  EXPECT_NE(f, nullptr) << key;
  return f == nullptr ? std::nullopt : f->value;
}

nvml::GpuSnapshot two_gpus() {
  nvml::GpuSnapshot s;
  s.available = true;
  s.system.driver_version = "550.54.15";
  s.system.cuda_driver_version = 12040;
  for (unsigned i = 0; i < 2; ++i) {
    nvml::GpuReading g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.pci_bus_id = i == 0 ? "0000:18:00.0" : "0000:2A:00.0";
    g.persistence_mode = true;
    g.ecc_enabled = true;
    g.mig_mode = false;
    g.power_limit_mw = 700000;
    g.clock_sm_max_mhz = 1980;
    g.clock_mem_max_mhz = 2619;
    g.app_clock_graphics_mhz = 1980;
    g.app_clock_memory_mhz = 2619;
    g.default_app_clock_graphics_mhz = 1980;
    g.default_app_clock_memory_mhz = 2619;
    g.pcie_gen_max = 5;
    g.pcie_width_max = 16;
    s.gpus.push_back(g);
  }
  return s;
}

TEST(BaselineCapture, CapturedTreeWithoutNvml) {
  RootFs fs(kNode01);
  Baseline b = capture(fs, nullptr, 1'700'000'000'000'000'000);
  EXPECT_EQ(b.schema, kSchema);
  EXPECT_EQ(b.hostname, "gpu-node-01");
  EXPECT_EQ(value(b, "driver"), "550.54.15");
  EXPECT_EQ(value(b, "kernel"), "6.18.44-fc-v1045");
  EXPECT_EQ(value(b, "os"), "debian 12");
  EXPECT_EQ(value(b, "library.nccl"), "2.21.5");
  EXPECT_EQ(value(b, "library.cudnn"), "9.1.0");
  EXPECT_EQ(value(b, "library.cublas"), "12.4.5.8");
  EXPECT_EQ(value(b, "library.nvidia-ml"), "550.54.15");
  EXPECT_EQ(value(b, "iommu.cmdline"), "intel_iommu=on iommu=pt");
  EXPECT_EQ(value(b, "iommu.units"), "2");
  EXPECT_EQ(value(b, "numa.nodes"), "2");
  EXPECT_EQ(value(b, "cmdline.pcie_aspm"), "off");
  EXPECT_EQ(b.find("cmdline.BOOT_IMAGE"), nullptr);  // names the machine, not its settings
  EXPECT_EQ(b.find("cmdline.root"), nullptr);
  EXPECT_EQ(value(b, "sysctl.vm.swappiness"), "60");
  EXPECT_EQ(value(b, "sysctl.kernel.numa_balancing"), "0");
  EXPECT_EQ(value(b, "sysctl.net.core.rmem_max"), "212992");
  EXPECT_EQ(value(b, "hugepages.total"), "0");
  EXPECT_EQ(value(b, "hugepages.size_kb"), "2048");
  EXPECT_EQ(value(b, "hugepages.transparent"), "madvise");
  EXPECT_EQ(value(b, "cpu.governor"), "performance");
  // GPUs from the PCI bus: what sysfs knows is read, what only NVML knows says why not.
  EXPECT_EQ(value(b, "gpu.count"), "8");
  EXPECT_EQ(value(b, "gpu.0.pcie"), "gen5x16");
  EXPECT_EQ(value(b, "gpu.7.numa_node"), "none");
  EXPECT_EQ(value(b, "cuda"), std::nullopt);
  ASSERT_NE(b.find("gpu.0.power_limit_w"), nullptr);
  EXPECT_EQ(b.find("gpu.0.power_limit_w")->value, std::nullopt);
  EXPECT_EQ(b.find("gpu.0.power_limit_w")->source, "NVML not asked (offline)");
  // Keys in order, numbers as numbers.
  for (std::size_t i = 1; i < b.facts.size(); ++i) {
    EXPECT_TRUE(key_less(b.facts[i - 1].key, b.facts[i].key)) << b.facts[i].key;
  }
}

// A strict weak order whose equal keys are equal strings: "gpu.01" and "gpu.1" are two keys
// (a set ordered by it once dropped one, and its difference went unreported).
TEST(BaselineKeys, OrderIsStrictAndTellsEveryKeyApart) {
  EXPECT_TRUE(key_less("gpu.2.x", "gpu.10.x"));
  EXPECT_FALSE(key_less("gpu.10.x", "gpu.2.x"));
  EXPECT_TRUE(key_less("gpu.01", "gpu.1") != key_less("gpu.1", "gpu.01"));
  const std::vector<std::string> keys = {"x.1a", "x.2", "x.10", "x.01", "x.1", "x", "x.a", "y"};
  for (const auto& a : keys) {
    EXPECT_FALSE(key_less(a, a)) << a;
    for (const auto& b : keys) {
      if (a != b) {
        EXPECT_NE(key_less(a, b), key_less(b, a)) << a << " " << b;
      }
      for (const auto& c : keys) {
        if (key_less(a, b) && key_less(b, c)) {
          EXPECT_TRUE(key_less(a, c)) << a << b << c;
        }
      }
    }
  }
}

TEST(BaselineCapture, NvmlFacts) {
  RootFs fs(kNode01);
  auto gpus = two_gpus();
  gpus.gpus[1].ecc_enabled.reset();  // NOT_SUPPORTED
  Baseline b = capture(fs, &gpus, 0);
  EXPECT_EQ(value(b, "cuda"), "12.4");
  EXPECT_EQ(value(b, "gpu.count"), "2");
  EXPECT_EQ(value(b, "gpu.0.name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(value(b, "gpu.0.persistence"), "on");
  EXPECT_EQ(value(b, "gpu.0.ecc"), "on");
  EXPECT_EQ(value(b, "gpu.1.ecc"), "not supported");
  EXPECT_EQ(value(b, "gpu.0.mig"), "off");
  EXPECT_EQ(value(b, "gpu.0.power_limit_w"), "700");
  EXPECT_EQ(value(b, "gpu.0.clocks_max"), "1980/2619");
  EXPECT_EQ(value(b, "gpu.0.app_clocks"), "1980/2619");
  EXPECT_EQ(value(b, "gpu.0.app_clocks_default"), "1980/2619");
  EXPECT_EQ(b.find("gpu.0.app_clocks")->family, "clocks");
  EXPECT_EQ(value(b, "gpu.1.pcie"), "gen5x16");
  EXPECT_EQ(value(b, "gpu.1.numa_node"), "none");  // matched to sysfs whatever the case
  EXPECT_EQ(b.find("gpu.2.name"), nullptr);
}

// Application clocks: graphics/memory MHz like the maximum clocks. A GPU without them says
// "not supported"; one whose driver refused the call could not be read (unset, with the code).
TEST(BaselineCapture, ApplicationClocks) {
  RootFs fs(kNode01);
  auto gpus = two_gpus();
  gpus.gpus[0].app_clock_graphics_mhz = 1755;
  gpus.gpus[1].app_clock_graphics_mhz.reset();
  gpus.gpus[1].app_clock_memory_mhz.reset();
  Baseline b = capture(fs, &gpus, 0);
  EXPECT_EQ(value(b, "gpu.0.app_clocks"), "1755/2619");
  EXPECT_EQ(value(b, "gpu.0.app_clocks_default"), "1980/2619");
  EXPECT_EQ(value(b, "gpu.1.app_clocks"), "not supported");
  EXPECT_EQ(b.find("gpu.1.app_clocks")->source, "nvml");

  gpus.gpus[1].call_errors["nvmlDeviceGetApplicationsClock"] = "NO_PERMISSION";
  b = capture(fs, &gpus, 0);
  ASSERT_NE(b.find("gpu.1.app_clocks"), nullptr);
  EXPECT_EQ(b.find("gpu.1.app_clocks")->value, std::nullopt);
  EXPECT_EQ(b.find("gpu.1.app_clocks")->source,
            "NVML: nvmlDeviceGetApplicationsClock returned NO_PERMISSION");
  EXPECT_EQ(value(b, "gpu.1.app_clocks_default"), "1980/2619");  // another call
  // Offline they are NVML's alone: unset, saying why.
  b = capture(fs, nullptr, 0);
  ASSERT_NE(b.find("gpu.3.app_clocks"), nullptr);
  EXPECT_EQ(b.find("gpu.3.app_clocks")->value, std::nullopt);
}

TEST(BaselineCapture, LibrariesFromTheCacheAndAbsent) {
  MemFs fs;
  fs.add_file("/opt/nccl/lib/libnccl.so.2.19.3", "");
  // The cache names the directory; nothing else would.
  fs.add_file("/etc/ld.so.cache",
              "glibc-ld.so.cache1.1\0\0libnccl.so.2\0/opt/nccl/lib/libnccl.so.2\0"s);
  fs.add_file("/usr/lib64/libcudnn.so.8", "");  // only the soname: the major version
  Baseline b = capture(fs, nullptr, 0);
  EXPECT_EQ(value(b, "library.nccl"), "2.19.3");
  EXPECT_EQ(value(b, "library.cudnn"), "8");
  EXPECT_EQ(value(b, "library.cublas"), "absent");
  EXPECT_EQ(value(b, "os"), std::nullopt);
  EXPECT_EQ(value(b, "driver"), std::nullopt);
  EXPECT_EQ(value(b, "cpu.governor"), std::nullopt);
}

TEST(BaselineCapture, LibraryVersionFromAFileName) {
  EXPECT_EQ(library_version("libnccl.so.2.21.5", "libnccl.so."), "2.21.5");
  EXPECT_EQ(library_version("libnccl.so.2", "libnccl.so."), "2");
  EXPECT_EQ(library_version("libnccl-net.so.1", "libnccl.so."), "");
  EXPECT_EQ(library_version("libnccl.so.2.21.5.bak", "libnccl.so."), "");
  EXPECT_EQ(library_version("libnccl.so.", "libnccl.so."), "");
}

TEST(BaselineCompare, TwoCapturedHostsDifferInExactlyWhatWasChanged) {
  RootFs one(kNode01);
  RootFs two(kNode02);
  Baseline base = capture(one, nullptr, 0);
  Baseline here = capture(two, nullptr, 0);
  auto diffs = compare(base, here);
  std::vector<std::tuple<std::string, std::string, Severity>> got;
  for (const auto& d : diffs) got.emplace_back(d.key, d.family, d.severity);
  std::vector<std::tuple<std::string, std::string, Severity>> want{
      {"cmdline.pcie_aspm", "kernel_params", Severity::kInfo},
      {"driver", "driver", Severity::kCritical},
      {"kernel", "kernel", Severity::kWarning},
      {"library.nccl", "library", Severity::kWarning},
      {"library.nvidia-ml", "library", Severity::kWarning},
  };
  EXPECT_EQ(got, want);
  ASSERT_EQ(diffs.size(), 5U);
  EXPECT_EQ(diffs[1].sentence().substr(0, 51),
            "driver 535.161.08 here, 550.54.15 in the baseline: ");
  EXPECT_NE(diffs[1].sentence().find("hang NCCL"), std::string::npos);
  EXPECT_EQ(diffs[0].sentence().substr(0, 66),
            "kernel parameter pcie_aspm not present here, off in the baseline: ");
  // The same host against itself: nothing.
  EXPECT_TRUE(compare(base, base).empty());
}

TEST(BaselineCompare, GpuFactsAndWhatCouldNotBeRead) {
  RootFs fs(kNode01);
  auto gpus = two_gpus();
  Baseline base = capture(fs, &gpus, 0);
  gpus.gpus[1].power_limit_mw = 500000;
  gpus.gpus[0].mig_mode = true;
  Baseline here = capture(fs, &gpus, 0);
  auto diffs = compare(base, here);
  ASSERT_EQ(diffs.size(), 2U);
  EXPECT_EQ(diffs[0].key, "gpu.0.mig");
  EXPECT_EQ(diffs[0].family, "gpu_mode");
  EXPECT_EQ(diffs[0].severity, Severity::kCritical);
  EXPECT_EQ(diffs[0].gpu, 0U);
  EXPECT_EQ(diffs[1].key, "gpu.1.power_limit_w");
  EXPECT_EQ(diffs[1].family, "power_limit");
  EXPECT_EQ(diffs[1].gpu, 1U);
  EXPECT_EQ(diffs[1].sentence().substr(0, 54),
            "GPU 1 power limit (W) 500 here, 700 in the baseline: a");

  // Without NVML here, every fact only NVML knows is stated as unread, never passed.
  Baseline offline = capture(fs, nullptr, 0);
  diffs = compare(base, offline);
  std::size_t unreadable = 0;
  for (const auto& d : diffs) {
    if (d.unreadable) {
      ++unreadable;
      EXPECT_NE(d.sentence().find("could not read"), std::string::npos);
    }
  }
  // cuda, and name, persistence, ecc, mig, power limit, maximum and application clocks and
  // their defaults of both GPUs.
  EXPECT_EQ(unreadable, 17U);
  // A baseline taken offline cannot speak for NVML's facts: they are not compared.
  for (const auto& d : compare(offline, base)) EXPECT_NE(d.key, "cuda");
}

TEST(BaselineCompare, ApplicationClocksBelowTheBaseline) {
  RootFs fs(kNode01);
  auto gpus = two_gpus();
  Baseline base = capture(fs, &gpus, 0);
  gpus.gpus[1].app_clock_graphics_mhz = 1755;
  Baseline here = capture(fs, &gpus, 0);
  auto diffs = compare(base, here);
  ASSERT_EQ(diffs.size(), 1U);
  EXPECT_EQ(diffs[0].key, "gpu.1.app_clocks");
  EXPECT_EQ(diffs[0].family, "clocks");
  EXPECT_EQ(diffs[0].severity, Severity::kWarning);
  EXPECT_EQ(diffs[0].gpu, 1U);
  EXPECT_EQ(diffs[0].sentence(),
            "GPU 1 application clocks (graphics/memory MHz) 1755/2619 here, 1980/2619 in the "
            "baseline: the GPU runs its kernels at other clocks than its peers: lower ones make "
            "it a straggler, and a synchronous job runs at the pace of its slowest GPU");
  // Another part or VBIOS: the defaults differ too, a fact of its own (info).
  gpus.gpus[1].default_app_clock_graphics_mhz = 1755;
  diffs = compare(base, capture(fs, &gpus, 0));
  ASSERT_EQ(diffs.size(), 2U);
  EXPECT_EQ(diffs[1].key, "gpu.1.app_clocks_default");
  EXPECT_EQ(diffs[1].severity, Severity::kInfo);
}

// A baseline captured before application clocks were read has no such facts for its GPUs:
// nothing to compare, so no difference, whatever this host has.
TEST(BaselineCompare, ABaselineWithoutApplicationClocksDoesNotCompareThem) {
  RootFs fs(kNode01);
  auto gpus = two_gpus();
  Baseline old = capture(fs, &gpus, 0);
  std::erase_if(old.facts, [](const Fact& f) { return f.key.find(".app_clocks") != f.key.npos; });
  ASSERT_NE(old.find("gpu.1.clocks_max"), nullptr);
  gpus.gpus[1].app_clock_graphics_mhz = 1755;
  EXPECT_TRUE(compare(old, capture(fs, &gpus, 0)).empty());
  // A GPU the baseline does not have at all is still the count's difference.
  gpus.gpus.push_back(gpus.gpus[1]);
  gpus.gpus[2].index = 2;
  auto diffs = compare(old, capture(fs, &gpus, 0));
  ASSERT_EQ(diffs.size(), 1U);
  EXPECT_EQ(diffs[0].key, "gpu.count");
}

TEST(BaselineCatalog, FamiliesOfKeys) {
  EXPECT_EQ(fact_info("gpu.12.pcie").family, "pcie");
  EXPECT_EQ(fact_info("gpu.12.pcie").gpu, 12U);
  EXPECT_EQ(fact_info("gpu.3.numa_node").family, "numa");
  EXPECT_EQ(fact_info("gpu.3.app_clocks").family, "clocks");
  EXPECT_EQ(fact_info("gpu.3.app_clocks").severity, Severity::kWarning);
  EXPECT_EQ(fact_info("gpu.3.app_clocks_default").family, "clocks");
  EXPECT_EQ(fact_info("library.nccl").severity, Severity::kWarning);
  EXPECT_EQ(fact_info("cmdline.nosmt").family, "kernel_params");
  EXPECT_EQ(fact_info("sysctl.kernel.numa_balancing").severity, Severity::kWarning);
  EXPECT_EQ(fact_info("something.else").family, "other");
  for (auto f : families()) EXPECT_FALSE(f.empty());
}

}  // namespace
}  // namespace cardiac::baseline
