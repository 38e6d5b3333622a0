// SPDX-License-Identifier: Apache-2.0
// The doctor's kernel-log parser: a whole log's text (file, /dev/kmsg buffer or journal) in any
// of the formats kmsg knows, turned into events, the lines that belong to them and the boots
// seen. Reading it from files, /dev/kmsg or journalctl is live/kernel_log_source.h's.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "doctor/input.h"
#include "kmsg/event.h"

namespace cardiac::doctor {

struct KernelLogOptions {
  int year_hint = 0;  // the year of syslog stamps that carry none; 0: those get no wall time
  // Wall clock at the start of the current boot: turns "[ 123.456]" stamps of the last boot in
  // the log into wall times. Earlier boots use the boot time their own lines reveal.
  std::optional<TimeNs> boot_time_ns;
};

struct KernelLog {
  std::vector<kmsg::KernelEvent> events;  // in log order
  std::vector<Boot> boots;                // each boot that starts inside the log
  // Lines that belong to an event without being one: event index → lines verbatim (AER
  // detail lines, a hung task's call trace, the continuation lines of a multi-line print).
  std::vector<std::pair<std::size_t, std::vector<std::string>>> context;
  std::size_t lines = 0;             // non-empty input lines
  std::size_t recognised_lines = 0;  // of which part of an event, its context or a GPU's serial
  // Of `lines`, those that looked like a log line: a dmesg, syslog, ISO, /dev/kmsg or journal
  // prefix (user space's lines too), a journal marker, or a bare kernel message we know.
  std::size_t log_lines = 0;
  // Lines longer than kmsg::kMaxMessageBytes: never a kernel message, so not parsed; the first
  // one's line number (1-based, in the text read) is kept for the report.
  std::size_t long_lines = 0;
  std::size_t first_long_line = 0;
  // The file held binary data (looks_binary), so nothing was parsed: `lines` is 0 and
  // `bytes` says how much there was.
  bool binary = false;
  std::size_t bytes = 0;
  std::string source;       // "/dev/kmsg", "journalctl -k", or the file read
  std::string compression;  // "gzip", "xz", "zstd" when the file was compressed, else ""
  // Why the file was not read whole: "only its last 256 MiB were read", a compressed stream
  // that ends early or is corrupt. Empty when nothing was left out.
  std::vector<std::string> read_notes;
};

// Parses a whole kernel log. Every format of kmsg::parse_log_line, `journalctl -o json` lines,
// /dev/kmsg records (with "\xNN" escapes), journalctl's "-- Reboot --" markers and multi-line
// prints (continuation lines indented, or one record with embedded newlines) may be mixed.
// Lines from user space (syslog programs other than the kernel, /dev/kmsg records of another
// facility, journal entries of another transport) never become events. Never fails: what it
// does not recognise is counted in `lines` only. Pure; thread-safe.
KernelLog parse_kernel_log(std::string_view text, const KernelLogOptions& o = {});

// Whether a hung task's call trace (its context lines) runs through the NVIDIA modules.
bool trace_through_nvidia(const std::vector<std::string>& lines);

// The context lines of event `index`, or nullptr when it has none.
const std::vector<std::string>* context_of(
    const std::vector<std::pair<std::size_t, std::vector<std::string>>>& context,
    std::size_t index);

}  // namespace cardiac::doctor
