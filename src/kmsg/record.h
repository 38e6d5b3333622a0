// SPDX-License-Identifier: Apache-2.0
// Parsers for kernel-log lines: /dev/kmsg records and dmesg/syslog/journal text exports.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cardiac::kmsg {

// One /dev/kmsg record: "<prefix>,<seq>,<usec>,<flags>[,...];<message>\n[ KEY=value\n...]".
// `message` views the input: it is only valid while the caller's buffer is.
struct KmsgRecord {
  int priority = 0;               // syslog level 0 (emerg) .. 7 (debug)
  int facility = 0;               // 0 = kernel; user-space writes to /dev/kmsg use others
  std::uint64_t sequence = 0;     // gaps mean records were overwritten before we read them
  std::int64_t timestamp_us = 0;  // microseconds since boot (CLOCK_MONOTONIC-like)
  char flags = '-';               // '-' whole record, 'c' continuation fragment
  std::string_view message;       // first line only; kernel escapes control bytes as \xNN
};

// Parses one record; continuation lines (" KEY=value") after the first '\n' are ignored.
// Returns nullopt for anything that is not a well-formed record header.
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

// Which text format a line was recognised as.
enum class LineFormat {
  kKmsg,       // a /dev/kmsg record saved to a file
  kDmesg,      // "[  123.456789] msg" (also dmesg -r "<6>[...]" and short-monotonic)
  kDmesgWall,  // dmesg -T: "[Tue Mar  5 22:23:56 2024] msg"
  kSyslog,     // "Mar  5 22:23:56 host kernel: msg" (also journalctl short/short-precise)
  kIso,        // "2024-03-05T22:23:56.123456+00:00 host kernel: msg" (also short-iso)
  kPlain,      // no recognised prefix: the whole line is the message
};

// A kernel message and whatever time its prefix carried. `message` views the input.
struct LogLine {
  LineFormat format = LineFormat::kPlain;
  std::string_view message;
  std::optional<std::int64_t> monotonic_us;  // since boot, from a "[ sec.usec]" stamp
  std::optional<std::int64_t> time_ns;       // wall clock, ns since the UTC epoch
};

// Parses one line of a kernel-log export. Wall-clock prefixes are taken as UTC (dmesg -T and
// classic syslog print local time and do not say which zone; the caller may shift them).
// Syslog prefixes carry no year: `year_hint` supplies it, and with 0 no time_ns is set.
// Returns nullopt for empty/blank lines, lines with NUL bytes, syslog lines from programs
// other than the kernel, and lines whose timestamp prefix is cut short.
std::optional<LogLine> parse_log_line(std::string_view line, int year_hint = 0);

}  // namespace cardiac::kmsg
