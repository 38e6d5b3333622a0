// SPDX-License-Identifier: Apache-2.0
// Parsers for kernel-log lines: /dev/kmsg records and dmesg/syslog/journal text exports.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

// Wall times are taken as plausible between 1970 and 2200 (2200-01-01T00:00:00Z is excluded):
// stamps outside leave time_ns unset, which also keeps every sum of times within int64.
inline constexpr std::int64_t kMaxWallNs = 7'258'118'400LL * 1'000'000'000;

// The wall time of a monotonic stamp: `boot_time_ns` + `monotonic_us`; nullopt when either is
// negative or the result is not a plausible wall time (see kMaxWallNs). No overflow.
std::optional<std::int64_t> wall_from_monotonic(std::int64_t boot_time_ns,
                                                std::int64_t monotonic_us);
// The boot time a line reveals when it carries both stamps: `time_ns` - `monotonic_us`;
// nullopt under the same rules.
std::optional<std::int64_t> boot_from_stamps(std::int64_t time_ns, std::int64_t monotonic_us);

// Which text format a line was recognised as.
enum class LineFormat {
  kKmsg,           // a /dev/kmsg record saved to a file
  kDmesg,          // "[  123.456789] msg" (also dmesg -r "<6>[...]" and short-monotonic)
  kDmesgWall,      // dmesg -T: "[Tue Mar  5 22:23:56 2024] msg"
  kSyslog,         // "Mar  5 22:23:56 host kernel: msg" (also journalctl short/short-precise)
  kIso,            // "2024-03-05T22:23:56.123456+00:00 host kernel: msg" (also short-iso)
  kFabricManager,  // Fabric Manager's own log: "[Mar 05 2024 22:23:56] [ERROR] [tid 12] msg"
  kPlain,          // no recognised prefix: the whole line is the message
};

// A kernel message and whatever time its prefix carried. `message` views the input.
struct LogLine {
  LineFormat format = LineFormat::kPlain;
  std::string_view message;
  std::optional<std::int64_t> monotonic_us;  // since boot, from a "[ sec.usec]" stamp
  std::optional<std::int64_t> time_ns;       // wall clock, ns since the UTC epoch
  int facility = 0;  // kKmsg: the record's syslog facility (0 = the kernel itself)
};

// Parses one line of a kernel-log export. Wall-clock prefixes are taken as UTC (dmesg -T and
// classic syslog print local time and do not say which zone; the caller may shift them).
// Syslog prefixes carry no year: `year_hint` supplies it, and with 0 no time_ns is set.
// Returns nullopt for empty/blank lines, lines with NUL bytes, syslog lines from programs
// other than the kernel, and lines whose timestamp prefix is cut short.
std::optional<LogLine> parse_log_line(std::string_view line, int year_hint = 0);

// Undoes the "\xNN" escapes /dev/kmsg writes for control bytes (a multi-line print's '\n'),
// bytes >= 0x7f and '\\' itself. A malformed escape is kept as it stands.
std::string unescape_kmsg(std::string_view message);

// One line of `journalctl -o json` (one object per line).
struct JournalEntry {
  std::string message;                       // MESSAGE (a byte array is decoded too)
  std::optional<std::int64_t> time_ns;       // __REALTIME_TIMESTAMP
  std::optional<std::int64_t> monotonic_us;  // _SOURCE_MONOTONIC_TIMESTAMP, else the journal's
  std::string boot_id;                       // _BOOT_ID
  // False when _TRANSPORT or SYSLOG_IDENTIFIER names another source: user space can log any
  // text, so only the kernel's own records may become events.
  bool kernel = true;
};

// Parses one `journalctl -o json` line without std::regex or a DOM. Returns nullopt for lines
// that are not a JSON object or carry no MESSAGE.
std::optional<JournalEntry> parse_journal_json(std::string_view line);

}  // namespace cardiac::kmsg
