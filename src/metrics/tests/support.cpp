// SPDX-License-Identifier: Apache-2.0
// A hand-built status report shared by the metrics tests.
#include "metrics/tests/support.h"

namespace cardiac::metrics::testing {

health::StatusReport two_gpu_report() {
  nvml::GpuSnapshot s;
  s.available = true;
  s.system.driver_version = "550.54.15";
  nvml::GpuReading a;
  a.index = 0;
  a.name = "NVIDIA H100 80GB HBM3";
  a.uuid = "GPU-11111111-2222-3333-4444-555555555555";
  a.pci_bus_id = "0000:18:00.0";
  a.minor_number = 0;
  a.sample_duration_us = 1500;
  a.utilization_gpu = 87;
  a.memory_total = 85899345920;
  a.memory_used = 1048576 * 1024;
  a.memory_free = 85899345920 - 1048576 * 1024;
  a.temperature = 45;
  a.temperature_slowdown = 87;
  a.temperature_shutdown = 92;
  a.power_usage_mw = 312500;
  a.energy_mj = 123456789;
  a.clock_sm_mhz = 1980;
  a.clock_mem_mhz = 2619;
  a.clock_event_reasons = 0x40;  // HW thermal slowdown (the verdict may warn; fine here)
  a.ecc_volatile_corrected = 3;
  a.ecc_volatile_uncorrected = 0;
  a.pcie_gen_current = 5;
  a.pcie_gen_max = 5;
  a.pcie_width_current = 16;
  a.pcie_width_max = 16;
  a.pcie_replay_counter = 0;
  a.remapped_rows_failure = false;
  // fan_speed, memory_reserved, pstate... left absent on purpose.
  // Two processes of one Slurm job, one of a cardiac queue job, one of no job.
  a.processes_supported = true;
  for (std::uint32_t pid : {100u, 101u, 102u, 103u}) {
    nvml::GpuProcess p;
    p.pid = pid;
    p.type = "compute";
    if (pid < 102) {
      p.job = "123";
      p.job_source = "slurm";
      p.job_from = "cgroup";
    } else if (pid == 102) {
      p.job = "7";
      p.job_source = "cardiac";
      p.job_from = "environ";
    }
    a.processes.push_back(p);
  }
  s.gpus.push_back(a);

  nvml::GpuReading b;
  b.index = 1;
  b.health = nvml::DeviceHealth::kLost;
  b.health_detail = "nvmlDeviceGetUUID returned GPU_IS_LOST";
  b.pci_bus_id = "0000:2a:00.0";
  s.gpus.push_back(b);

  host::HostSnapshot h;
  h.load = host::LoadAvg{1.5, 1.25, 1.0, 2, 300};
  host::CpuStat cpu;
  cpu.cores = {{0, {}}, {1, {}}};
  h.cpu = cpu;
  host::MemInfo mem;
  mem.total = 1024ull * 1024 * 1024 * 512;
  mem.available = 1024ull * 1024 * 1024 * 400;
  h.memory = mem;  // no swap keys: swap metrics must be absent
  host::FilesystemUsage fs;
  fs.mount_point = "/data \"x\"";
  fs.device = "/dev/nvme0n1p2";
  fs.fs_type = "ext4";
  fs.total = 1000;
  fs.free = 400;
  fs.available = 300;
  h.filesystems.push_back(fs);
  host::NetDevice nic;
  nic.name = "eth0";
  nic.rx_bytes = 1000;
  nic.tx_bytes = 2000;
  nic.speed_mbps = 100000;
  nic.operstate = "up";
  h.nics.push_back(nic);
  return health::build_report(std::move(s), std::move(h), nullptr);
}

ExpositionInput full_input(const health::StatusReport& r) {
  ExpositionInput in;
  in.report = &r;
  in.xid_counts[{"0000:18:00.0", 79}] = 2;
  in.xid_counts[{"00000000:2A:00.0", 48}] = 1;  // dcgm form: must match GPU 1 anyway
  in.last_xid["0000:18:00.0"] = 79;
  in.agent.sample_duration_seconds = 0.25;
  in.agent.samples_total = 42;
  in.agent.missed_samples_total = 0;
  in.agent.worker_restarts_total = 1;
  in.agent.last_sample_timestamp_seconds = 1764694800.5;
  return in;
}

std::shared_ptr<const ConfigLabels> two_gpu_config() {
  baseline::Baseline b;
  auto add = [&](std::string key, std::optional<std::string> value) {
    b.facts.push_back(baseline::make_fact(std::move(key), std::move(value), "test"));
  };
  add("driver", "550.54.15");
  add("cuda", "12.4");
  add("kernel", "6.1.0-18-amd64");
  add("os", "debian 12");
  add("library.nccl", "2.21.5");
  add("library.cudnn", "absent");
  add("cpu.governor", std::nullopt);  // not read: no label
  add("sysctl.vm.swappiness", "60");  // not one of the labels
  for (unsigned i = 0; i < 2; ++i) {
    const std::string p = "gpu." + std::to_string(i) + ".";
    add(p + "persistence", "on");
    add(p + "ecc", "on");
    add(p + "mig", "off");
    add(p + "power_limit_w", i == 0 ? "700" : "500");
    add(p + "pcie", "gen5x16");
    add(p + "name", "NVIDIA H100 80GB HBM3");  // already the model label
  }
  return std::make_shared<const ConfigLabels>(config_labels(b));
}

}  // namespace cardiac::metrics::testing
