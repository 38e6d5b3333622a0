// SPDX-License-Identifier: Apache-2.0
// Configuration drift: this host's facts (src/baseline, read through input.fs and the last GPU
// sample) against the baseline file, one `drift.<family>` finding per difference, and one per
// family for the facts this host could not read: a fact not read is never a pass. Application
// clocks (drift.clocks) also say which side is slower and whether this GPU is below its default.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baseline/baseline.h"
#include "core/format.h"
#include "core/strings.h"
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

// "1980/2619" → {1980, 2619}: the graphics/memory MHz of an application-clocks fact.
std::optional<std::pair<unsigned, unsigned>> mhz_pair(const std::optional<std::string>& v) {
  if (!v) return std::nullopt;
  auto slash = v->find('/');
  if (slash == std::string::npos) return std::nullopt;
  auto g = parse_u64(std::string_view(*v).substr(0, slash));
  auto m = parse_u64(std::string_view(*v).substr(slash + 1));
  if (!g || !m) return std::nullopt;
  return std::pair{static_cast<unsigned>(*g), static_cast<unsigned>(*m)};
}

bool is_app_clocks(const baseline::Difference& d) {
  return d.gpu && d.key == fmt::format("gpu.{}.app_clocks", *d.gpu);
}

// This host's default application clocks of the difference's GPU, or nullptr.
const baseline::Fact* app_clocks_default(const baseline::Difference& d,
                                         const baseline::Baseline& here) {
  return d.gpu ? here.find(fmt::format("gpu.{}.app_clocks_default", *d.gpu)) : nullptr;
}

// What the numbers of an application-clocks difference say beyond the catalog's risk: which
// side is slower, and whether this node's clocks were set below the GPU's own default
// (`nvidia-smi -ac`) rather than the part being another.
std::string app_clocks_note(const baseline::Difference& d, const baseline::Baseline& here) {
  auto mine = mhz_pair(d.here);
  auto theirs = mhz_pair(d.expected);
  if (!mine || !theirs) return {};
  std::string note;
  if (mine->first < theirs->first || mine->second < theirs->second) {
    note = " This node's GPU runs slower than the baseline's.";
  } else {
    note =
        " This node's GPU runs faster than the baseline's: the nodes at the baseline's clocks are "
        "the stragglers, unless they were lowered on purpose (to cap power).";
  }
  const baseline::Fact* def = app_clocks_default(d, here);
  auto deflt = def != nullptr ? mhz_pair(def->value) : std::nullopt;
  if (deflt && (mine->first < deflt->first || mine->second < deflt->second)) {
    note += fmt::format(
        " Its application clocks are below its own default ({}/{}): they were lowered on this "
        "node.",
        deflt->first, deflt->second);
  }
  return note;
}

std::vector<std::string> actions(const baseline::Difference& d, const baseline::Baseline& here,
                                 const std::string& file) {
  std::string first = first_action(d.family);
  if (auto want = is_app_clocks(d) ? mhz_pair(d.expected) : std::nullopt) {
    // nvidia-smi takes memory first.
    first = fmt::format(
        "Set the baseline's application clocks: `nvidia-smi -i {0} -ac {1},{2}` (memory,graphics "
        "MHz)",
        *d.gpu, want->second, want->first);
    const baseline::Fact* def = app_clocks_default(d, here);
    if (def != nullptr && def->value == d.expected) {
      first += fmt::format(
          "; they are this GPU's defaults, so `nvidia-smi -i {} -rac` does the same", *d.gpu);
    }
    first +=
        ". A reboot or a driver reload resets them (without persistence mode, so can the driver's "
        "teardown between jobs): set them where the node's other boot-time GPU settings are "
        "applied";
  }
  return {first,
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
    std::string explanation = d.sentence() + ".";
    if (is_app_clocks(d)) explanation += app_clocks_note(d, here);
    Finding f =
        make_finding("drift." + d.family, Category::kConfiguration, d.severity, Confidence::kHigh,
                     gpu_of(d, map), std::move(title), std::move(explanation));
    f.evidence.push_back(
        evidence("reading", fmt::format("{} = {} here", d.key, d.here.value_or("(not present)")),
                 in.now, d.source.empty() ? std::string("this host") : d.source));
    f.evidence.push_back(evidence(
        "reading", fmt::format("{} = {} in {}", d.key, d.expected.value_or("(not present)"), from),
        std::nullopt, file));
    if (const baseline::Fact* def = is_app_clocks(d) ? app_clocks_default(d, here) : nullptr;
        def != nullptr && def->value) {
      f.evidence.push_back(evidence("reading", fmt::format("{} = {} here", def->key, *def->value),
                                    in.now, def->source));
    }
    f.actions = actions(d, here, file);
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
