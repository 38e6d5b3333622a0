// SPDX-License-Identifier: Apache-2.0
// The kernel log as input: a file that is not a kernel log (a binary, the wrong file, a
// compressed format we were not told about) yields no events, and no events must never read
// as "no problems". Thresholds: a warning when no line, or fewer than half of them, looked
// like a log line (a syslog or kern.log of any machine is nearly all log lines; a dmesg -t
// without prefixes counts only its known kernel messages); any line over 64 KiB; any part of
// the file left out.
#include <string>
#include <vector>

#include "core/format.h"
#include "doctor/checks/checks.h"
#include "kmsg/event.h"

namespace cardiac::doctor {
namespace {

Finding read_finding(const DoctorInput& in, std::string id, std::string title,
                     std::string explanation) {
  Finding f;
  f.id = std::move(id);
  f.category = Category::kConfiguration;
  f.severity = Severity::kWarning;
  f.confidence = Confidence::kHigh;
  f.title = std::move(title);
  f.explanation = std::move(explanation);
  Evidence e;
  e.kind = "reading";
  e.source = in.kmsg_source;
  const KernelLogRead& r = *in.kmsg_read;
  const std::string through =
      r.compression.empty() ? "" : fmt::format(" (read through {})", r.compression);
  e.text = r.binary ? fmt::format("{} bytes of binary data, 0 lines read{}", r.bytes, through)
                    : fmt::format("{} non-empty line{}, {} looked like a log line{}", r.lines,
                                  r.lines == 1 ? "" : "s", r.log_lines, through);
  f.evidence.push_back(std::move(e));
  return f;
}

}  // namespace

void check_kernel_log_read(const DoctorInput& in, std::vector<Finding>& out) {
  if (!in.kmsg_read) return;
  const KernelLogRead& r = *in.kmsg_read;
  const std::string& src = in.kmsg_source;
  const std::vector<std::string> not_judged = {
      fmt::format("Check that {} is the kernel log you meant: `file {}`, `head {}`", src, src, src),
      "Give the doctor a kernel log: `dmesg`, `journalctl -k`, /var/log/kern.log (rotated ones "
      "may be .gz, .xz or .zst), or a /dev/kmsg dump",
  };
  if (r.binary) {
    Finding f = read_finding(
        in, "kmsg.unrecognised",
        fmt::format("{} is binary data, not a kernel log: {} bytes, 0 lines read", src, r.bytes),
        "It holds NUL or control bytes no text carries (an executable, a database, an image, or "
        "a compression the doctor does not know), so none of it was read as log lines: the "
        "absence of kernel-log findings below means nothing.");
    f.actions = not_judged;
    out.push_back(std::move(f));
  } else if (r.lines == 0) {
    Finding f = read_finding(in, "kmsg.empty", fmt::format("The kernel log {} is empty", src),
                             "It holds no line at all, so no kernel event could be judged: the "
                             "absence of kernel-log findings below means nothing.");
    f.actions = not_judged;
    out.push_back(std::move(f));
  } else if (r.log_lines == 0 || r.log_lines * 2 < r.lines) {
    const bool none = r.log_lines == 0;
    Finding f = read_finding(
        in, none ? "kmsg.unrecognised" : "kmsg.partly_recognised",
        fmt::format("{} of {} lines looked like a kernel log in {}", r.log_lines, r.lines, src),
        none ? "Not one line carries a dmesg, syslog, journal or /dev/kmsg prefix, or is a kernel "
               "message the doctor knows: this is not a kernel log the doctor can read (binary "
               "data, another kind of file, or a compression it does not know). Its kernel "
               "events, if any, were not judged."
             : "Most lines carry no dmesg, syslog, journal or /dev/kmsg prefix: only the lines "
               "that do were judged, and events in the rest may have been missed.");
    f.actions = not_judged;
    out.push_back(std::move(f));
  }
  if (r.long_lines > 0) {
    Finding f = read_finding(
        in, "kmsg.long_lines",
        fmt::format("{} line{} over {} KiB in {} not read", r.long_lines,
                    r.long_lines == 1 ? "" : "s", kmsg::kMaxMessageBytes / 1024, src),
        fmt::format("No kernel message is that long, so {} read as binary data or a broken "
                    "export and skipped; a kernel event inside {} would have been missed.",
                    r.long_lines == 1 ? "it was" : "they were", r.long_lines == 1 ? "it" : "them"));
    f.evidence.front().text +=
        fmt::format("; first line over the limit: line {}", r.first_long_line);
    f.actions = {fmt::format("Look at line {} of {} (`sed -n {}p {} | head -c 300`)",
                             r.first_long_line, src, r.first_long_line, src)};
    out.push_back(std::move(f));
  }
  if (!r.notes.empty()) {
    Finding f = read_finding(
        in, "kmsg.incomplete", fmt::format("The kernel log {} was not read whole", src),
        fmt::format("{}. Events in the part left out were not judged.", fmt::join(r.notes, "; ")));
    f.actions = {
        fmt::format("For the part left out, run the doctor on a copy that holds it "
                    "(`--kmsg FILE`), or check the file with `file {}`",
                    src)};
    out.push_back(std::move(f));
  }
}

}  // namespace cardiac::doctor
