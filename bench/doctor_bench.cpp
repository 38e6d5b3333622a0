// SPDX-License-Identifier: Apache-2.0
// `cardiac doctor` costs: kernel-log parsing throughput, and a whole offline run on a captured
// host (gather, every check, JSON) without the sampling window.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/clock.h"
#include "doctor/checks/checks.h"
#include "doctor/kernel_log.h"
#include "doctor/live/gather.h"
#include "doctor/render/render.h"

namespace {

// Lines in the formats the driver and kernel write, with the noise a real log carries around
// them: roughly one GPU line in eight, like a busy node's dmesg.
const std::vector<std::string>& sample_lines() {
  static const std::vector<std::string> lines = {
      "[  219.470994] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An "
      "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
      "physAddr 0x7fffa8860 partition 7, subpartition 1.",
      "[  220.000100] e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow "
      "Control: Rx/Tx",
      "[  220.100200] audit: type=1400 audit(1700000000.123:42): apparmor=\"STATUS\" "
      "operation=\"profile_load\" profile=\"unconfined\" name=\"docker-default\"",
      "[  221.000300] IPv6: ADDRCONF(NETDEV_CHANGE): veth1a2b3c: link becomes ready",
      "[  221.500400] EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Quota "
      "mode: none.",
      "[  222.000500] pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Data Link "
      "Layer, (Transmitter ID)",
      "[  222.100600] docker0: port 1(veth1a2b3c) entered forwarding state",
      "[  223.000700] systemd[1]: Started Session 12 of user ubuntu.",
      "[  224.000800] NVRM: Xid (PCI:0000:cb:00): 13, pid=1797828, name=pt_main_thread, Graphics "
      "SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
      "[  225.000900] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
      "[  226.001000] perf: interrupt took too long (2503 > 2500), lowering "
      "kernel.perf_event_max_sample_rate to 79750",
      "[  227.001100] nvme nvme0: I/O 123 QID 4 timeout, completion polled",
      "[  228.001200] bond0: (slave eth1): link status definitely up, 25000 Mbps full duplex",
      "[  229.001300] INFO: task nvidia-smi:48213 blocked for more than 120 seconds.",
      "[  230.001400] TCP: request_sock_TCP: Possible SYN flooding on port 8080. Sending "
      "cookies.",
      "[  231.001500] kauditd_printk_skb: 12 callbacks suppressed",
  };
  return lines;
}

std::string make_log(std::size_t n) {
  std::string text;
  const auto& lines = sample_lines();
  for (std::size_t i = 0; i < n; ++i) {
    text += lines[i % lines.size()];
    text += '\n';
  }
  return text;
}

void BM_ParseKernelLog(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::string text = make_log(n);
  std::size_t events = 0;
  for (auto _ : state) {
    auto log = cardiac::doctor::parse_kernel_log(text, {});
    events = log.events.size();
    benchmark::DoNotOptimize(log);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_ParseKernelLog)->Arg(100000)->Unit(benchmark::kMillisecond);

// Everything `cardiac doctor --offline --root <iowait fixture> --kmsg <log> --json` does
// after argument parsing: read both snapshots and the log, run every check, render JSON.
void BM_DoctorOfflineRun(benchmark::State& state) {
  std::string log_path = "/tmp/cardiac-doctor-bench.log";
  {
    std::ofstream out(log_path, std::ios::trunc);
    out << make_log(static_cast<std::size_t>(state.range(0)));
  }
  cardiac::doctor::GatherOptions o;
  o.offline = true;
  o.root = std::string(CARDIAC_SOURCE_DIR) + "/tests/fixtures/hosts/iowait-bottleneck";
  o.kmsg_file = log_path;
  o.year_hint = 2024;
  std::size_t findings = 0;
  for (auto _ : state) {
    std::vector<std::string> skipped;
    auto in = cardiac::doctor::gather(o, cardiac::SystemClock::instance(), {}, {}, skipped);
    if (!in) {
      state.SkipWithError(in.error().what().c_str());
      break;
    }
    auto report = cardiac::doctor::diagnose(*in);
    std::string json = cardiac::doctor::to_json(report).dump(2);
    findings = report.findings.size();
    benchmark::DoNotOptimize(json);
  }
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_DoctorOfflineRun)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
