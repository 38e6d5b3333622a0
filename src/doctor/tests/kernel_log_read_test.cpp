// SPDX-License-Identifier: Apache-2.0
// Tests for reading a kernel log the doctor cannot take at face value: rotated logs compressed
// with gzip, xz or zstd (known by their magic bytes), binary or foreign input, lines too long
// to be kernel messages, and the warning findings that keep such a log from reading as clean.
// And the live log: the whole /dev/kmsg buffer, else journalctl with a deadline.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/format.h"
#include "doctor/checks/checks.h"
#include "doctor/decompress.h"
#include "doctor/kernel_log.h"
#include "doctor/live/kernel_log_source.h"

namespace cardiac::doctor {
namespace {

const std::string kReadFixtures = CARDIAC_FIXTURES_DIR "/kmsg/";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kernel-log-read-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::filesystem::path dir_;
};

std::vector<std::string> kinds(const KernelLog& log) {
  std::vector<std::string> out;
  for (const auto& e : log.events) {
    out.push_back(std::string(kmsg::event_kind_name(e.kind)) +
                  (e.xid ? std::to_string(*e.xid) : std::string()));
  }
  return out;
}

TEST(CompressedLog, GzipXzAndZstdReadLikeThePlainLog) {
  auto plain = read_kernel_log_file(kReadFixtures + "xid48-dbe.syslog", {2024, {}});
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->events.size(), 4U);
  const std::pair<const char*, const char*> cases[] = {{"xid48-dbe.syslog.1.gz", "gzip"},
                                                       {"xid48-dbe.syslog.2.xz", "xz"},
                                                       {"xid48-dbe.syslog.3.zst", "zstd"}};
  for (const auto& [file, codec] : cases) {
    auto log = read_kernel_log_file(kReadFixtures + file, {2024, {}});
    ASSERT_TRUE(log) << file << ": " << log.error().what();
    EXPECT_EQ(kinds(*log), kinds(*plain)) << file;
    EXPECT_EQ(log->compression, codec);
    EXPECT_EQ(log->lines, plain->lines) << file;
    EXPECT_EQ(log->log_lines, plain->log_lines) << file;
    EXPECT_TRUE(log->read_notes.empty()) << file;
    EXPECT_EQ(log->source, kReadFixtures + file);
    for (std::size_t i = 0; i < log->events.size(); ++i) {
      EXPECT_EQ(log->events[i].raw, plain->events[i].raw) << file;
      EXPECT_EQ(log->events[i].time_ns, plain->events[i].time_ns) << file;
    }
  }
}

TEST_F(TempDir, CompressionIsKnownByItsBytesNotItsName) {
  std::string p = write("kern.log", slurp(kReadFixtures + "xid48-dbe.syslog.1.gz"));
  auto log = read_kernel_log_file(p, {2024, {}});
  ASSERT_TRUE(log);
  EXPECT_EQ(log->compression, "gzip");
  EXPECT_EQ(log->events.size(), 4U);
  // And a plain log named .gz is read as it is.
  std::string q = write("plain.gz", slurp(kReadFixtures + "xid48-dbe.syslog"));
  auto plain = read_kernel_log_file(q, {2024, {}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->compression, "");
  EXPECT_EQ(plain->events.size(), 4U);
}

TEST_F(TempDir, ConcatenatedGzipMembersAreAllRead) {
  const std::string gz = slurp(kReadFixtures + "xid48-dbe.syslog.1.gz");
  auto log = read_kernel_log_file(write("two.gz", gz + gz), {2024, {}});
  ASSERT_TRUE(log);
  EXPECT_EQ(log->events.size(), 8U);
  EXPECT_TRUE(log->read_notes.empty());
}

TEST_F(TempDir, TruncatedOrCorruptKeepsWhatCameBeforeAndSaysSo) {
  for (const char* file :
       {"xid48-dbe.syslog.1.gz", "xid48-dbe.syslog.2.xz", "xid48-dbe.syslog.3.zst"}) {
    const std::string whole = slurp(kReadFixtures + file);
    auto cut =
        read_kernel_log_file(write("cut", whole.substr(0, whole.size() * 3 / 4)), {2024, {}});
    ASSERT_TRUE(cut) << file;
    ASSERT_EQ(cut->read_notes.size(), 1U) << file;
    EXPECT_NE(cut->read_notes[0].find("ends early"), std::string::npos) << cut->read_notes[0];
    // zstd decodes a whole block or nothing; gzip and xz give back what came before the cut.
    if (std::string(file).find(".zst") == std::string::npos) {
      EXPECT_GT(cut->lines, 0U) << file << ": the lines before the cut are kept";
    }
  }
  std::string bad = slurp(kReadFixtures + "xid48-dbe.syslog.1.gz");
  for (std::size_t i = 20; i < bad.size() - 8; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  auto log = read_kernel_log_file(write("bad.gz", bad), {2024, {}});
  ASSERT_TRUE(log);
  ASSERT_EQ(log->read_notes.size(), 1U);
  EXPECT_NE(log->read_notes[0].find("gzip"), std::string::npos) << log->read_notes[0];
}

TEST(CompressedLog, OutputKeepsTheNewestBytesWithinTheLimit) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\n";
  uLongf size = compressBound(text.size());
  std::string z(size, '\0');
  ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(z.data()), &size,
                      reinterpret_cast<const Bytef*>(text.data()), text.size(), 9),
            Z_OK);
  z.resize(size);
  Decompressed d = decompress(z, Compression::kGzip, 1000);
  EXPECT_TRUE(d.cut);
  EXPECT_EQ(d.text.size(), 1000U);
  EXPECT_EQ(d.text, text.substr(text.size() - 1000));
  EXPECT_TRUE(d.problem.empty()) << d.problem;
}

