// SPDX-License-Identifier: Apache-2.0
// GPU memory: double- and single-bit ECC errors, row remapping and retired pages.
#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/checks/gpu_hardware.h"

namespace cardiac::doctor::hardware_detail {
namespace {

std::string ecc_counts(const nvml::GpuReading& r) {
  return fmt::format(
      "ECC uncorrectable: volatile {}, aggregate {}; corrected: volatile {}, aggregate {}",
      r.ecc_volatile_uncorrected ? std::to_string(*r.ecc_volatile_uncorrected) : "n/a",
      r.ecc_aggregate_uncorrected ? std::to_string(*r.ecc_aggregate_uncorrected) : "n/a",
      r.ecc_volatile_corrected ? std::to_string(*r.ecc_volatile_corrected) : "n/a",
      r.ecc_aggregate_corrected ? std::to_string(*r.ecc_aggregate_corrected) : "n/a");
}

}  // namespace

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

}  // namespace cardiac::doctor::hardware_detail
