// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the store's tail files (src/store/tail_log.cpp): read_tail_log() over two
// arbitrary files, then the records it returned written again with append_tail_record() beside
// a second database path and read back, which must give the same records. The reader must stop
// at whatever is torn, corrupt or out of order, never read past it or fail on it.
// Input: byte 0 is the last sealed segment (as a signed byte); then a 2-byte big-endian length
// and that many bytes for <db>-tail0; the rest is <db>-tail1. The files live in a private
// directory under $TMPDIR.
//
// CARDIAC_FUZZ_WRITE_SEEDS=DIR build-fuzz/fuzz/fuzz_tail_log writes seed inputs in this format
// (records written by append_tail_record itself, then cut or flipped) into DIR and exits.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "store/tail_log.h"

namespace {

using cardiac::store::TailRecord;

const std::string& work_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/cardiac-fuzz-tail-XXXXXX";
    CARDIAC_FUZZ_CHECK(::mkdtemp(tmpl.data()) != nullptr);
    return tmpl;
  }();
  return dir;
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CARDIAC_FUZZ_CHECK(out.good());
}

bool same(const TailRecord& a, const TailRecord& b) {
  return a.segment == b.segment && a.seq == b.seq && a.start_ns == b.start_ns &&
         a.end_ns == b.end_ns && a.count == b.count && a.data == b.data;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string input(std::int8_t sealed, const std::string& tail0, const std::string& tail1) {
  std::string s;
  s += static_cast<char>(sealed);
  s += static_cast<char>((tail0.size() >> 8) & 0xff);
  s += static_cast<char>(tail0.size() & 0xff);
  return s + tail0 + tail1;
}

int write_seeds(const std::string& dir) {
  const std::string db = work_dir() + "/seed.db";
  // Segment 3 in tail1 (three records), segment 4 in tail0 (two).
  for (std::int64_t seq = 0; seq < 3; ++seq) {
    const std::string payload(40 + seq, 'a' + seq);
    TailRecord r{3, seq, 1000 * seq, 1000 * seq + 999, 5, payload};
    CARDIAC_FUZZ_CHECK(cardiac::store::append_tail_record(db, r).has_value());
  }
  for (std::int64_t seq = 0; seq < 2; ++seq) {
    const std::string payload(64, 'z');
    TailRecord r{4, seq, 5000 + 1000 * seq, 5999 + 1000 * seq, 5, payload};
    CARDIAC_FUZZ_CHECK(cardiac::store::append_tail_record(db, r).has_value());
  }
  const std::string t0 = read_file(cardiac::store::tail_log_path(db, 4));
  const std::string t1 = read_file(cardiac::store::tail_log_path(db, 3));
  std::string flipped = t1;
  if (!flipped.empty()) flipped[flipped.size() / 2] ^= 0x5a;
  const std::vector<std::string> seeds = {input(-1, t0, t1), input(3, t0, t1),
                                          input(-1, t0.substr(0, t0.size() - 7), t1),
                                          input(-1, t0, flipped), input(-1, "", t1 + t1)};
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    write_file(dir + "/seed-" + std::to_string(i), seeds[i]);
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cardiac::fuzz::write_seeds_if_asked(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::int64_t sealed = static_cast<std::int8_t>(data[0]);
  const std::size_t first = std::min<std::size_t>((data[1] << 8) | data[2], size - 3);
  const std::string_view rest(reinterpret_cast<const char*>(data) + 3, size - 3);
  const std::string db = work_dir() + "/a.db";
  write_file(cardiac::store::tail_log_path(db, 0), rest.substr(0, first));
  write_file(cardiac::store::tail_log_path(db, 1), rest.substr(first));

  auto log = cardiac::store::read_tail_log(db, sealed);
  CARDIAC_FUZZ_CHECK(log.has_value());
  const std::vector<TailRecord>& records = log->records;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TailRecord& r = records[i];
    CARDIAC_FUZZ_CHECK(r.segment > sealed);
    if (i > 0) {
      const TailRecord& p = records[i - 1];
      CARDIAC_FUZZ_CHECK(p.segment < r.segment || (p.segment == r.segment && p.seq < r.seq));
    }
  }

  // Written again in order (a segment's seq 0 starts its file afresh), they read back as they
  // were.
  const std::string again = work_dir() + "/b.db";
  ::unlink(cardiac::store::tail_log_path(again, 0).c_str());
  ::unlink(cardiac::store::tail_log_path(again, 1).c_str());
  for (const TailRecord& r : records) {
    CARDIAC_FUZZ_CHECK(cardiac::store::append_tail_record(again, r).has_value());
  }
  auto back = cardiac::store::read_tail_log(again, sealed);
  CARDIAC_FUZZ_CHECK(back.has_value() && back->records.size() == records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    CARDIAC_FUZZ_CHECK(same(back->records[i], records[i]));
  }
  return 0;
}