TEST(CompressedLog, MagicBytes) {
  EXPECT_EQ(detect_compression("\x1f\x8b\x08"), Compression::kGzip);
  EXPECT_EQ(detect_compression(std::string_view("\xfd"
                                                "7zXZ\0\0",
                                                7)),
            Compression::kXz);
  EXPECT_EQ(detect_compression("\x28\xb5\x2f\xfd\x00"), Compression::kZstd);
  EXPECT_EQ(detect_compression("[    1.0] NVRM: loading"), Compression::kNone);
  EXPECT_EQ(detect_compression(""), Compression::kNone);
  EXPECT_EQ(detect_compression("\x1f"), Compression::kNone);
}

TEST(UnrecognisedLog, BinaryInputHasNoLogLines) {
  std::string bin;
  for (int i = 0; i < 5000; ++i) bin.push_back(static_cast<char>((i * 37 + 11) % 256));
  KernelLog log = parse_kernel_log(bin, {2024, {}});
  EXPECT_GT(log.lines, 0U);
  EXPECT_EQ(log.log_lines, 0U);
}

// An executable: its newline bytes cut it into "lines" between which a lenient reader finds
// prefixes and messages. None of it may be read as a log, nor yield an event.
TEST_F(TempDir, AnExecutableIsBinaryWithNoLines) {
  std::string elf = slurp("/bin/true");
  ASSERT_GT(elf.size(), 1000U);
  // And one that would yield events if its lines were parsed.
  elf +=
      "\n[  219.470994] NVRM: Xid (PCI:0000:07:00): 79, pid='<unknown>', name=<unknown>, GPU "
      "has fallen off the bus.\n";
  const std::string path = write("true", elf);
  auto log = read_kernel_log_file(path, {2024, {}});
  ASSERT_TRUE(log);
  EXPECT_TRUE(log->binary);
  EXPECT_EQ(log->bytes, elf.size());
  EXPECT_EQ(log->lines, 0U);
  EXPECT_EQ(log->log_lines, 0U);
  EXPECT_TRUE(log->events.empty());
}

// Bytes like a stripped binary's: NULs between runs of printable text, some of them shaped
// like log lines.
TEST(UnrecognisedLog, NulsBetweenPrintableRunsAreBinary) {
  std::string bin;
  for (int i = 0; i < 200; ++i) {
    bin += "[  12.000000] text run " + std::to_string(i) + "\n";
    bin.append(static_cast<std::size_t>(1 + i % 7), '\0');
    bin += "\x01\x02\x7f";
  }
  EXPECT_TRUE(looks_binary(bin));
}

// A syslog a crash cut short ends in a run of NULs (the file's size was written, its last
// block was not): still a log, read as one.
TEST(UnrecognisedLog, ACrashCutSyslogWithANulRunIsText) {
  std::string text = slurp(kReadFixtures + "xid48-dbe.syslog");
  ASSERT_FALSE(text.empty());
  EXPECT_FALSE(looks_binary(text));
  text += std::string(4096, '\0');
  text += "\x1b[0m after the reboot\n";
  EXPECT_FALSE(looks_binary(text));
  EXPECT_TRUE(looks_binary(std::string(100, '\0')));
  EXPECT_FALSE(looks_binary(""));
}

