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

// Whether `bytes` is binary data rather than text: NULs scattered through it (more than 8
// runs of them), nothing but NULs, or more than 1 in 20 of its other bytes a control
// character no text carries. A syslog with a short run of NULs (a
// crash cut the file) stays text; an executable, a core or a database does not.
bool looks_binary(std::string_view bytes);

// Reads and parses a log file. A gzip, xz or zstd file (known by its magic bytes, whatever its
// name) is decompressed first; what a truncated or corrupt one held up to the damage is kept
// and `read_notes` says so. Binary content (looks_binary, after decompression) is not parsed:
// `binary` is set and no event comes from it. Logs over 256 MiB (decompressed) are read from their
// last 256 MiB (the newest lines matter most). Errors (missing, unreadable, a directory) name the
// path.
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
