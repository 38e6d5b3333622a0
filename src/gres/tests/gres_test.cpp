// SPDX-License-Identifier: Apache-2.0
#include "gres/gres.h"

#include <gtest/gtest.h>

#include "core/format.h"

namespace cardiac::gres {
namespace {

TEST(GpuType, HowSitesWriteIt) {
  EXPECT_EQ(slurm_gpu_type("NVIDIA H100 80GB HBM3"), "h100");
  EXPECT_EQ(slurm_gpu_type("NVIDIA H100 PCIe"), "h100");
  EXPECT_EQ(slurm_gpu_type("NVIDIA A100-SXM4-80GB"), "a100");
  EXPECT_EQ(slurm_gpu_type("Tesla V100-SXM2-32GB"), "v100");
  EXPECT_EQ(slurm_gpu_type("NVIDIA L40S"), "l40s");
  EXPECT_EQ(slurm_gpu_type("NVIDIA GeForce RTX 3080"), "rtx3080");
  EXPECT_EQ(slurm_gpu_type("NVIDIA RTX A6000"), "rtxa6000");
  EXPECT_EQ(slurm_gpu_type("NVIDIA GH200 480GB"), "gh200");
  EXPECT_EQ(slurm_gpu_type("Quadro RTX 8000"), "rtx8000");
  EXPECT_EQ(slurm_gpu_type("NVIDIA"), "");
  EXPECT_EQ(slurm_gpu_type(""), "");
}

TEST(CpuList, ParseAndFormat) {
  auto cpus = parse_cpu_list("0-3,8,10-11\n");
  ASSERT_TRUE(cpus);
  EXPECT_EQ(*cpus, (std::vector<unsigned>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(format_cpu_list(*cpus), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({5, 4, 4, 7}), "4-5,7");
  EXPECT_EQ(format_cpu_list({}), "");
  for (const char* bad : {"", "a", "3-1", "1-", "1,,2", "0-99999999"}) {
    EXPECT_FALSE(parse_cpu_list(bad)) << bad;
  }
}

// Two sockets of two cores with two threads each: cpu0-1 socket 0, cpu2-3 socket 1, cpu4-7
// their siblings (the usual Linux numbering).
MemFs two_socket_host() {
  MemFs fs;
  fs.add_file("/proc/sys/kernel/hostname", "node3.example.org\n");
  for (unsigned c = 0; c < 8; ++c) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu{}/topology/", c);
    fs.add_file(dir + "physical_package_id", fmt::format("{}\n", (c / 2) % 2));
    fs.add_file(dir + "core_id", fmt::format("{}\n", c % 2 == 0 ? 0 : 4));  // ids need not be dense
  }
  fs.add_file("/sys/devices/system/cpu/cpufreq/boost", "1\n");
  fs.add_file("/sys/bus/pci/devices/0000:3b:00.0/local_cpulist", "0-1,4-5\n");
  fs.add_file("/sys/bus/pci/devices/0000:af:00.0/local_cpulist", "2-3,6-7\n");
  return fs;
}

nvml::GpuReading gpu(unsigned index, std::string bus, unsigned minor, std::string name) {
  nvml::GpuReading g;
  g.index = index;
  g.pci_bus_id = std::move(bus);
  g.minor_number = minor;
  g.name = std::move(name);
  return g;
}

nvml::GpuSnapshot two_gpus() {
  nvml::GpuSnapshot s;
  s.available = true;
  s.system.driver_version = "550.54.15";
  // NVML's index order is not the minor-number order here: the lines follow the minors.
  s.gpus.push_back(gpu(0, "0000:af:00.0", 1, "NVIDIA A100-SXM4-80GB"));
  s.gpus.push_back(gpu(1, "0000:3b:00.0", 0, "NVIDIA A100-SXM4-80GB"));
  return s;
}

void link(nvml::GpuReading& g, unsigned n, std::string remote, bool active = true) {
  nvml::NvLink l;
  l.link = n;
  l.active = active;
  l.remote_pci_bus_id = std::move(remote);
  g.nvlinks.push_back(l);
}

TEST(Build, LinesInMinorOrderWithSlurmCoreIndices) {
  MemFs fs = two_socket_host();
  auto s = two_gpus();
  for (unsigned n = 0; n < 3; ++n) link(s.gpus[0], n, "0000:3b:00.0");
  for (unsigned n = 0; n < 3; ++n) link(s.gpus[1], n, "0000:af:00.0");
  link(s.gpus[1], 3, "", false);  // inactive: not counted, not asked
  auto conf = build_gres(s, fs, {});
  ASSERT_TRUE(conf) << conf.error().what();
  EXPECT_EQ(conf->node_line(), "NodeName=node3 Gres=gpu:a100:2");
  EXPECT_EQ(conf->notes, std::vector<std::string>{});
  const std::string text = render_gres_conf(*conf);
  EXPECT_NE(text.find("Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-1 Links=-1,3\n"
                      "Name=gpu Type=a100 File=/dev/nvidia1 Cores=2-3 Links=3,-1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# slurm.conf: NodeName=node3 Gres=gpu:a100:2\n"), std::string::npos);
  auto j = to_json(*conf);
  EXPECT_EQ(j["schema"], "cardiac.slurm-gres/v1");
  EXPECT_EQ(j["gpus"][0]["cpus"], "0-1,4-5");
  EXPECT_EQ(j["gpus"][0]["cores"], "0-1");
  EXPECT_EQ(j["gpus"][1]["links"], nlohmann::json({3, -1}));
}

TEST(Build, TypeAndNodeNameOverrides) {
  MemFs fs = two_socket_host();
  auto conf = build_gres(two_gpus(), fs, {"a100_80g", "gpu-a"});
  ASSERT_TRUE(conf);
  EXPECT_EQ(conf->node_line(), "NodeName=gpu-a Gres=gpu:a100_80g:2");
}

TEST(Build, MixedTypesCountEach) {
  MemFs fs = two_socket_host();
  auto s = two_gpus();
  s.gpus[0].name = "NVIDIA L40S";
  auto conf = build_gres(s, fs, {});
  ASSERT_TRUE(conf);
  EXPECT_EQ(conf->node_line(), "NodeName=node3 Gres=gpu:a100:1,gpu:l40s:1");
}

TEST(Build, LinksToSwitchesOnlyAreLeftOutWithANote) {
  MemFs fs = two_socket_host();
  auto s = two_gpus();
  link(s.gpus[0], 0, "0000:05:00.0");
  link(s.gpus[1], 0, "0000:06:00.0");
  auto conf = build_gres(s, fs, {});
  ASSERT_TRUE(conf);
  EXPECT_FALSE(conf->gpus[0].links);
  ASSERT_EQ(conf->notes.size(), 1u);
  EXPECT_NE(conf->notes[0].find("0000:05:00.0, 0000:06:00.0"), std::string::npos);
  const std::string text = render_gres_conf(*conf);
  EXPECT_NE(text.find("\nName=gpu Type=a100 File=/dev/nvidia0 Cores=0-1\n"
                      "Name=gpu Type=a100 File=/dev/nvidia1 Cores=2-3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# Note: Links= left out"), std::string::npos) << text;
}

TEST(Build, UnknownLinkEndsAreLeftOutWithANote) {
  MemFs fs = two_socket_host();
  auto s = two_gpus();
  link(s.gpus[0], 0, "");
  auto conf = build_gres(s, fs, {});
  ASSERT_TRUE(conf);
  ASSERT_EQ(conf->notes.size(), 1u);
  EXPECT_NE(conf->notes[0].find("GPU 0"), std::string::npos) << conf->notes[0];
}

TEST(Build, MissingCpuListLeavesCoresOutForThatGpu) {
  MemFs fs;
  fs.add_file("/proc/sys/kernel/hostname", "n\n");
  fs.add_file("/sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
  fs.add_file("/sys/devices/system/cpu/cpu0/topology/core_id", "0\n");
  fs.add_file("/sys/bus/pci/devices/0000:3b:00.0/local_cpulist", "0\n");
  auto conf = build_gres(two_gpus(), fs, {});
  ASSERT_TRUE(conf);
  EXPECT_EQ(conf->gpus[0].cores, "0");
  EXPECT_EQ(conf->gpus[1].cores, "");
  ASSERT_EQ(conf->notes.size(), 1u);
  EXPECT_NE(conf->notes[0].find("/sys/bus/pci/devices/0000:af:00.0/local_cpulist"),
            std::string::npos)
      << conf->notes[0];
}

TEST(Build, RefusesWhatWouldClaimFewerGpus) {
  MemFs fs = two_socket_host();
  nvml::GpuSnapshot none;
  none.available = false;
  none.error_kind = "library_not_found";
  none.error = "libnvidia-ml.so.1: cannot open shared object file";
  auto r = build_gres(none, fs, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("library_not_found"), std::string::npos);

  nvml::GpuSnapshot zero;
  zero.available = true;
  r = build_gres(zero, fs, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("lists no GPU"), std::string::npos);

  auto lost = two_gpus();
  lost.gpus[1].minor_number.reset();
  lost.gpus[1].health = nvml::DeviceHealth::kLost;
  lost.gpus[1].health_detail = "nvmlDeviceGetUUID returned GPU_IS_LOST";
  r = build_gres(lost, fs, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("GPU 1 (0000:3b:00.0)"), std::string::npos) << r.error().what();
  EXPECT_NE(r.error().what().find("GPU_IS_LOST"), std::string::npos) << r.error().what();

  auto twins = two_gpus();
  twins.gpus[0].minor_number = 0;
  r = build_gres(twins, fs, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("both have minor number 0"), std::string::npos);

  auto nameless = two_gpus();
  nameless.gpus[0].name = "";
  r = build_gres(nameless, fs, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("--type"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::gres