// Indented lines count as a multi-line print's later lines only after a first line that was
// a log line: in an executable's or any text's bytes, lines that start with a blank are many.
TEST(UnrecognisedLog, IndentedLinesAfterNoLogLineAreNoLogLines) {
  KernelLog noise = parse_kernel_log("ELF garbage\n  more of it\n\tand more\n", {2024, {}});
  EXPECT_EQ(noise.lines, 3U);
  EXPECT_EQ(noise.log_lines, 0U);
  KernelLog print = parse_kernel_log(
      "[    4.100000] nvidia-nvlink: Nvlink Core is being initialized\n  second line\n",
      {2024, {}});
  EXPECT_EQ(print.lines, 2U);
  EXPECT_EQ(print.log_lines, 2U);
}

TEST(UnrecognisedLog, EveryFixtureLooksLikeALog) {
  for (const auto& entry : std::filesystem::directory_iterator(kReadFixtures)) {
    if (entry.path().extension() == ".md") continue;
    auto log = read_kernel_log_file(entry.path().string(), {2024, {}});
    ASSERT_TRUE(log) << entry.path();
    EXPECT_GE(log->log_lines * 2, log->lines) << entry.path();
    EXPECT_EQ(log->long_lines, 0U) << entry.path();
  }
}

TEST(UnrecognisedLog, LongLinesAreCountedNotDroppedSilently) {
  const std::string xid =
      "[  219.470994] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An "
      "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
      "physAddr 0x7fffa8860 partition 7, subpartition 1.";
  std::string text = xid + "\n\n" + std::string(70 * 1024, 'A') + "\n" + xid + "\n";
  KernelLog log = parse_kernel_log(text, {2024, {}});
  EXPECT_EQ(log.long_lines, 1U);
  EXPECT_EQ(log.first_long_line, 3U);
  EXPECT_EQ(log.lines, 3U);
  EXPECT_EQ(log.events.size(), 2U);
}

DoctorInput input_with(const KernelLogRead& read) {
  DoctorInput in;
  in.kmsg_source = "/var/log/kern.log.1";
  in.kmsg_read = read;
  return in;
}

const Finding* find_id(const std::vector<Finding>& fs, const std::string& id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  return it == fs.end() ? nullptr : &*it;
}

TEST(KernelLogReadCheck, NothingRecognisedIsAWarningNotACleanBill) {
  KernelLogRead r;
  r.lines = 12;
  std::vector<Finding> out;
  check_kernel_log_read(input_with(r), out);
  const Finding* f = find_id(out, "kmsg.unrecognised");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->title.find("0 of 12 lines looked like a kernel log"), std::string::npos) << f->title;
  EXPECT_FALSE(f->actions.empty());
}

TEST(KernelLogReadCheck, BinaryDataIsUnrecognisedAndSaysSo) {
  KernelLogRead r;
  r.binary = true;
  r.bytes = 43416;
  std::vector<Finding> out;
  check_kernel_log_read(input_with(r), out);
  ASSERT_EQ(out.size(), 1U);
  const Finding& f = out.front();
  EXPECT_EQ(f.id, "kmsg.unrecognised");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.title,
            "/var/log/kern.log.1 is binary data, not a kernel log: 43416 bytes, 0 lines read");
  EXPECT_EQ(f.evidence.front().text, "43416 bytes of binary data, 0 lines read");
}

TEST(KernelLogReadCheck, FewRecognisedLongLinesAndCutsAreWarnings) {
  KernelLogRead r;
  r.lines = 100;
  r.log_lines = 3;
  r.long_lines = 2;
  r.first_long_line = 41;
  r.notes = {"the gzip stream ends early (truncated file?); what came before was read"};
  std::vector<Finding> out;
  check_kernel_log_read(input_with(r), out);
  const Finding* partly = find_id(out, "kmsg.partly_recognised");
  ASSERT_NE(partly, nullptr);
  EXPECT_NE(partly->title.find("3 of 100 lines"), std::string::npos) << partly->title;
  const Finding* longf = find_id(out, "kmsg.long_lines");
  ASSERT_NE(longf, nullptr);
  EXPECT_NE(longf->title.find("2 lines over 64 KiB"), std::string::npos) << longf->title;
  EXPECT_NE(longf->evidence.front().text.find("line 41"), std::string::npos);
  const Finding* cut = find_id(out, "kmsg.incomplete");
  ASSERT_NE(cut, nullptr);
  EXPECT_NE(cut->explanation.find("ends early"), std::string::npos);
  for (const auto& f : out) EXPECT_EQ(f.severity, Severity::kWarning) << f.id;
}

TEST(KernelLogReadCheck, AGoodLogOrNoLogGivesNothing) {
  KernelLogRead good;
  good.lines = 100;
  good.log_lines = 97;
  std::vector<Finding> out;
  check_kernel_log_read(input_with(good), out);
  EXPECT_TRUE(out.empty());
  DoctorInput none;  // --no-kmsg
  check_kernel_log_read(none, out);
  EXPECT_TRUE(out.empty());
}

