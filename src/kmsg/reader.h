// SPDX-License-Identifier: Apache-2.0
// Pollable readers of new kernel-log lines: /dev/kmsg and a plain (rotating) log file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "kmsg/event.h"

namespace cardiac::kmsg {

struct ReaderCounters {
  std::uint64_t lines = 0;        // records/lines consumed
  std::uint64_t events = 0;       // of which classified as KernelEvent
  std::uint64_t overruns = 0;     // /dev/kmsg EPIPE: records overwritten before we read them
  std::uint64_t unparsed = 0;     // lines that did not parse as a record/line at all
  std::uint64_t truncations = 0;  // file shrank under us (copytruncate)
  std::uint64_t rotations = 0;    // path now names a different inode
};

struct KmsgReaderOptions {
  bool from_start = false;  // false: only records written after open()
  // Wall clock at boot: turns the records' µs-since-boot into time_ns. Unset: time_ns empty.
  std::optional<std::int64_t> boot_time_ns;
  std::size_t max_records_per_poll = 10'000;  // bounds one poll's latency and memory
};

// Reads /dev/kmsg (or a stand-in path) without blocking. Not thread-safe; the caller polls.
class KmsgReader {
 public:
  explicit KmsgReader(std::string path = "/dev/kmsg", KmsgReaderOptions options = {});
  ~KmsgReader();
  KmsgReader(const KmsgReader&) = delete;
  KmsgReader& operator=(const KmsgReader&) = delete;

  // Opens O_RDONLY|O_NONBLOCK and seeks to the end unless from_start.
  Status open();
  // Classified events among the records that arrived since the last poll.
  Result<std::vector<KernelEvent>> poll();
  // The kernel's own records that arrived since the last poll, appended to `out` verbatim
  // (first line only, "prio,seq,usec,flags;message\n"), for readers that need every line
  // (call traces, AER details), not only the events. Returns how many were appended; 0 means
  // none are waiting. Bounded by max_records_per_poll like poll().
  Result<std::size_t> read_records(std::string& out);
  [[nodiscard]] const ReaderCounters& counters() const { return counters_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  void consume_line(std::string_view line, std::vector<KernelEvent>& out);
  // Reads what is waiting and hands each complete line to `sink`.
  template <class Sink>
  Status drain(Sink&& sink);

  std::string path_;
  KmsgReaderOptions options_;
  int fd_ = -1;
  std::string pending_;  // a partial line (only possible when the source is not /dev/kmsg)
  ReaderCounters counters_;
  std::string chunk_;  // the read buffer, kept between polls
};

struct FileTailOptions {
  bool from_start = false;  // false: skip what the file holds at first open
  int year_hint = 0;        // for syslog prefixes without a year (0: no time_ns from them)
  std::optional<std::int64_t> boot_time_ns;   // dmesg-style monotonic stamps -> time_ns
  std::size_t max_bytes_per_poll = 4u << 20;  // bounds one poll on a huge backlog
};

// Tails a text log (kern.log, syslog, a dmesg capture): remembers the offset, starts over on
// truncation and follows rotation (inode change) after draining the old file.
class FileTailReader {
 public:
  explicit FileTailReader(std::string path, FileTailOptions options = {});
  ~FileTailReader();
  FileTailReader(const FileTailReader&) = delete;
  FileTailReader& operator=(const FileTailReader&) = delete;

  // Classified events among complete lines appended since the last poll. A missing file is
  // not an error (logs rotate); it yields no events until the file appears.
  Result<std::vector<KernelEvent>> poll();
  [[nodiscard]] const ReaderCounters& counters() const { return counters_; }
  [[nodiscard]] std::uint64_t offset() const { return offset_; }
  // False while the file is missing (or could not be opened): nothing is being read.
  [[nodiscard]] bool reading() const { return fd_ >= 0; }

 private:
  Status reopen(bool at_end);
  Status drain(std::vector<KernelEvent>& out, std::size_t& budget);

  std::string path_;
  FileTailOptions options_;
  int fd_ = -1;
  std::uint64_t inode_ = 0;
  std::uint64_t device_ = 0;
  std::uint64_t offset_ = 0;
  bool opened_once_ = false;
  ReaderCounters counters_;
  std::string chunk_;  // the read buffer, kept between polls
};

}  // namespace cardiac::kmsg
