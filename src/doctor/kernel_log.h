// SPDX-License-Identifier: Apache-2.0
// The doctor's kernel-log reader: a whole log (file, /dev/kmsg buffer or journal) in any of the
// formats kmsg knows, turned into events, the lines that belong to them and the boots seen.
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
  std::string source;                // "/dev/kmsg", "journalctl -k", or the file read
};

// Parses a whole kernel log. Every format of kmsg::parse_log_line, `journalctl -o json` lines,
// /dev/kmsg records (with "\xNN" escapes), journalctl's "-- Reboot --" markers and multi-line
// prints (continuation lines indented, or one record with embedded newlines) may be mixed.
// Lines from user space (syslog programs other than the kernel, /dev/kmsg records of another
// facility, journal entries of another transport) never become events. Never fails: what it
// does not recognise is counted in `lines` only. Pure; thread-safe.
KernelLog parse_kernel_log(std::string_view text, const KernelLogOptions& o = {});

// Reads and parses a log file. Files over 256 MiB are read from their last 256 MiB (the
// newest lines matter most). Errors (missing, unreadable, a directory) name the path.
Result<KernelLog> read_kernel_log_file(const std::string& path, const KernelLogOptions& o = {});

// Where the live kernel log comes from; tests point these at stand-ins.
struct LiveKernelLogSources {
  std::string kmsg_path = "/dev/kmsg";
  std::string journalctl;  // the program; empty: "journalctl" looked up in PATH
  DurationNs journal_timeout = 15 * kNsPerSec;
};

// The current boot's kernel log: the whole /dev/kmsg buffer from its start without blocking,
// or, when /dev/kmsg cannot be opened (dmesg_restrict, containers), the output of
// `journalctl -k -b -o short-iso --no-pager`, cut at `journal_timeout` (what arrived by then is
// kept and the source says so). Fails with both reasons when neither can be read. When
// `o.boot_time_ns` is unset it is taken from the system clocks.
Result<KernelLog> read_live_kernel_log(const KernelLogOptions& o = {},
                                       const LiveKernelLogSources& sources = {});

// Whether a hung task's call trace (its context lines) runs through the NVIDIA modules.
bool trace_through_nvidia(const std::vector<std::string>& lines);

// The context lines of event `index`, or nullptr when it has none.
const std::vector<std::string>* context_of(
    const std::vector<std::pair<std::size_t, std::vector<std::string>>>& context,
    std::size_t index);

}  // namespace cardiac::doctor
