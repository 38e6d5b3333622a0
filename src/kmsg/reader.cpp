// SPDX-License-Identifier: Apache-2.0
// Non-blocking /dev/kmsg reader and offset-remembering log-file tailer (POSIX I/O, no threads).
#include "kmsg/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "kmsg/context.h"

namespace cardiac::kmsg {
namespace {

// /dev/kmsg hands out one record per read() and fails with EINVAL when the buffer is smaller
// than the record; the kernel caps records (with dictionary) well below this.
constexpr std::size_t kReadChunk = 64 * 1024;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

KmsgReader::KmsgReader(std::string path, KmsgReaderOptions options)
    : path_(std::move(path)), options_(options) {}

KmsgReader::~KmsgReader() {
  close_fd(fd_);
}

Status KmsgReader::open() {
  close_fd(fd_);
  pending_.clear();
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) return fail(Error::io(path_, errno));
  // On /dev/kmsg SEEK_END skips the backlog; a FIFO stand-in cannot seek (ESPIPE): fine.
  if (!options_.from_start && ::lseek(fd_, 0, SEEK_END) < 0 && errno != ESPIPE) {
    Error e = Error::io(path_, errno);
    close_fd(fd_);
    return fail(e);
  }
  return {};
}

void KmsgReader::consume_line(std::string_view line, std::vector<KernelEvent>& out) {
  // Continuation lines (" KEY=value") belong to the record before them.
  if (line.empty() || line.front() == ' ') return;
  ++counters_.lines;
  auto rec = parse_kmsg_record(line);
  if (!rec) {
    ++counters_.unparsed;
    return;
  }
  // Only kernel-facility records: user space may write to /dev/kmsg and must not be able to
  // fake an Xid.
  if (rec->facility != 0) return;
  LogLine parsed;
  parsed.format = LineFormat::kKmsg;
  parsed.message = rec->message;
  parsed.monotonic_us = rec->timestamp_us;
  // The kernel escapes a multi-line print's newlines as "\x0a"; undo that only when needed
  // (almost no record has a backslash) and classify the print as one line.
  std::string text;
  if (rec->message.find('\\') != std::string_view::npos) {
    text = join_multiline(unescape_kmsg(rec->message));
    parsed.message = text;
  }
  if (auto e = classify_parsed(parsed, line, options_.boot_time_ns)) {
    ++counters_.events;
    out.push_back(std::move(*e));
  }
}

template <class Sink>
Status KmsgReader::drain(Sink&& sink) {
  if (fd_ < 0) CARDIAC_TRY(open());
  std::string& buf = chunk_;
  buf.resize(kReadChunk);
  const std::uint64_t start = counters_.lines;
  while (counters_.lines - start < options_.max_records_per_poll) {
    const ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;  // nothing more for now
      if (errno == EPIPE) {  // ring buffer wrapped past us; the next read resumes
        ++counters_.overruns;
        continue;
      }
      return fail(Error::io(path_, errno));
    }
    if (n == 0) break;  // EOF: a regular-file or FIFO stand-in with no more data
    pending_.append(buf.data(), static_cast<std::size_t>(n));
    std::size_t begin = 0;
    for (auto nl = pending_.find('\n'); nl != std::string::npos; nl = pending_.find('\n', begin)) {
      sink(std::string_view(pending_).substr(begin, nl - begin));
      begin = nl + 1;
    }
    pending_.erase(0, begin);
    if (pending_.size() > kReadChunk) {  // no newline in 64 KiB: not a record stream
      ++counters_.unparsed;
      pending_.clear();
    }
  }
  return {};
}

Result<std::vector<KernelEvent>> KmsgReader::poll() {
  std::vector<KernelEvent> out;
  CARDIAC_TRY(drain([&](std::string_view line) { consume_line(line, out); }));
  return out;
}

Result<std::size_t> KmsgReader::read_records(std::string& out) {
  std::size_t n = 0;
  CARDIAC_TRY(drain([&](std::string_view line) {
    if (line.empty() || line.front() == ' ') return;
    ++counters_.lines;
    auto rec = parse_kmsg_record(line);
    if (!rec) {
      ++counters_.unparsed;
      return;
    }
    if (rec->facility != 0) return;
    out.append(line);
    out.push_back('\n');
    ++n;
  }));
  return n;
}

FileTailReader::FileTailReader(std::string path, FileTailOptions options)
    : path_(std::move(path)), options_(options) {}

FileTailReader::~FileTailReader() {
  close_fd(fd_);
}

Status FileTailReader::reopen(bool at_end) {
  close_fd(fd_);
  offset_ = 0;
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    if (errno == ENOENT) return {};  // between rotation and re-creation
    return fail(Error::io(path_, errno));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    Error e = Error::io(path_, errno);
    close_fd(fd_);
    return fail(e);
  }
  inode_ = st.st_ino;
  device_ = st.st_dev;
  if (at_end) offset_ = static_cast<std::uint64_t>(st.st_size);
  return {};
}

Status FileTailReader::drain(std::vector<KernelEvent>& out, std::size_t& budget) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return fail(Error::io(path_, errno));
  if (static_cast<std::uint64_t>(st.st_size) < offset_) {  // copytruncate or "> file"
    ++counters_.truncations;
    offset_ = 0;
  }
  // Most polls find nothing new: they cost the fstat and nothing else.
  if (static_cast<std::uint64_t>(st.st_size) == offset_) return {};
  std::string buf;
  std::string& chunk = chunk_;
  chunk.resize(kReadChunk);
  while (budget > 0) {
    const std::size_t want = std::min(chunk.size(), budget);
    const ssize_t n = ::pread(fd_, chunk.data(), want, static_cast<off_t>(offset_ + buf.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::io(path_, errno));
    }
    if (n == 0) break;
    budget -= static_cast<std::size_t>(n);
    buf.append(chunk.data(), static_cast<std::size_t>(n));
    std::size_t begin = 0;
    for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n', begin)) {
      std::string_view line = std::string_view(buf).substr(begin, nl - begin);
      begin = nl + 1;
      ++counters_.lines;
      auto parsed = parse_log_line(line, options_.year_hint);
      if (!parsed) {
        if (line.find_first_not_of(" \t\r") != std::string_view::npos) ++counters_.unparsed;
        continue;
      }
      if (auto e = classify_parsed(*parsed, line, options_.boot_time_ns)) {
        ++counters_.events;
        out.push_back(std::move(*e));
      }
    }
    offset_ += begin;  // a trailing partial line stays unread until its '\n' arrives
    buf.erase(0, begin);
    if (buf.size() >= kReadChunk) {  // an endless line: skip it rather than stall forever
      ++counters_.lines;
      ++counters_.unparsed;
      offset_ += buf.size();
      buf.clear();
    }
  }
  return {};
}

Result<std::vector<KernelEvent>> FileTailReader::poll() {
  std::vector<KernelEvent> out;
  std::size_t budget = options_.max_bytes_per_poll;
  if (fd_ < 0) {
    // Only the very first open skips existing content; a file that appears later is all new.
    CARDIAC_TRY(reopen(!opened_once_ && !options_.from_start));
    opened_once_ = true;
    if (fd_ < 0) return out;
  }
  CARDIAC_TRY(drain(out, budget));
  if (budget == 0) return out;  // backlog left in this file: rotate only once it is drained
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return out;  // rotated away, not re-created yet
  if (st.st_ino != inode_ || st.st_dev != device_) {
    ++counters_.rotations;
    CARDIAC_TRY(reopen(false));
    if (fd_ >= 0) CARDIAC_TRY(drain(out, budget));
  }
  return out;
}

}  // namespace cardiac::kmsg
