// SPDX-License-Identifier: Apache-2.0
// `cardiac doctor` end to end on input it must not take at face value: rotated kernel logs
// compressed as logrotate leaves them, a file that is no kernel log, the same captured input
// run twice (the report must not change by a byte), and a probe answered by a refusal.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/subprocess.h"
#include "src/core/tests/temp_dir.h"
#include "src/doctor/tests/lossy_responder.h"
#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

const std::string kInputFixtures = CARDIAC_FIXTURES_DIR;
const std::string kInputHost = kInputFixtures + "/hosts/debian-gpu-8x";
const std::string kInputMinimal = kInputFixtures + "/hosts/minimal";
const std::string kKmsg = kInputFixtures + "/kmsg/";

nlohmann::json parse(const RunResult& r) {
  return nlohmann::json::parse(r.out, nullptr, false);
}

const nlohmann::json* input_finding(const nlohmann::json& j, const std::string& id) {
  if (!j.contains("findings")) return nullptr;
  for (const auto& f : j["findings"]) {
    if (f["id"] == id) return &f;
  }
  return nullptr;
}

std::string input_ids(const nlohmann::json& j) {
  if (!j.contains("findings")) return j.dump();
  std::string s;
  for (const auto& f : j["findings"]) {
    s += f["id"].get<std::string>() + "(" + f["severity"].get<std::string>() + ") ";
  }
  return s;
}

std::string copy_to_temp(const cardiac::testing::TempDir& tmp, const std::string& from,
                         const std::string& name) {
  namespace fs = std::filesystem;
  fs::path to = fs::path(tmp.path()) / name;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  return to.string();
}

