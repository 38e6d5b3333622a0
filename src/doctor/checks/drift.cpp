// SPDX-License-Identifier: Apache-2.0
// Configuration drift: this host's facts (src/baseline, read through input.fs and the last GPU
// sample) against the baseline file, one `drift.<family>` finding per difference, and one per
// family for the facts this host could not read: a fact not read is never a pass.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "core/format.h"
#include "doctor/checks/checks.h"
#include "doctor/checks/util.h"
#include "doctor/gpu_map.h"

namespace cardiac::doctor {
namespace {

using check_util::evidence;
using check_util::make_finding;

// What to do first about a difference in each family; the steps every family shares follow.
std::string first_action(std::string_view family) {
  static const std::map<std::string_view, std::string_view> kFirst{
      {"driver",
       "Install the baseline's driver version on this node (or move the whole kind to one "
       "version); a driver change needs the GPUs idle and usually a reboot"},
      {"cuda", "The CUDA driver version follows the driver: install the baseline's driver"},
      {"kernel",
       "Boot the baseline's kernel (`grub-reboot`, or pin it in your image) and check that the "
       "NVIDIA module is built for it (`dkms status`)"},
      {"os", "Reinstall or upgrade the node from the image its peers run"},
      {"library",
       "Install the baseline's library version (`dpkg -l | grep -e nccl -e cudnn -e cublas`, "
       "`ldconfig -p`), or make jobs bring their own in a container"},
      {"gpu",
       "Compare `nvidia-smi -L` with a peer's: a card swapped for another model, or missing"},
      {"gpu_mode",
       "Set the mode the baseline has: `nvidia-smi -i N -pm 1` (persistence), `nvidia-smi -i N "
       "-e 1` (ECC, after a GPU reset), `nvidia-smi -i N -mig 0|1` (MIG, after a GPU reset)"},
      {"power_limit", "Set the baseline's limit: `nvidia-smi -i N -pl WATTS`"},
      {"clocks",
       "Compare `nvidia-smi -q -d CLOCK` and the VBIOS (`nvidia-smi -q | grep VBIOS`) with a peer"},
      {"pcie",
       "Check the slot, riser and BIOS link settings: `lspci -vv -s BUS | grep -e LnkCap -e "
       "LnkSta`; reseat the card in a maintenance window"},
      {"numa",
       "Compare the BIOS NUMA settings (NPS, sub-NUMA clustering) and the slot with a peer: "
       "`nvidia-smi topo -m`, `numactl -H`"},
      {"iommu",
       "Boot with the baseline's IOMMU parameters (`/etc/default/grub`, then `update-grub`) and "
       "check `dmesg | grep -i -e DMAR -e IOMMU`"},
      {"kernel_params",
       "Set the baseline's value: boot parameters in `/etc/default/grub` (then `update-grub`), "
       "sysctls in `/etc/sysctl.d/` (then `sysctl --system`)"},
      {"hugepages",
       "Set the baseline's huge pages: `vm.nr_hugepages` in `/etc/sysctl.d/`, "
       "`transparent_hugepage=` on the kernel command line"},
      {"cpu_governor", "Set the baseline's governor: `cpupower frequency-set -g performance`"},
  };
  auto it = kFirst.find(family);
  return it == kFirst.end() ? std::string("Make this node match the baseline")
                            : std::string(it->second);
}

std::vector<std::string> actions(std::string_view family, const std::string& file) {
  return {first_action(family),
          "Until it matches, keep the node out of multi-node jobs (in Slurm: `scontrol update "
          "nodename=NODE state=drain reason=config-drift`)",
          fmt::format("Check again: `cardiac doctor --baseline {}`", file),
          "If the baseline itself is out of date, capture a new one on a node known to be good: "
          "`cardiac baseline capture -o FILE`"};
}

GpuRef gpu_of(const baseline::Difference& d, const GpuMap& map) {
  if (!d.gpu) return {};
  GpuRef g = map.by_index(*d.gpu);
  g.index = d.gpu;
  return g;
}

}  // namespace

void check_drift(const DoctorInput& in, std::vector<Finding>& out) {
  if (!in.baseline || !in.fs) return;
  const baseline::Baseline here = baseline::capture(*in.fs, in.last_gpus(), in.now);
  const GpuMap map(in);
  const std::string file = in.baseline_file.empty() ? "FILE" : in.baseline_file;
  const std::string from = in.baseline->hostname.empty()
                               ? std::string("the baseline")
                               : fmt::format("the baseline (taken on {})", in.baseline->hostname);

  // Facts not read here, gathered per family: one finding says what could not be compared.
  std::map<std::string, std::vector<const baseline::Difference*>> unread;
  const auto diffs = baseline::compare(*in.baseline, here);
  for (const auto& d : diffs) {
    if (d.unreadable) {
      unread[d.family].push_back(&d);
      continue;
    }
    std::string title =
        fmt::format("{} differs from {}: {} here, {} there", d.label, from,
                    d.here.value_or("not present"), d.expected.value_or("not present"));
    // Labels start in lower case ("driver", "kernel parameter …"): a title starts a sentence.
    if (!title.empty() && title[0] >= 'a' && title[0] <= 'z')
      title[0] = static_cast<char>(title[0] - 'a' + 'A');
    Finding f =
        make_finding("drift." + d.family, Category::kConfiguration, d.severity, Confidence::kHigh,
                     gpu_of(d, map), std::move(title), d.sentence() + ".");
    f.evidence.push_back(
        evidence("reading", fmt::format("{} = {} here", d.key, d.here.value_or("(not present)")),
                 in.now, d.source.empty() ? std::string("this host") : d.source));
    f.evidence.push_back(evidence(
        "reading", fmt::format("{} = {} in {}", d.key, d.expected.value_or("(not present)"), from),
        std::nullopt, file));
    f.actions = actions(d.family, file);
    out.push_back(std::move(f));
  }
  for (const auto& [family, list] : unread) {
    Severity worst = Severity::kInfo;
    for (const auto* d : list) worst = std::max(worst, d->severity);
    // Not read is not known to differ: a warning at most, so it is seen but not alarming.
    worst = std::min(worst, Severity::kWarning);
    std::string keys;
    for (const auto* d : list) keys += (keys.empty() ? "" : ", ") + d->key;
    Finding f = make_finding(
        "drift." + family, Category::kConfiguration, worst, Confidence::kLow, {},
        fmt::format("Could not compare {} with {}: {} not read here", family, from, keys),
        fmt::format("The baseline has {} fact(s) of the {} family that this host could not "
                    "read, so they were not compared: {}. A fact not read is not a pass.",
                    list.size(), family, list.front()->sentence()));
    for (const auto* d : list) {
      f.evidence.push_back(evidence("reading",
                                    fmt::format("{}: not read here ({}); {} in the baseline",
                                                d->key, d->source, d->expected.value_or("?")),
                                    in.now, "this host"));
    }
    f.actions = {
        "Run the doctor where the fact can be read: live with NVML for GPU facts (no "
        "--offline), as root for files only root may read",
        fmt::format("Check again: `cardiac doctor --baseline {}`", file)};
    out.push_back(std::move(f));
  }
}

}  // namespace cardiac::doctor