// ---- the live kernel log: /dev/kmsg, else journalctl --------------------------------------

class LiveLog : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "kernel-log-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const char* name, const std::string& text, bool executable = false) {
    std::string p = dir_ + "/" + name;
    std::ofstream(p) << text;
    if (executable) ::chmod(p.c_str(), 0755);
    return p;
  }
  std::string dir_;
  // The journal's deadline is real time: the stand-in journalctl is a real process.
  const SystemClock clock_;
};

TEST_F(LiveLog, ReadsTheWholeKmsgBufferFromTheStart) {
  LiveKernelLogSources s;
  s.kmsg_path = write("kmsg",
                      "6,1,0,-;Linux version 6.1.0\n"
                      "4,2,5000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off "
                      "the bus.\n");
  KernelLogOptions o;
  o.boot_time_ns = 1'000 * kNsPerSec;
  auto log = read_live_kernel_log(clock_, o, s);
  ASSERT_TRUE(log) << log.error().what();
  EXPECT_EQ(log->source, s.kmsg_path);
  ASSERT_EQ(log->events.size(), 1u);
  EXPECT_EQ(log->events[0].time_ns, 1'005 * kNsPerSec);
}

// Without a boot time in the options, it is the injected clock's wall minus monotonic time: on a
// ManualClock the two are equal, so the boot is at 0 and a record 5 s after it is at 5 s.
TEST_F(LiveLog, BootTimeComesFromTheInjectedClock) {
  LiveKernelLogSources s;
  s.kmsg_path = write("kmsg",
                      "4,2,5000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off "
                      "the bus.\n");
  const ManualClock manual(1'700'000'000LL * kNsPerSec);
  auto log = read_live_kernel_log(manual, {}, s);
  ASSERT_TRUE(log) << log.error().what();
  ASSERT_EQ(log->events.size(), 1u);
  EXPECT_EQ(log->events[0].time_ns, 5 * kNsPerSec);
}

TEST_F(LiveLog, FallsBackToTheJournal) {
  LiveKernelLogSources s;
  s.kmsg_path = dir_ + "/no-kmsg";
  s.journalctl = write("journalctl",
                       "#!/bin/sh\n"
                       "echo \"$@\" > \"$(dirname \"$0\")/args\"\n"
                       "echo '2024-03-05T22:23:56+0000 gpu01 kernel: NVRM: Xid (PCI:0000:3b:00): "
                       "48, pid=1, name=x, DBE'\n",
                       true);
  auto log = read_live_kernel_log(clock_, {}, s);
  ASSERT_TRUE(log) << log.error().what();
  EXPECT_EQ(log->source, "journalctl -k");
  ASSERT_EQ(log->events.size(), 1u);
  EXPECT_EQ(log->events[0].xid, 48);
  std::ifstream args(dir_ + "/args");
  std::string line;
  std::getline(args, line);
  EXPECT_EQ(line, "-k -b -o short-iso --no-pager");
}

TEST_F(LiveLog, JournalCutAtTheDeadlineKeepsWhatArrived) {
  LiveKernelLogSources s;
  s.kmsg_path = dir_ + "/no-kmsg";
  s.journalctl = write("journalctl",
                       "#!/bin/sh\n"
                       "echo '2024-03-05T22:23:56+0000 gpu01 kernel: NVRM: Xid (PCI:0000:3b:00): "
                       "79, GPU has fallen off the bus.'\n"
                       "exec sleep 30\n",
                       true);
  s.journal_timeout = 300 * kNsPerMs;
  auto log = read_live_kernel_log(clock_, {}, s);
  ASSERT_TRUE(log) << log.error().what();
  EXPECT_EQ(log->events.size(), 1u);
  EXPECT_NE(log->source.find("cut short"), std::string::npos) << log->source;
}

TEST_F(LiveLog, NeitherSourceIsAnErrorNamingBoth) {
  LiveKernelLogSources s;
  s.kmsg_path = dir_ + "/no-kmsg";
  s.journalctl = dir_ + "/no-journalctl";
  auto log = read_live_kernel_log(clock_, {}, s);
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().what().find("no-kmsg"), std::string::npos) << log.error().what();
  EXPECT_NE(log.error().what().find("no-journalctl"), std::string::npos) << log.error().what();

  s.journalctl = write("journalctl", "#!/bin/sh\necho '-- No entries --'\n", true);
  auto empty = read_live_kernel_log(clock_, {}, s);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().what().find("no kernel messages"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::doctor