// logrotate's kern.log.1.gz (and .xz, .zst exports): read through the system libraries, so the
// critical Xid 48 inside is found, as in the plain log; also with a name that says nothing.
TEST(DoctorInput, CompressedKernelLogsAreRead) {
  cardiac::testing::TempDir tmp;
  const std::vector<std::string> files = {
      kKmsg + "xid48-dbe.syslog.1.gz", kKmsg + "xid48-dbe.syslog.2.xz",
      kKmsg + "xid48-dbe.syslog.3.zst",
      copy_to_temp(tmp, kKmsg + "xid48-dbe.syslog.1.gz", "kern.log.renamed")};
  for (const auto& file : files) {
    auto r = run_cardiac({"doctor", "--json", "--offline", "--root", kInputMinimal, "--kmsg", file,
                          "--year", "2024", "--quiet"});
    auto j = parse(r);
    ASSERT_FALSE(j.is_discarded()) << file << ": " << r.out << r.err;
    EXPECT_EQ(r.exit_code, 1) << file;
    const auto* f = input_finding(j, "xid.48");
    ASSERT_NE(f, nullptr) << file << ": " << input_ids(j);
    EXPECT_EQ((*f)["severity"], "critical");
    EXPECT_EQ(input_finding(j, "kmsg.unrecognised"), nullptr) << input_ids(j);
  }
  auto text = run_cardiac({"doctor", "--offline", "--root", kInputMinimal, "--kmsg",
                           kKmsg + "xid48-dbe.syslog.1.gz", "--color", "never", "--quiet"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_EQ(text.out.find("No problems found"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Xid 48"), std::string::npos) << text.out;
}

// A file that is no kernel log at all (here a shared library): a warning saying so, exit 1,
// never "No problems found".
TEST(DoctorInput, BinaryKernelLogIsAWarningNotACleanBill) {
  auto r = run_cardiac({"doctor", "--offline", "--root", kInputMinimal, "--kmsg", FAKE_NVML_PATH,
                        "--color", "never", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("No problems found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is binary data, not a kernel log"), std::string::npos) << r.out;
  auto j = parse(run_cardiac({"doctor", "--json", "--offline", "--root", kInputMinimal, "--kmsg",
                              FAKE_NVML_PATH, "--quiet"}));
  const auto* f = input_finding(j, "kmsg.unrecognised");
  ASSERT_NE(f, nullptr) << input_ids(j);
  EXPECT_EQ((*f)["severity"], "warning");
  const std::string size = std::to_string(std::filesystem::file_size(FAKE_NVML_PATH));
  EXPECT_EQ((*f)["title"].get<std::string>(), std::string(FAKE_NVML_PATH) +
                                                  " is binary data, not a kernel log: " + size +
                                                  " bytes, 0 lines read");
}

// An executable as the kernel log: binary, not "31 of 494 lines looked like a kernel log"
// because some of the bytes between its newlines happened to look like log prefixes.
TEST(DoctorInput, AnExecutableIsBinaryNotAPartlyReadLog) {
  cardiac::testing::TempDir tmp;
  const std::string exe = copy_to_temp(tmp, "/bin/ls", "ls-as-kmsg");
  auto j = parse(run_cardiac(
      {"doctor", "--json", "--offline", "--root", kInputMinimal, "--kmsg", exe, "--quiet"}));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(input_finding(j, "kmsg.partly_recognised"), nullptr) << input_ids(j);
  const auto* f = input_finding(j, "kmsg.unrecognised");
  ASSERT_NE(f, nullptr) << input_ids(j);
  EXPECT_NE((*f)["title"].get<std::string>().find("binary data, not a kernel log"),
            std::string::npos)
      << (*f)["title"];
  EXPECT_TRUE(j["events"].empty()) << j["events"].dump();
}

// --db names an input, not the agent's own store: a file that is no store is said to be one,
// without the agent's advice to move it aside (here a program, then an SQLite file damaged).
TEST(DoctorInput, ADbThatIsNoStoreIsSaidSoWithoutRecoveryAdvice) {
  cardiac::testing::TempDir tmp;
  const std::string exe = copy_to_temp(tmp, "/bin/ls", "ls-as-db");
  auto r = run_cardiac({"doctor", "--offline", "--db", exe, "--no-kmsg", "--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(exe), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not a cardiac store: not an SQLite database"), std::string::npos) << r.err;
  for (const char* advice : {"mv ", ".broken", "stop the agent", "start the agent"}) {
    EXPECT_EQ(r.err.find(advice), std::string::npos) << advice << " in: " << r.err;
  }
}

// A store the agent wrote keeps GPU samples by index: the header counts the GPUs they name
// instead of saying "none found" above findings about them.
TEST(DoctorInput, TheAgentStoresGpusAreCounted) {
  char tmpl[] = "/tmp/cardiac-doctor-db-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db = dir + "/cardiac.db";
  SpawnOptions so;
  so.argv = {CARDIAC_BINARY, "agent",       "--nvml-lib", FAKE_NVML_PATH, "--state-dir", dir,
             "--listen",     "127.0.0.1:0", "--interval", "100ms"};
  so.env = {{"CARDIAC_FAKE_NVML_SCENARIO", kInputFixtures + "/scenarios/thermal-throttle.json"}};
  so.pipe_stdin = false;
  so.pipe_stdout = false;
  const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull >= 0) so.pass_fds = {{devnull, 2}};
  auto agent = Child::spawn(so);
  if (devnull >= 0) ::close(devnull);
  ASSERT_TRUE(agent);
  const std::vector<std::string> args = {"doctor", "--json",    "--offline", "--db",
                                         db,       "--no-kmsg", "--quiet"};
  nlohmann::json j;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = run_cardiac(args);
    j = parse(r);
    if (!j.is_discarded() && j["sources"]["gpu_samples"].get<int>() > 0) break;
  }
  agent->signal(SIGKILL);
  agent->wait();
  ASSERT_FALSE(j.is_discarded());
  ASSERT_GT(j["sources"]["gpu_samples"].get<int>(), 0) << j.dump();
  EXPECT_EQ(j["gpus"].size(), 8U) << j["gpus"].dump();
  auto text = run_cardiac({"doctor", "--offline", "--db", db, "--no-kmsg", "--color", "never"});
  EXPECT_EQ(text.out.find("GPUs: none found"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GPUs: 8 (by index, from the history's samples)"), std::string::npos)
      << text.out;
  std::filesystem::remove_all(dir);
}

// Offline, the report is a function of the files it read: the same run at another time and in
// another time zone gives the same bytes, in every format.
TEST(DoctorInput, OfflineReportIsTheSameBytesEveryRun) {
  const std::vector<std::vector<std::string>> formats = {
      {"--color", "never"}, {"--json"}, {"--markdown"}, {"--html"}};
  for (const auto& format : formats) {
    std::vector<std::string> args = {"doctor", "--offline",
                                     "--root", kInputHost,
                                     "--kmsg", kKmsg + "xid79-aer-surprise-down.dmesg",
                                     "--quiet"};
    args.insert(args.end(), format.begin(), format.end());
    auto a = run_cardiac(args, {{"TZ", "UTC"}});
    auto b = run_cardiac(args, {{"TZ", "Asia/Kolkata"}});
    EXPECT_EQ(a.exit_code, 1) << a.err;
    EXPECT_EQ(a.out, b.out) << format.front();
    EXPECT_FALSE(a.out.empty());
  }
}

const nlohmann::json* xid_event(const nlohmann::json& j, int xid) {
  for (const auto& e : j["events"]) {
    if (e["kind"] == "xid" && e["xid"] == xid) return &e;
  }
  return nullptr;
}

// Event times come from the log: its own wall stamps, else the boot time the captured --root
// recorded (btime in its proc/stat) plus the monotonic stamp, else no time but the monotonic one.
TEST(DoctorInput, OfflineEventTimesComeFromTheLogAndTheCapture) {
  const std::string dmesg = kKmsg + "xid79-aer-surprise-down.dmesg";
  auto with_root = parse(
      run_cardiac({"doctor", "--json", "--offline", "--root", kInputHost, "--kmsg", dmesg, "-q"}));
  const auto* e = xid_event(with_root, 79);
  ASSERT_NE(e, nullptr) << with_root.dump();
  // btime 1796229247 + 74889.644138 s.
  EXPECT_EQ((*e)["time"], "2026-12-03T13:22:16.644Z") << e->dump();
  EXPECT_EQ((*e)["monotonic_us"], 74889644138LL);
  EXPECT_TRUE(with_root["generated_at"].is_null()) << "the tree does not say when it was taken";

  // Without --root the tree is this machine's, whose boot has nothing to do with the log.
  auto bare = parse(run_cardiac({"doctor", "--json", "--offline", "--kmsg", dmesg, "-q"}));
  e = xid_event(bare, 79);
  ASSERT_NE(e, nullptr) << bare.dump();
  EXPECT_TRUE((*e)["time"].is_null()) << e->dump();
  EXPECT_EQ((*e)["monotonic_us"], 74889644138LL);

  // Syslog lines carry their own wall time (the year given, as the format has none).
  auto syslog = parse(run_cardiac({"doctor", "--json", "--offline", "--kmsg",
                                   kKmsg + "xid48-dbe.syslog", "--year", "2024", "-q"}));
  e = xid_event(syslog, 48);
  ASSERT_NE(e, nullptr) << syslog.dump();
  EXPECT_EQ((*e)["time"], "2024-12-02T11:38:47.000Z") << e->dump();
}

// A TCP target that refuses the connection answered: the path works, the port is closed. Not a
// critical network finding; the probe is listed under what was looked at, like one that passed.
TEST(DoctorInput, RefusedConnectionIsNotACriticalNetworkFinding) {
  auto closed = doctor::loopback::ClosedTcpPort::reserve();
  const SystemClock clock;  // the responder answers over a real socket
  auto near = doctor::loopback::UdpEchoResponder::start({}, clock);
  ASSERT_TRUE(closed && near);
  auto r = run_cardiac(
      {"doctor", "--json", "--nvml-lib", FAKE_NVML_PATH, "--root", kInputMinimal, "--window", "0",
       "--quiet", "--no-kmsg", "--probe", (*closed)->target(), "--gateway", (*near)->target()},
      {scenario_env("healthy-8xh100.json")});
  auto j = parse(r);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  for (const auto& f : j["findings"]) {
    if (f["category"] == "network") {
      EXPECT_NE(f["severity"], "critical") << f.dump(2);
    }
  }
  const auto* f = input_finding(j, "network.port_closed");
  ASSERT_NE(f, nullptr) << input_ids(j);
  EXPECT_EQ((*f)["severity"], "warning");
  const auto& probes = j["sources"]["probes"];
  ASSERT_EQ(probes.size(), 2U) << j["sources"].dump(2);
  bool gateway_ok = false;
  bool closed_listed = false;
  for (const auto& p : probes) {
    const std::string line = p;
    if (line.rfind((*near)->target(), 0) == 0 && line.size() > 4 &&
        line.substr(line.size() - 4) == ": ok") {
      gateway_ok = true;
    }
    if (line.find((*closed)->target()) != std::string::npos &&
        line.find("port closed") != std::string::npos) {
      closed_listed = true;
    }
  }
  EXPECT_TRUE(gateway_ok) << probes.dump(2);
  EXPECT_TRUE(closed_listed) << probes.dump(2);
}

}  // namespace
}  // namespace cardiac::e2e
