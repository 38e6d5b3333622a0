// SPDX-License-Identifier: Apache-2.0
// Where a kernel log's text comes from: a file (plain or compressed, refused when binary),
// /dev/kmsg, or journalctl -k; each read is bounded, and what was left out is said.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/format.h"
#include "core/time.h"
#include "core/units.h"
#include "doctor/decompress.h"
#include "doctor/live/kernel_log_source.h"
#include "kmsg/reader.h"
#include "platform/subprocess.h"

namespace cardiac::doctor {
namespace {

constexpr std::size_t kMaxRead = 256u << 20;

struct RawLog {
  std::string bytes;
  Compression compression = Compression::kNone;
  std::string cut;  // "" or which part of the file was read, when not all of it
};

// A plain log is read from its last kMaxRead bytes; a compressed one from its start (its end
// cannot be decoded alone).
Result<RawLog> read_raw(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(Error::io(path, errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return fail(Error::io(path, err));
  }
  if (S_ISDIR(st.st_mode)) {  // the wrong path named, not a log that cannot be read
    ::close(fd);
    return fail(Error::invalid("is a directory, not a kernel log", path));
  }
  RawLog raw;
  char buf[1 << 16];
  std::size_t have = 0;
  if (S_ISREG(st.st_mode)) {
    const ssize_t n = ::pread(fd, buf, 8, 0);
    if (n > 0) {
      raw.compression = detect_compression(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }
  bool seeked = false;
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > kMaxRead &&
      raw.compression == Compression::kNone) {
    seeked = ::lseek(fd, st.st_size - static_cast<off_t>(kMaxRead), SEEK_SET) >= 0;
  }
  while (have <= kMaxRead) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail(Error::io(path, err));
    }
    if (n == 0) break;
    raw.bytes.append(buf, static_cast<std::size_t>(n));
    have = raw.bytes.size();
  }
  ::close(fd);
  if (seeked) {
    raw.bytes.erase(0, std::min(raw.bytes.size(), raw.bytes.find('\n') + 1));  // a partial line
    raw.cut = fmt::format("only its last {} were read", format_bytes(kMaxRead));
  } else if (have > kMaxRead) {
    raw.cut = fmt::format("only its first {} were read", format_bytes(have));
  }
  if (raw.compression == Compression::kNone && !raw.bytes.empty()) {
    // A stream with no regular file behind it (a pipe, /dev/stdin) is known by its bytes.
    raw.compression = detect_compression(raw.bytes);
  }
  return raw;
}

std::string find_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    auto colon = dirs.find(':');
    std::string candidate = std::string(dirs.substr(0, colon)) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    dirs.remove_prefix(colon == std::string_view::npos ? dirs.size() : colon + 1);
  }
  return {};
}

Result<KernelLog> read_journal(const KernelLogOptions& o, const LiveKernelLogSources& s) {
  const std::string program = find_in_path(s.journalctl.empty() ? "journalctl" : s.journalctl);
  if (program.empty()) return fail(Error::not_found("journalctl not found in PATH"));
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  SpawnOptions so;
  so.argv = {program, "-k", "-b", "-o", "short-iso", "--no-pager"};
  so.pipe_stdin = false;
  if (devnull >= 0) so.pass_fds = {{devnull, 2}};  // its hints would clutter our output
  auto child = Child::spawn(so);
  if (devnull >= 0) ::close(devnull);
  if (!child) return fail(child.error());
  // A wait on a real process: on the clock poll() waits on, whatever Clock the caller has.
  const TimeNs deadline = io_deadline(s.journal_timeout);
  std::string text;
  bool cut = false;
  while (true) {
    auto line = child->read_line(deadline);
    if (!line) {
      cut = line.error().code == ErrorCode::kTimeout;
      break;
    }
    text += *line;
    text += '\n';
    if (text.size() > kMaxRead) {
      cut = true;
      break;
    }
  }
  child->kill_and_abandon();  // already gone unless it was cut short
  KernelLog log = parse_kernel_log(text, o);
  if (log.lines == 0 || (log.lines == 1 && text.find("-- No entries --") != std::string::npos)) {
    return fail(Error::unavailable(
        "journalctl -k returned no kernel messages (no permission to read the system journal?)"));
  }
  log.source =
      cut ? fmt::format("journalctl -k (cut short after {})", format_duration(s.journal_timeout))
          : "journalctl -k";
  return log;
}

}  // namespace

