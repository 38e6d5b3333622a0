// SPDX-License-Identifier: Apache-2.0
// GPU hardware checks over the sampling window: device health (lost, reset required), ECC and
// memory repair, thermal, power, PCIe, GPUs missing from NVML or below the expected count,
// NVLink. Thresholds are DCGM's health watches (health-checks.md 2.2) and, where the status
// verdict judges the same thing (health/gpu_verdict.cpp), the same numbers, so that `status`
// and `doctor` never disagree on one reading.
#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/checks/hardware.h"

namespace cardiac::doctor {

using namespace hardware_detail;  // NOLINT(google-build-using-namespace): private helpers

namespace {

void check_health(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out) {
  const Sample* lost = nullptr;
  const Sample* reset = nullptr;
  const Sample* error = nullptr;
  for (const auto& s : w.all) {
    auto h = s.reading->health;
    if (h == nvml::DeviceHealth::kLost && !lost) lost = &s;
    if (h == nvml::DeviceHealth::kResetRequired && !reset) reset = &s;
    if (h == nvml::DeviceHealth::kError && !error) error = &s;
  }
  std::string who = describe(g);
  std::string answered_before =
      !w.ok.empty() && (lost || reset) && w.ok.front().time < (lost ? lost : reset)->time
          ? " It answered normally earlier in the window, so it failed while cardiac watched."
          : "";
  if (lost) {
    Finding f = make_finding(
        "gpu.lost", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("{} has fallen off the bus (NVML: GPU_IS_LOST)", who),
        "NVML can no longer reach this GPU: every query returns GPU_IS_LOST. The card stopped "
        "answering on the PCIe bus (Xid 79 in the kernel log is the usual companion); its jobs "
        "have failed and it will not come back without a reset or a reboot." +
            answered_before);
    f.evidence.push_back(evidence("reading", lost->reading->health_detail, lost->time));
    f.actions = {
        "Drain the machine and reboot it (a cold power cycle if the GPU is still missing "
        "afterwards): a GPU that fell off the bus rarely survives a GPU reset",
        "Read the kernel log just before the loss for Xid 79, PCIe AER errors or power events "
        "(`cardiac doctor --since 24h` lists them)",
        "If it falls off again after the reboot, the card, its slot, riser or power cabling is "
        "failing: do the cross-check below",
    };
    out.push_back(std::move(f));
  } else if (reset) {
    Finding f = make_finding(
        "gpu.reset_required", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("{} needs a reset (NVML: RESET_REQUIRED)", who),
        "The driver refuses further work on this GPU until it is reset, usually after an "
        "uncontained error (Xid 95) or a fault the driver cannot recover from." +
            answered_before);
    f.evidence.push_back(evidence("reading", reset->reading->health_detail, reset->time));
    f.actions = {
        fmt::format("Stop the processes using {} and reset it: `sudo nvidia-smi -r -i {}` "
                    "(reboot if the reset is refused or hangs)",
                    who, smi_target(g)),
        "Look in the kernel log for the Xid that preceded it (`cardiac doctor` lists them)",
        "If it needs a reset again soon, do the cross-check below",
    };
    out.push_back(std::move(f));
  } else if (error) {
    bool last_bad = w.last().health == nvml::DeviceHealth::kError;
    Finding f = make_finding(
        "gpu.nvml_error", Category::kHardware, Severity::kWarning, Confidence::kLow, g,
        fmt::format("NVML reports an unknown error on {}", who),
        fmt::format("A basic NVML query on this GPU failed with an unexpected error {}. This "
                    "is often the first sign of a GPU that is about to be lost or needs a reset.",
                    last_bad ? "in the latest sample" : "earlier in the window"));
    f.evidence.push_back(evidence("reading", error->reading->health_detail, error->time));
    f.actions = {
        "Check the kernel log for Xids on this GPU (`cardiac doctor` lists them)",
        fmt::format("Run `cardiac status` again; if the error stays, reset the GPU when idle: "
                    "`sudo nvidia-smi -r -i {}`",
                    smi_target(g)),
    };
    out.push_back(std::move(f));
  }
}

// --- ECC, row remapping, page retirement.

std::string ecc_counts(const nvml::GpuReading& r) {
  return fmt::format(
      "ECC uncorrectable: volatile {}, aggregate {}; corrected: volatile {}, aggregate {}",
      r.ecc_volatile_uncorrected ? std::to_string(*r.ecc_volatile_uncorrected) : "n/a",
      r.ecc_aggregate_uncorrected ? std::to_string(*r.ecc_aggregate_uncorrected) : "n/a",
      r.ecc_volatile_corrected ? std::to_string(*r.ecc_volatile_corrected) : "n/a",
      r.ecc_aggregate_corrected ? std::to_string(*r.ecc_aggregate_corrected) : "n/a");
}

void check_dbe(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out) {
  const auto& last = *w.ok.back().reading;
  TimeNs t = w.ok.back().time;
  auto agg =
      counter_span(w.ok, [](const nvml::GpuReading& r) { return r.ecc_aggregate_uncorrected; });
  bool volatile_dbe = last.ecc_volatile_uncorrected.value_or(0) > 0;
  bool rose = agg && agg->second > agg->first;
  std::string who = describe(g);
  if (volatile_dbe || rose) {
    Finding f = make_finding(
        "gpu.ecc.dbe", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("{} has uncorrectable (double-bit) ECC errors", who),
        "The GPU's memory returned data that ECC could not correct. The job that touched it "
        "was killed or computed on bad data. DCGM fails a GPU on any volatile double-bit error. "
        "A reset lets the driver remap the bad row (or retire the page) so the card can go "
        "back into service; errors that come back mean the memory is failing.");
    f.evidence.push_back(evidence("counter", ecc_counts(last), t));
    if (rose) {
      f.evidence.push_back(
          evidence("counter",
                   fmt::format("aggregate uncorrectable ECC rose from {} to {} during the window",
                               agg->first, agg->second),
                   t));
    }
    if (last.remapped_rows_pending.value_or(false)) {
      f.evidence.push_back(evidence("reading", "row remap pending (applies at the next reset)", t));
    }
    f.actions = {
        fmt::format("Stop the work on {} and reset it: `sudo nvidia-smi -r -i {}` (reboot if "
                    "the reset is refused); the reset applies the pending row remap or page "
                    "retirement that fences off the bad memory",
                    who, smi_target(g)),
        "After the reset run `cardiac status`: volatile uncorrectable back to 0, no remap "
        "pending, no remap failure",
        "Before returning it to service run a memory diagnostic (`dcgmi diag -r 3`)",
        "If uncorrectable errors come back or remapping failed, the memory is failing: do the "
        "cross-check below and RMA the card with its serial",
    };
    out.push_back(std::move(f));
  } else if (last.ecc_aggregate_uncorrected.value_or(0) > 0) {
    Finding f = make_finding(
        "gpu.ecc.dbe_past", Category::kHardware, Severity::kWarning, Confidence::kMedium, g,
        fmt::format("{} had uncorrectable ECC errors before the driver last loaded", who),
        "The lifetime (aggregate) counter holds uncorrectable errors, none since the driver "
        "loaded. If the bad memory was remapped or retired the card is usable; watch it.");
    f.evidence.push_back(evidence("counter", ecc_counts(last), t));
    f.actions = {
        "Check the memory repair state: `nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT -i " +
            smi_target(g) + "` (no failure, nothing pending)",
        "Keep it in service and watch for new errors with `cardiac status`",
    };
    out.push_back(std::move(f));
  }
}

void check_sbe(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out) {
  const auto& last = *w.ok.back().reading;
  TimeNs t = w.ok.back().time;
  auto span =
      counter_span(w.ok, [](const nvml::GpuReading& r) { return r.ecc_volatile_corrected; });
  if (!span || span->first == span->second) {
    span = counter_span(w.ok, [](const nvml::GpuReading& r) { return r.ecc_aggregate_corrected; });
  }
  bool rising = span && span->second > span->first && w.ok_span_s() > 0;
  bool high = last.ecc_volatile_corrected.value_or(0) >= kSbeHighCount;
  if (!rising && !high) return;
  std::string who = describe(g);
  Finding f = make_finding(
      "gpu.ecc.sbe_rate", Category::kHardware, Severity::kWarning,
      rising ? Confidence::kMedium : Confidence::kLow, g,
      rising ? fmt::format("Corrected ECC errors are rising on {}", who)
             : fmt::format("{} has many corrected ECC errors", who),
      "ECC corrected these errors, so no job was harmed, but memory that keeps producing "
      "correctable errors often goes on to produce uncorrectable ones and to use up its spare "
      "rows.");
  if (rising) {
    double per_hour = static_cast<double>(span->second - span->first) * 3600.0 / w.ok_span_s();
    f.evidence.push_back(evidence(
        "counter",
        fmt::format("corrected ECC errors rose from {} to {} in {:.0f} s ({:.0f} per hour)",
                    span->first, span->second, w.ok_span_s(), per_hour),
        t));
  }
  f.evidence.push_back(evidence("counter", ecc_counts(last), t));
  f.actions = {
      "Keep it in service but watch the rate with `cardiac status` after the next job",
      "Check the row remapper: `nvidia-smi -q -d ROW_REMAPPER -i " + smi_target(g) +
          "` (pending remaps need a reset)",
      "If the rate keeps climbing or uncorrectable errors appear, reset the GPU, run "
      "`dcgmi diag -r 3` and do the cross-check",
  };
  out.push_back(std::move(f));
}

void check_row_remap(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out) {
  const auto& last = *w.ok.back().reading;
  TimeNs t = w.ok.back().time;
  std::string who = describe(g);
  std::string counts = fmt::format(
      "remapped rows: {} for correctable errors, {} for uncorrectable errors; pending {}; "
      "failure {}",
      last.remapped_rows_corrected.value_or(0), last.remapped_rows_uncorrected.value_or(0),
      last.remapped_rows_pending.value_or(false) ? "yes" : "no",
      last.remapped_rows_failure.value_or(false) ? "yes" : "no");
  if (last.remapped_rows_failure.value_or(false)) {
    Finding f = make_finding(
        "gpu.row_remap.failed", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("Row remapping failed on {}", who),
        "The memory had a bad row and no spare row left to remap it to. DCGM fails the GPU; "
        "NVIDIA's guidance is to replace it.");
    f.evidence.push_back(evidence("reading", counts, t));
    f.actions = {
        fmt::format("Take {} out of service and RMA it (serial {})", who,
                    g.serial.empty() ? "on the card's label" : g.serial),
        "Document the fault with the cross-check below before shipping it",
    };
    out.push_back(std::move(f));
  }
  if (last.remapped_rows_pending.value_or(false)) {
    Finding f = make_finding(
        "gpu.row_remap.pending", Category::kHardware, Severity::kWarning, Confidence::kHigh, g,
        fmt::format("A row remap is pending on {}: reset the GPU to apply it", who),
        "The GPU recorded a bad memory row and will remap it to a spare at the next reset; until "
        "then the bad row can hurt again.");
    f.evidence.push_back(evidence("reading", counts, t));
    f.actions = {
        fmt::format("When its job ends, reset it: `sudo nvidia-smi -r -i {}` (or reboot)",
                    smi_target(g)),
        "After the reset check with `cardiac status` that nothing is pending",
    };
    out.push_back(std::move(f));
  }
  if (last.remapped_rows_uncorrected.value_or(0) >= kUncorrectableRemapsWarn) {
    Finding f = make_finding(
        "gpu.row_remap.uncorrectable", Category::kHardware, Severity::kWarning, Confidence::kHigh,
        g,
        fmt::format("{} has remapped {} rows for uncorrectable errors", who,
                    *last.remapped_rows_uncorrected),
        fmt::format("DCGM warns at {} rows remapped for uncorrectable errors: the spare rows are "
                    "being used up and a remap failure will follow.",
                    kUncorrectableRemapsWarn));
    f.evidence.push_back(evidence("reading", counts, t));
    f.actions = {"Plan to replace the GPU at the next maintenance window (serial " +
                     (g.serial.empty() ? std::string("on the card's label") : g.serial) + ")",
                 "Watch for a remap failure with `cardiac status`"};
    out.push_back(std::move(f));
  }
}

void check_retired_pages(const DoctorInput& in, const GpuWindow& w, const GpuRef& g,
                         std::vector<Finding>& out) {
  const auto& last = *w.ok.back().reading;
  TimeNs t = w.ok.back().time;
  std::string who = describe(g);
  unsigned sbe = last.retired_pages_sbe.value_or(0);
  unsigned dbe = last.retired_pages_dbe.value_or(0);
  std::string counts = fmt::format(
      "retired pages: {} for single-bit errors, {} for double-bit "
      "errors; pending {}",
      sbe, dbe, last.retired_pages_pending.value_or(false) ? "yes" : "no");
  if (sbe + dbe >= kMaxRetiredPages) {
    Finding f = make_finding(
        "gpu.retired_pages.limit", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("{} has retired {} memory pages (limit {})", who, sbe + dbe, kMaxRetiredPages),
        "Pages are retired when their memory keeps failing; DCGM fails a GPU at 63 retired "
        "pages, the most the driver can retire.");
    f.evidence.push_back(evidence("reading", counts, t));
    f.actions = {fmt::format("Take {} out of service and RMA it", who),
                 "Document the fault with the cross-check below"};
    out.push_back(std::move(f));
  } else if (dbe > kRetiredDbeSoftLimit) {
    // DCGM fails a GPU with more than 15 DBE pages only when more than one was added in the
    // last week: a card that retired pages long ago and then stayed clean is still usable.
    auto dbe_span =
        counter_span(w.ok, [](const nvml::GpuReading& r) { return r.retired_pages_dbe; });
    std::optional<double> new_in_week;
    std::string basis;
    if (const auto* s = history_series(in, g, "retired_pages_dbe");
        s && !s->empty() && s->front().first <= in.now - kWeek) {
      double before = s->front().second;
      for (const auto& [when, v] : *s) {
        if (when <= in.now - kWeek) before = v;
      }
      new_in_week = dbe - before;
      basis = fmt::format("{:.0f} new in the last week (agent history)", *new_in_week);
    } else if (dbe_span && dbe_span->second > dbe_span->first + 1) {
      new_in_week = static_cast<double>(dbe_span->second - dbe_span->first);
      basis = fmt::format("{:.0f} new during this run", *new_in_week);
    }
    bool fails = new_in_week && *new_in_week > 1;
    Finding f = make_finding(
        "gpu.retired_pages.dbe", Category::kHardware,
        fails ? Severity::kCritical : Severity::kWarning,
        new_in_week ? Confidence::kHigh : Confidence::kMedium, g,
        fmt::format("{} has retired {} pages for double-bit errors", who, dbe),
        new_in_week
            ? fmt::format("DCGM fails a GPU with more than {} DBE-retired pages when more than "
                          "one was added in the last week; {}.",
                          kRetiredDbeSoftLimit, basis)
            : fmt::format("DCGM fails a GPU with more than {} DBE-retired pages when more than "
                          "one was added in the last week. Telling that needs a week of history: "
                          "run `cardiac agent` and pass its store to `cardiac doctor --db`.",
                          kRetiredDbeSoftLimit));
    f.evidence.push_back(evidence("reading", counts, t));
    f.actions = {fails ? fmt::format("Take {} out of service and RMA it", who)
                       : "Watch the count: a new DBE-retired page within a week means replace it",
                 "Document the fault with the cross-check below"};
    out.push_back(std::move(f));
  }
  if (last.retired_pages_pending.value_or(false)) {
    Finding f = make_finding(
        "gpu.retired_pages.pending", Category::kHardware, Severity::kWarning, Confidence::kHigh, g,
        fmt::format("A page retirement is pending on {}: reset the GPU to apply it", who),
        "The driver marked a failing page; it is retired at the next reset or reboot.");
    f.evidence.push_back(evidence("reading", counts, t));
    f.actions = {fmt::format("When its job ends, reset it: `sudo nvidia-smi -r -i {}` (or reboot)",
                             smi_target(g))};
    out.push_back(std::move(f));
  }
}

// --- Thermal.

std::string window_bus_id(const GpuWindow& w) {
  for (auto it = w.all.rbegin(); it != w.all.rend(); ++it) {
    if (!it->reading->pci_bus_id.empty())
      return nvml::normalize_pci_bus_id(it->reading->pci_bus_id);
  }
  return "";
}

// A GPU that never told NVML its bus id (lost from the start) is the one GPU on the bus that
// NVML does not claim, when there is exactly one of each (as the status report does).
std::map<unsigned, std::string> resolve_anonymous(const std::vector<GpuWindow>& windows,
                                                  const host::HostSnapshot* h) {
  std::set<std::string> known;
  std::vector<unsigned> anonymous;
  for (const auto& w : windows) {
    std::string id = window_bus_id(w);
    if (id.empty()) {
      anonymous.push_back(w.index);
    } else {
      known.insert(id);
    }
  }
  std::vector<std::string> unclaimed;
  for (const auto* d : check_util::host_bus_gpus(h)) {
    std::string id = nvml::normalize_pci_bus_id(d->bus_id);
    if (!known.count(id)) unclaimed.push_back(id);
  }
  if (anonymous.size() != 1 || unclaimed.size() != 1) return {};
  return {{anonymous.front(), unclaimed.front()}};
}

void check_missing(const DoctorInput& in, const std::vector<GpuWindow>& windows,
                   const std::map<unsigned, std::string>& anonymous, const GpuMap& map,
                   std::vector<Finding>& out) {
  const auto* snap = in.last_gpus();
  if (snap == nullptr || !snap->available) return;  // the driver check says why
  std::set<std::string> known;
  for (const auto& w : windows) {
    std::string id = window_bus_id(w);
    if (id.empty()) {
      auto it = anonymous.find(w.index);
      if (it == anonymous.end()) return;  // cannot tell which card NVML lists: do not guess
      id = it->second;
    }
    known.insert(id);
  }
  for (const auto* d : check_util::host_bus_gpus(in.last_host())) {
    std::string id = nvml::normalize_pci_bus_id(d->bus_id);
    if (known.count(id)) continue;
    std::string driver = d->driver.value_or("");
    GpuRef g = map.by_bus_id(id);
    std::string why =
        driver == "nvidia"
            ? "It is bound to the nvidia driver, which then failed to bring it up (look for "
              "`RmInitAdapter failed` in the kernel log) or lost it during boot."
        : driver.empty() ? "No driver is bound to it: the nvidia driver could not take it."
                         : fmt::format("It is bound to {} instead of nvidia.", driver);
    Finding f = make_finding(
        "gpu.missing_from_nvml", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("GPU at {} is on the PCI bus but NVML does not list it", id),
        fmt::format("The card answers on the PCI bus, so it has power and a link, but the "
                    "driver does not offer it: no job can use it. {}",
                    why));
    f.evidence.push_back(
        evidence("reading",
                 fmt::format("PCI {}: device 0x{:04x}, driver {}, link {} GT/s x{}", d->bus_id,
                             d->device, driver.empty() ? "none" : driver,
                             d->current_link_gts.value_or(0), d->current_link_width.value_or(0)),
                 std::nullopt, "/sys/bus/pci/devices/" + d->bus_id));
    f.evidence.push_back(evidence(
        "reading", fmt::format("NVML lists {} GPU(s)", snap->system.device_count), snap->taken_at));
    if (!driver.empty() && driver != "nvidia") {
      f.actions.push_back(
          fmt::format("Bind it to nvidia: blacklist {} and reboot (or rebind "
                      "through /sys/bus/pci/drivers)",
                      driver));
    }
    f.actions.push_back(fmt::format(
        "Read the kernel log for {}: `RmInitAdapter failed`, Xid 79, AER errors (`cardiac "
        "doctor` lists them)",
        id));
    f.actions.push_back(
        "Cold power cycle the server (remove power for 30 s); if the GPU is still missing, "
        "reseat it and check its power cables");
    f.actions.push_back("If it stays missing, do the cross-check below");
    out.push_back(std::move(f));
  }
}

void check_expected_count(const DoctorInput& in, std::vector<Finding>& out) {
  if (!in.config.expected_gpus) return;
  unsigned expected = *in.config.expected_gpus;
  const auto* snap = in.last_gpus();
  auto bus = check_util::host_bus_gpus(in.last_host());
  bool from_nvml = snap != nullptr && snap->available;
  if (!from_nvml && (in.last_host() == nullptr || !in.last_host()->pci)) return;
  auto seen = from_nvml ? std::max<unsigned>(snap->system.device_count,
                                             static_cast<unsigned>(snap->gpus.size()))
                        : static_cast<unsigned>(bus.size());
  if (seen >= expected) return;
  Finding f = make_finding(
      "gpu.count_below_expected", Category::kHardware, Severity::kCritical,
      from_nvml ? Confidence::kHigh : Confidence::kMedium, {},
      fmt::format("{} GPU(s) found, {} expected", seen, expected),
      from_nvml ? "NVML lists fewer GPUs than this machine should have: a card dropped off the "
                  "bus, failed to initialise or lost power."
                : "NVML is not usable, so the GPUs were counted on the PCI bus: fewer are there "
                  "than this machine should have.");
  std::vector<std::string> ids;
  for (const auto* d : bus) ids.push_back(nvml::normalize_pci_bus_id(d->bus_id));
  if (from_nvml) {
    f.evidence.push_back(evidence(
        "reading", fmt::format("NVML lists {} GPU(s)", snap->system.device_count), snap->taken_at));
  }
  if (in.last_host() != nullptr && in.last_host()->pci) {
    f.evidence.push_back(evidence("reading",
                                  fmt::format("PCI bus: {} NVIDIA GPU(s){}{}", ids.size(),
                                              ids.empty() ? "" : ": ", fmt::join(ids, ", ")),
                                  std::nullopt, "/sys/bus/pci/devices"));
  }
  f.actions = {
      "Find the missing card: compare the bus ids above with the server's slot map (`lspci -d "
      "10de: -nn`, `nvidia-smi -L`)",
      "Cold power cycle the server (remove power for 30 s); a card missing from the PCI bus did "
      "not train its link or has no power",
      "If it is still missing, reseat it and check its power cables, then do the cross-check "
      "with a known-good card",
  };
  out.push_back(std::move(f));
}

GpuRef window_ref(const GpuWindow& w, const std::map<unsigned, std::string>& anonymous,
                  const GpuMap& map) {
  const nvml::GpuReading* id = &w.last();
  for (auto it = w.all.rbegin(); it != w.all.rend(); ++it) {
    if (!it->reading->uuid.empty() || !it->reading->pci_bus_id.empty()) {
      id = it->reading;
      break;
    }
  }
  GpuRef g = check_util::gpu_ref(*id, map);
  if (g.pci_bus_id.empty()) {
    if (auto it = anonymous.find(w.index); it != anonymous.end()) {
      GpuRef known = map.by_bus_id(it->second);
      g.pci_bus_id = it->second;
      if (g.uuid.empty()) g.uuid = known.uuid;
      if (g.serial.empty()) g.serial = known.serial;
    }
  }
  return g;
}

}  // namespace

void check_gpu_hardware(const DoctorInput& in, std::vector<Finding>& out) {
  GpuMap map(in);
  auto windows = check_util::gpu_windows(in);
  auto anonymous = resolve_anonymous(windows, in.last_host());
  for (const auto& w : windows) {
    GpuRef g = window_ref(w, anonymous, map);
    check_health(w, g, out);
    if (w.ok.empty()) continue;
    check_dbe(w, g, out);
    check_sbe(w, g, out);
    check_row_remap(w, g, out);
    check_retired_pages(in, w, g, out);
    check_thermal(in, windows, w, g, out);
    check_power(w, g, out);
    check_pcie_link(in, w, g, out);
    check_pcie_replays(w, g, out);
    check_nvlink(w, g, out);
  }
  check_missing(in, windows, anonymous, map, out);
  check_expected_count(in, out);
}

}  // namespace cardiac::doctor
