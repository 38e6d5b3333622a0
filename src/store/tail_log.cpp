// SPDX-License-Identifier: Apache-2.0
// Tail records in two append-only files: framing, CRC, reading back, appending.
#include "store/tail_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "core/format.h"

namespace cardiac::store {
namespace {

// Record layout, little-endian: magic, payload length, CRC-32 of everything after the CRC,
// segment, seq, start, end, count, then the payload.
constexpr std::uint32_t kMagic = 0x314c5443;  // "CTL1"
constexpr std::size_t kHeader = 4 + 4 + 4 + 5 * 8;
// A tail row holds one flush; far above any real one, it stops a corrupt length early.
constexpr std::uint32_t kMaxPayload = 64u << 20;

void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put64(std::string& out, std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}
std::uint64_t get(std::string_view in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= std::uint64_t{static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)])} << (8 * i);
  }
  return v;
}

std::uint32_t crc_of(std::string_view bytes) {
  return static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

std::string encode(const TailRecord& r) {
  std::string out;
  out.reserve(kHeader + r.data.size());
  put32(out, kMagic);
  put32(out, static_cast<std::uint32_t>(r.data.size()));
  put32(out, 0);  // the CRC, once the rest is in place
  put64(out, r.segment);
  put64(out, r.seq);
  put64(out, r.start_ns);
  put64(out, r.end_ns);
  put64(out, r.count);
  out += r.data;
  const std::uint32_t crc = crc_of(std::string_view(out).substr(12));
  for (int i = 0; i < 4; ++i)
    out[8 + static_cast<std::size_t>(i)] = static_cast<char>(crc >> (8 * i));
  return out;
}

// Into `out`, sized once from fstat: growing by doubling left a trail of smaller buffers.
Status read_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {};
    return fail(Error::io(path, errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<std::size_t>(st.st_size));
  std::array<char, 65536> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail(Error::io(path, err));
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return {};
}

// The valid records at the start of one file (see read_tail_log for where it stops).
void parse(std::string_view file, std::int64_t sealed, std::int64_t parity,
           std::vector<TailRecord>& out) {
  std::size_t at = 0;
  std::optional<std::int64_t> segment;
  std::int64_t next_seq = 0;
  while (file.size() - at >= kHeader) {
    if (get(file, at, 4) != kMagic) return;
    // A file holds one segment: a sealed one is skipped whole, without checking its CRCs.
    if (!segment && static_cast<std::int64_t>(get(file, at + 12, 8)) <= sealed) return;
    const auto len = static_cast<std::uint32_t>(get(file, at + 4, 4));
    if (len > kMaxPayload || file.size() - at - kHeader < len) return;
    const auto crc = static_cast<std::uint32_t>(get(file, at + 8, 4));
    if (crc_of(file.substr(at + 12, kHeader - 12 + len)) != crc) return;
    TailRecord r;
    r.segment = static_cast<std::int64_t>(get(file, at + 12, 8));
    r.seq = static_cast<std::int64_t>(get(file, at + 20, 8));
    r.start_ns = static_cast<std::int64_t>(get(file, at + 28, 8));
    r.end_ns = static_cast<std::int64_t>(get(file, at + 36, 8));
    r.count = static_cast<std::int64_t>(get(file, at + 44, 8));
    if (segment && r.segment != *segment) return;
    // Only a segment of this file's parity is written here: another one (a copied or damaged
    // file) would repeat or shadow the other file's records.
    if (!segment && (r.segment & 1) != parity) return;
    if (r.seq != next_seq) return;
    segment = r.segment;
    ++next_seq;
    r.data = file.substr(at + kHeader, len);
    at += kHeader + len;
    if (r.segment > sealed) out.push_back(r);
  }
}

}  // namespace

std::string tail_log_path(std::string_view db_path, std::int64_t segment) {
  return fmt::format("{}-tail{}", db_path, segment % 2 == 0 ? 0 : 1);
}

Result<std::int64_t> sealed_tail_segment(const Db& db) {
  // Asked at every flush (each sample): kept prepared, as parsing it cost more than running it.
  auto st = db.cached("SELECT sealed_segment FROM tail_log WHERE id = 1");
  if (!st) return fail(std::move(st).error());
  auto row = st->step();
  if (!row) return fail(std::move(row).error());
  if (!*row) return 0;
  return st->column_opt_int64(0).value_or(0);
}

Status set_sealed_tail_segment(Db& db, std::int64_t segment) {
  auto st = db.prepare(
      "INSERT INTO tail_log(id, sealed_segment) VALUES (1, ?1) ON CONFLICT(id) DO UPDATE SET "
      "sealed_segment = max(sealed_segment, excluded.sealed_segment)");
  if (!st) return fail(std::move(st).error());
  return st->bind_all(segment).run();
}

Result<TailLog> read_tail_log(std::string_view db_path, std::int64_t sealed) {
  TailLog log;
  // Both strings in place before any record views one: moving the vector later keeps them.
  log.files.resize(2);
  for (std::int64_t parity : {0, 1}) {
    std::string& file = log.files[static_cast<std::size_t>(parity)];
    CARDIAC_TRY(read_file(tail_log_path(db_path, parity), file));
    parse(file, sealed, parity, log.records);
  }
  std::stable_sort(log.records.begin(), log.records.end(),
                   [](const TailRecord& a, const TailRecord& b) { return a.segment < b.segment; });
  return log;
}

Status append_tail_record(std::string_view db_path, const TailRecord& record, unsigned mode) {
  const std::string path = tail_log_path(db_path, record.segment);
  const bool first = record.seq == 0;
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | (first ? O_TRUNC : 0);
  const int fd = ::open(path.c_str(), flags, mode);
  if (fd < 0) return fail(Error::io(path, errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return fail(Error::io(path, err));
  }
  if (first) {
    // The same owner group and mode as the database, whatever the umask (see access.h).
    struct stat db {};
    if (::stat(std::string(db_path).c_str(), &db) == 0) {
      (void)::fchmod(fd, db.st_mode & 0777);
      if (db.st_gid != st.st_gid) (void)::fchown(fd, static_cast<uid_t>(-1), db.st_gid);
    }
  }
  const std::string bytes = encode(record);
  std::size_t done = 0;
  int err = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  // A torn record would hide every later one from the reader: cut it off (best effort).
  if (err != 0 && done > 0) (void)::ftruncate(fd, st.st_size);
  ::close(fd);
  if (err != 0) return fail(Error::io(path, err));
  return {};
}

Status sync_wal(std::string_view db_path) {
  const std::string path = std::string(db_path) + "-wal";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {};
    return fail(Error::io(path, errno));
  }
  const int rc = ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return fail(Error::io(path, err));
  return {};
}

}  // namespace cardiac::store