bool looks_binary(std::string_view bytes) {
  std::size_t nuls = 0;
  std::size_t nul_runs = 0;
  std::size_t controls = 0;  // other than NUL
  char prev = 'x';
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) {
      ++nuls;
      if (prev != 0) ++nul_runs;
    } else if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' &&
                c != 0x1b) ||
               c == 0x7f) {
      ++controls;  // ESC stays text: colour codes in a captured terminal
    }
    prev = ch;
  }
  // One or a few runs of NULs are what a crash leaves in a syslog; a binary has them
  // everywhere, between control bytes text never holds.
  constexpr std::size_t kMaxNulRuns = 8;
  const std::size_t rest = bytes.size() - nuls;
  return nul_runs > kMaxNulRuns || (nuls > 0 && rest == 0) || controls * 20 > rest;
}

Result<KernelLog> read_kernel_log_file(const std::string& path, const KernelLogOptions& o) {
  auto raw = read_raw(path);
  if (!raw) return fail(raw.error());
  std::vector<std::string> notes;
  std::string text;
  if (!raw->cut.empty()) notes.push_back(raw->cut);
  if (raw->compression == Compression::kNone) {
    text = std::move(raw->bytes);
  } else {
    Decompressed d = decompress(raw->bytes, raw->compression, kMaxRead);
    raw->bytes = {};
    text = std::move(d.text);
    if (d.cut) {
      // The decoded text starts mid-line.
      text.erase(0, std::min(text.size(), text.find('\n') + 1));
      notes.push_back(fmt::format("only the last {} of its decompressed text were read",
                                  format_bytes(kMaxRead)));
    }
    if (!d.problem.empty()) notes.push_back(d.problem + "; what came before was read");
  }
  KernelLog log;
  if (looks_binary(text)) {
    // Its "lines" are whatever lies between two newline bytes: parsing them finds prefixes and
    // messages in noise, so nothing of it is read.
    log.binary = true;
    log.bytes = text.size();
  } else {
    log = parse_kernel_log(text, o);
  }
  log.source = path;
  log.compression = std::string(compression_name(raw->compression));
  log.read_notes = std::move(notes);
  return log;
}

Result<KernelLog> read_live_kernel_log(const Clock& clock, const KernelLogOptions& o,
                                       const LiveKernelLogSources& sources) {
  KernelLogOptions opts = o;
  if (!opts.boot_time_ns) {
    opts.boot_time_ns = clock.now() - clock.monotonic();
  }
  kmsg::KmsgReaderOptions ko;
  ko.from_start = true;
  ko.max_records_per_poll = 100'000;
  kmsg::KmsgReader reader(sources.kmsg_path, ko);
  Error kmsg_error;
  if (auto st = reader.open(); st) {
    std::string text;
    while (true) {
      auto n = reader.read_records(text);
      if (!n) {
        kmsg_error = n.error();
        break;
      }
      if (*n == 0 || text.size() > kMaxRead) {
        KernelLog log = parse_kernel_log(text, opts);
        log.source = sources.kmsg_path;
        return log;
      }
    }
  } else {
    kmsg_error = st.error();
  }
  auto journal = read_journal(opts, sources);
  if (journal) return journal;
  return fail(Error::unavailable(fmt::format("cannot read the kernel log: {}; and {}",
                                             kmsg_error.what(), journal.error().what())));
}

}  // namespace cardiac::doctor
