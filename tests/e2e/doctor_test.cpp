// SPDX-License-Identifier: Apache-2.0
// `cardiac doctor` end to end: the binary over the fake NVML, captured host trees and kernel
// logs; each scenario gives the expected finding with category, severity and first action.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/core/tests/temp_dir.h"
#include "src/doctor/tests/lossy_responder.h"
#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

const std::string kFixtures = CARDIAC_FIXTURES_DIR;
const std::string kHost = kFixtures + "/hosts/debian-gpu-8x";
const std::string kIowait = kFixtures + "/hosts/iowait-bottleneck";
const std::string kMinimal = kFixtures + "/hosts/minimal";

struct Doctor {
  RunResult run;
  nlohmann::json j;
};

// A quick run: one sample, no probes, no live kernel log.
Doctor doctor(const std::string& scenario, std::vector<std::string> extra = {},
              const std::string& root = kHost) {
  std::vector<std::string> args = {"doctor", "--json",   "--nvml-lib", FAKE_NVML_PATH, "--root",
                                   root,     "--window", "0",          "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  if (std::find(extra.begin(), extra.end(), "--kmsg") == extra.end()) args.push_back("--no-kmsg");
  if (std::find(extra.begin(), extra.end(), "--probe") == extra.end()) {
    args.push_back("--no-probe");
  }
  Doctor d;
  d.run = run_cardiac(args, {scenario_env(scenario)});
  d.j = nlohmann::json::parse(d.run.out, nullptr, false);
  return d;
}

const nlohmann::json* finding(const nlohmann::json& j, const std::string& id,
                              std::optional<unsigned> gpu = {}) {
  if (!j.contains("findings")) return nullptr;
  for (const auto& f : j["findings"]) {
    if (f["id"] != id) continue;
    if (gpu && (!f["gpu"].is_object() || f["gpu"]["index"] != *gpu)) continue;
    return &f;
  }
  return nullptr;
}

std::string ids(const nlohmann::json& j) {
  std::string s;
  if (!j.contains("findings")) return j.dump();
  for (const auto& f : j["findings"]) {
    s += f["id"].get<std::string>() + "(" + f["severity"].get<std::string>() + ") ";
  }
  return s;
}

struct Expect {
  std::string scenario;
  std::string id;
  std::optional<unsigned> gpu;
  std::string category;
  std::string severity;
  std::string first_action;  // a phrase of the first action
  std::string root = kHost;
};

void PrintTo(const Expect& e, std::ostream* os) {
  *os << e.scenario << " -> " << e.id;
}

class DoctorScenario : public ::testing::TestWithParam<Expect> {};

TEST_P(DoctorScenario, GivesTheExpectedFinding) {
  const Expect& e = GetParam();
  Doctor d = doctor(e.scenario, {}, e.root);
  ASSERT_FALSE(d.j.is_discarded()) << d.run.out << d.run.err;
  EXPECT_EQ(d.j["schema"], "cardiac.doctor/v1");
  const auto* f = finding(d.j, e.id, e.gpu);
  ASSERT_NE(f, nullptr) << "no " << e.id << " in: " << ids(d.j) << "\n" << d.run.err;
  EXPECT_EQ((*f)["category"], e.category);
  EXPECT_EQ((*f)["severity"], e.severity);
  ASSERT_FALSE((*f)["actions"].empty());
  std::string first = (*f)["actions"][0];
  EXPECT_NE(first.find(e.first_action), std::string::npos) << first;
  EXPECT_FALSE((*f)["evidence"].empty());
  EXPECT_EQ(d.run.exit_code, 1) << "findings above info exit 1";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, DoctorScenario,
                         ::testing::Values(Expect{"thermal-throttle.json", "gpu.thermal.slowdown",
                                                  1, "hardware", "warning", "airflow"},
                                           Expect{"ecc-dbe.json", "gpu.ecc.dbe", std::nullopt,
                                                  "hardware", "critical", "reset"},
                                           Expect{"gpu-lost.json", "gpu.lost", std::nullopt,
                                                  "hardware", "critical", "reboot"},
                                           Expect{"pcie-degraded.json", "gpu.pcie.degraded",
                                                  std::nullopt, "hardware", "warning", "reseat"},
                                           Expect{"healthy-8xh100.json", "driver.dstate_nvidia",
                                                  std::nullopt, "driver", "critical", "reboot"},
                                           Expect{"version-mismatch.json",
                                                  "driver.version_mismatch", std::nullopt, "driver",
                                                  "critical", "eboot"},
                                           Expect{"driver-not-loaded.json", "driver.not_loaded",
                                                  std::nullopt, "driver", "critical", "modprobe"},
                                           Expect{"data-loading.json", "resources.gpu_starved", 0,
                                                  "resources", "warning", "iostat", kIowait}),
                         [](const ::testing::TestParamInfo<Expect>& p) {
                           std::string s = p.param.scenario.substr(0, p.param.scenario.find('.'));
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

TEST(Doctor, DataLoadingBottleneckNamesTheDiskAndTheProcess) {
  Doctor d = doctor("data-loading.json", {}, kIowait);
  const auto* f = finding(d.j, "resources.gpu_starved", 0);
  ASSERT_NE(f, nullptr) << ids(d.j) << d.run.err;
  std::string title = (*f)["title"];
  EXPECT_NE(title.find("data loading"), std::string::npos) << title;
  EXPECT_NE(title.find("51820"), std::string::npos) << title;
  EXPECT_NE((*f)["explanation"].get<std::string>().find("nvme0n1"), std::string::npos);
}

TEST(Doctor, SuspectCardGetsTheCrossCheckPlan) {
  Doctor d = doctor("gpu-lost.json");
  const auto* f = finding(d.j, "gpu.lost");
  ASSERT_NE(f, nullptr) << ids(d.j);
  ASSERT_TRUE((*f)["cross_check"].is_object()) << f->dump(2);
  EXPECT_FALSE((*f)["cross_check"]["steps"].empty());
  EXPECT_GE((*f)["cross_check"]["outcomes"].size(), 2U);
  EXPECT_NE((*f)["cross_check"]["environment"].get<std::string>().find("25"), std::string::npos);
}

// The captured 8-GPU host without its hung nvidia-smi: a machine with nothing wrong.
// Each test copies into its own directory: ctest runs the tests of this file in parallel.
std::string healthy_host(const cardiac::testing::TempDir& tmp) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(tmp.path()) / "host";
  fs::copy(kHost, dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove_all(dir / "proc" / "48213");
  return dir.string();
}

TEST(Doctor, HealthyMachineExitsZero) {
  cardiac::testing::TempDir tmp;
  Doctor d = doctor("healthy-8xh100.json", {}, healthy_host(tmp));
  ASSERT_FALSE(d.j.is_discarded()) << d.run.out << d.run.err;
  EXPECT_EQ(d.run.exit_code, 0) << ids(d.j);
  for (const auto& f : d.j["findings"]) EXPECT_EQ(f["severity"], "info") << f.dump(2);
}

// A small machine with only an Intel graphics device on its PCI bus.
std::string plain_host(const cardiac::testing::TempDir& tmp) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(tmp.path()) / "host";
  fs::copy(kMinimal, dir, fs::copy_options::recursive);
  fs::path dev = dir / "sys/bus/pci/devices/0000:00:02.0";
  fs::create_directories(dev);
  std::ofstream(dev / "vendor") << "0x8086\n";
  std::ofstream(dev / "device") << "0x46a6\n";
  std::ofstream(dev / "class") << "0x030000\n";
  return dir.string();
}

TEST(Doctor, PlainMachineWithoutDriverGivesAUsefulReport) {
  // No NVML library and no NVIDIA device on the bus: an informative report, not an error.
  // The default library search is what a plain machine runs; on a machine with a driver it
  // would find the real library, so there is nothing to show there.
  if (void* real = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(real);
    GTEST_SKIP() << "an NVML library is installed here";
  }
  cardiac::testing::TempDir tmp;
  std::string root = plain_host(tmp);
  auto r = run_cardiac(
      {"doctor", "--json", "--root", root, "--window", "0", "--quiet", "--no-probe", "--no-kmsg"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << ids(j);
  const auto* f = finding(j, "driver.nvml_missing");
  ASSERT_NE(f, nullptr) << ids(j);
  EXPECT_EQ((*f)["severity"], "info");
  // And in text, the same run reads as a report.
  auto t = run_cardiac(
      {"doctor", "--root", root, "--window", "0", "--quiet", "--no-probe", "--no-kmsg"});
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("No NVIDIA GPU"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("rror"), std::string::npos) << t.out;
}

TEST(Doctor, PlainMachineDefaultRunWithNoLibrary) {
  // The same plain machine on every host, a real NVML installed or not: the library is forced
  // to a path that does not exist. A library the user named is a configuration matter
  // (telemetry reports it as library_unusable, not as "no driver installed"), so the report
  // says so and points at the flag, while every other source is still judged. A default run,
  // probes included; the only near target is loopback, so no real gateway is probed. The live
  // kernel log is left out: it is this machine's, not the plain host's.
  cardiac::testing::TempDir tmp;
  std::string root = plain_host(tmp);
  auto r =
      run_cardiac({"doctor", "--json", "--root", root, "--window", "0", "--quiet", "--nvml-lib",
                   "/nonexistent/libnvidia-ml.so.1", "--gateway", "127.0.0.1", "--no-kmsg"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << ids(j);
  const auto* f = finding(j, "driver.nvml_unusable");
  ASSERT_NE(f, nullptr) << ids(j);
  EXPECT_EQ((*f)["category"], "driver");
  EXPECT_EQ((*f)["severity"], "warning") << "no NVIDIA device on the bus: not critical";
  ASSERT_FALSE((*f)["actions"].empty());
  EXPECT_NE((*f)["actions"][0].get<std::string>().find("--nvml-lib"), std::string::npos);
  EXPECT_EQ(j["summary"]["problems"], 1) << ids(j);
  EXPECT_EQ(j["sources"]["gpu_samples"], 1);
  for (const auto& s : j["sources"]["skipped"]) {
    EXPECT_EQ(s.get<std::string>().find("network"), std::string::npos) << s;
  }
  EXPECT_EQ(finding(j, "network.loss"), nullptr) << ids(j);
}

TEST(Doctor, ProgressGoesToStderrUnlessQuiet) {
  // Not a terminal here: one line per stage on stderr, never on stdout, nothing with --quiet.
  cardiac::testing::TempDir tmp;
  std::string root = plain_host(tmp);
  std::vector<std::string> args = {
      "doctor",    "--json",    "--root",     root,
      "--window",  "0",         "--nvml-lib", "/nonexistent/libnvidia-ml.so.1",
      "--gateway", "127.0.0.1", "--no-kmsg"};
  auto loud = run_cardiac(args);
  EXPECT_EQ(loud.exit_code, 1) << loud.err;  // the named library that is not there
  EXPECT_NE(loud.err.find("cardiac doctor: sampling"), std::string::npos) << loud.err;
  EXPECT_NE(loud.err.find("cardiac doctor: probing"), std::string::npos) << loud.err;
  EXPECT_FALSE(nlohmann::json::parse(loud.out, nullptr, false).is_discarded()) << loud.out;
  EXPECT_EQ(loud.out.find("sampling"), std::string::npos);
  EXPECT_EQ(loud.out.find("probing"), std::string::npos);

  args.emplace_back("--quiet");
  auto quiet = run_cardiac(args);
  EXPECT_EQ(quiet.exit_code, 1) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  EXPECT_FALSE(nlohmann::json::parse(quiet.out, nullptr, false).is_discarded()) << quiet.out;
}

TEST(Doctor, KernelLogOfflineFindsFallenOffBusWithAer) {
  auto r = run_cardiac({"doctor", "--json", "--offline", "--root", kHost, "--kmsg",
                        kFixtures + "/kmsg/xid79-aer-surprise-down.dmesg", "--quiet"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1);
  const auto* f = finding(j, "xid.79");
  ASSERT_NE(f, nullptr) << ids(j);
  EXPECT_EQ((*f)["severity"], "critical");
  EXPECT_TRUE((*f)["cross_check"].is_object());
  bool saw_xid = false;
  for (const auto& e : j["events"]) {
    if (e["kind"] == "xid" && e["xid"] == 79) saw_xid = true;
  }
  EXPECT_TRUE(saw_xid);
}

// The probe evidence of a responder that delays every echo by `delay_ms`: each answered
// probe's round trip is at least that (the delay is a lower bound), in the series and the text.
void expect_rtt_at_least(const nlohmann::json& ev, double delay_ms) {
  EXPECT_EQ(ev["kind"], "probe") << ev.dump(2);
  EXPECT_EQ(ev["metric"], "rtt") << ev.dump(2);
  EXPECT_EQ(ev["unit"], "ms");
  ASSERT_FALSE(ev["series"].empty()) << ev.dump(2);
  for (const auto& point : ev["series"]) {
    if (point[1].is_null()) continue;  // a lost probe has no round trip
    EXPECT_GE(point[1].get<double>(), delay_ms) << ev.dump(2);
  }
  const std::string text = ev["text"];
  auto median = text.find("median ");
  ASSERT_NE(median, std::string::npos) << text;
  EXPECT_GE(std::stod(text.substr(median + 7)), delay_ms) << text;
}

TEST(Doctor, NetworkLossOnOneFarTargetIsRemote) {
  // Near target and one far target clean, the other far target drops one packet in four: the
  // problem is that remote host, not this one or the path.
  using doctor::loopback::EchoBehaviour;
  using doctor::loopback::UdpEchoResponder;
  const SystemClock clock;  // the responders delay their echoes in real time
  auto near_ok = UdpEchoResponder::start({}, clock);
  auto far_ok = UdpEchoResponder::start({}, clock);
  EchoBehaviour lossy;
  lossy.drop_pattern = EchoBehaviour::drop_every(4);
  lossy.delays = {20 * kNsPerMs};
  auto far_bad = UdpEchoResponder::start(lossy, clock);
  ASSERT_TRUE(near_ok && far_ok && far_bad);
  Doctor d = doctor("healthy-8xh100.json",
                    {"--probe", (*far_bad)->target(), "--probe", (*far_ok)->target(), "--gateway",
                     (*near_ok)->target()},
                    kMinimal);
  ASSERT_FALSE(d.j.is_discarded()) << d.run.out << d.run.err;
  const auto* f = finding(d.j, "network.loss");
  ASSERT_NE(f, nullptr) << ids(d.j) << d.run.err;
  EXPECT_EQ((*f)["category"], "network");
  std::string text = (*f)["title"].get<std::string>() + (*f)["explanation"].get<std::string>();
  EXPECT_NE(text.find("remote"), std::string::npos) << text;
  EXPECT_NE(text.find((*far_bad)->target().substr(6)), std::string::npos) << text;
  EXPECT_GT((*far_bad)->dropped(), 0U);
  // Two of ten lost (20 %) is critical; the first step is to look at that remote host.
  EXPECT_EQ((*f)["severity"], "critical");
  ASSERT_FALSE((*f)["actions"].empty());
  std::string first = (*f)["actions"][0];
  EXPECT_EQ(first.rfind("Check 127.0.0.1 itself", 0), 0U) << first;
  expect_rtt_at_least((*f)["evidence"][0], 20.0);
}

TEST(Doctor, NetworkLossOnEveryFarTargetIsThePath) {
  using doctor::loopback::EchoBehaviour;
  using doctor::loopback::UdpEchoResponder;
  const SystemClock clock;  // the responders delay their echoes in real time
  auto near_ok = UdpEchoResponder::start({}, clock);
  EchoBehaviour lossy;
  lossy.drop_pattern = EchoBehaviour::drop_every(3);
  lossy.delays = {15 * kNsPerMs};
  auto far_bad = UdpEchoResponder::start(lossy, clock);
  ASSERT_TRUE(near_ok && far_bad);
  Doctor d = doctor("healthy-8xh100.json",
                    {"--probe", (*far_bad)->target(), "--gateway", (*near_ok)->target()}, kMinimal);
  const auto* f = finding(d.j, "network.loss");
  ASSERT_NE(f, nullptr) << ids(d.j) << d.run.err;
  std::string text = (*f)["title"].get<std::string>() + (*f)["explanation"].get<std::string>();
  EXPECT_NE(text.find("path"), std::string::npos) << text;
  // Three of ten lost is critical; the first step finds the hop where the loss starts.
  EXPECT_EQ((*f)["severity"], "critical");
  ASSERT_FALSE((*f)["actions"].empty());
  std::string first = (*f)["actions"][0];
  EXPECT_NE(first.find("mtr -rwzc 100 127.0.0.1"), std::string::npos) << first;
  expect_rtt_at_least((*f)["evidence"][0], 15.0);
}

TEST(Doctor, FormatsRenderTheSameRun) {
  auto md = run_cardiac({"doctor", "--markdown", "--nvml-lib", FAKE_NVML_PATH, "--root", kHost,
                         "--window", "0", "--quiet", "--no-probe", "--no-kmsg"},
                        {scenario_env("ecc-dbe.json")});
  EXPECT_EQ(md.exit_code, 1);
  EXPECT_NE(md.out.find("# "), std::string::npos);
  cardiac::testing::TempDir tmp;
  std::string html_path = tmp.file("doctor-report.html");
  auto html = run_cardiac({"doctor", "--html", "-o", html_path, "--nvml-lib", FAKE_NVML_PATH,
                           "--root", kHost, "--window", "0", "--quiet", "--no-probe", "--no-kmsg"},
                          {scenario_env("thermal-throttle.json")});
  EXPECT_EQ(html.exit_code, 1) << html.err;
  std::ifstream in(html_path);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("<svg"), std::string::npos) << "a chart of the temperature";
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
}

TEST(Doctor, BadInputNamesTheProblem) {
  auto missing = run_cardiac(
      {"doctor", "--offline", "--root", kHost, "--kmsg", "/nonexistent/kern.log", "--quiet"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/kern.log"), std::string::npos) << missing.err;

  auto root = run_cardiac({"doctor", "--offline", "--root", "/nonexistent-root", "--quiet"});
  EXPECT_EQ(root.exit_code, 2);
  EXPECT_NE(root.err.find("/nonexistent-root"), std::string::npos) << root.err;

  auto dir_log = run_cardiac(
      {"doctor", "--offline", "--root", kHost, "--kmsg", kFixtures + "/kmsg", "--quiet"});
  EXPECT_EQ(dir_log.exit_code, 2) << dir_log.err;

  auto no_proc = run_cardiac({"doctor", "--offline", "--root", kFixtures, "--quiet"});
  EXPECT_EQ(no_proc.exit_code, 2) << "a directory that is not a host tree is bad input";
  EXPECT_NE(no_proc.err.find("proc/"), std::string::npos) << no_proc.err;

  auto window = run_cardiac({"doctor", "--offline", "--root", kHost, "--window", "soon"});
  EXPECT_EQ(window.exit_code, 2);
  EXPECT_NE(window.err.find("--window"), std::string::npos) << window.err;

  auto both = run_cardiac({"doctor", "--offline", "--json", "--html"});
  EXPECT_EQ(both.exit_code, 2);

  auto db = run_cardiac({"doctor", "--offline", "--root", kHost, "--db", "/nonexistent/x.db"});
  EXPECT_EQ(db.exit_code, 2);
  EXPECT_NE(db.err.find("/nonexistent/x.db"), std::string::npos) << db.err;
}

// The README's doctor commands, read from the README itself: the block after "The doctor on a
// captured host", continuation lines joined, one command per line, with the paths made absolute
// (./build/cardiac, the fake NVML and /tmp/report.html become this build's and a temporary file).
std::vector<std::vector<std::string>> readme_doctor_commands(const std::string& report) {
  std::ifstream in(std::string(CARDIAC_SOURCE_DIR) + "/README.md");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto start = text.find("The doctor on a captured host");
  start = text.find("```sh\n", start);
  auto end = text.find("```", start + 6);
  if (start == std::string::npos || end == std::string::npos) return {};
  std::string block = text.substr(start + 6, end - start - 6);
  for (std::size_t p; (p = block.find("\\\n")) != std::string::npos;) block.replace(p, 2, " ");
  std::vector<std::vector<std::string>> commands;
  std::istringstream lines(block);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> argv;
    for (std::string w; words >> w;) {
      if (w.rfind("tests/fixtures/", 0) == 0 || w.find("=tests/fixtures/") != std::string::npos) {
        w.replace(w.find("tests/fixtures"), 14, kFixtures);
      }
      if (w == "build/tests/fake_nvml/libnvidia-ml.so.1") w = FAKE_NVML_PATH;
      if (w == "./build/cardiac") w = CARDIAC_BINARY;
      if (w == "/tmp/report.html") w = report;
      argv.push_back(w);
    }
    if (!argv.empty()) commands.push_back(std::move(argv));
  }
  return commands;
}

TEST(Doctor, ReadmeExamplesShowWhatTheyPromise) {
  cardiac::testing::TempDir tmp;
  const std::string report = tmp.file("readme-report.html");
  auto commands = readme_doctor_commands(report);
  ASSERT_EQ(commands.size(), 2U) << "the README's doctor block changed";

  // 1. The data loader starves GPU 0: that finding, and nothing critical that is not there.
  auto& first = commands[0];
  ASSERT_EQ(first[0].rfind("CARDIAC_FAKE_NVML_SCENARIO=", 0), 0U) << first[0];
  std::pair<std::string, std::string> env{"CARDIAC_FAKE_NVML_SCENARIO",
                                          first[0].substr(first[0].find('=') + 1)};
  ASSERT_EQ(first[1], CARDIAC_BINARY);
  std::vector<std::string> args(first.begin() + 2, first.end());
  auto text = run_cardiac(args, {env});
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_EQ(text.out.find("[CRITICAL]"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("data loading"), std::string::npos) << text.out;
  args.insert(args.end(), {"--json", "--quiet"});
  auto json = run_cardiac(args, {env});
  auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out << json.err;
  for (const auto& f : j["findings"]) EXPECT_NE(f["severity"], "critical") << f.dump(2);
  EXPECT_NE(finding(j, "resources.gpu_starved", 0), nullptr) << ids(j);

  // 2. The fallen-off-the-bus GPU with AER, as one HTML file.
  auto& second = commands[1];
  ASSERT_EQ(second[0], CARDIAC_BINARY);
  std::filesystem::remove(report);
  auto html = run_cardiac(std::vector<std::string>(second.begin() + 1, second.end()));
  EXPECT_EQ(html.exit_code, 1) << html.err;
  std::ifstream in(report);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("Xid 79"), std::string::npos);
  EXPECT_NE(page.find("Surprise Down"), std::string::npos);
  EXPECT_EQ(page.find("lines looked like a kernel log"), std::string::npos);
}

TEST(Doctor, HostTreeThatCannotBeReadExitsThree) {
  // The tree is there but its proc/ cannot be read: nothing to judge, exit 3. A symlink loop
  // fails for every user; a proc/ with no permissions fails only for one without CAP_DAC_*.
  namespace fs = std::filesystem;
  cardiac::testing::TempDir tmp;
  fs::path loop = fs::path(tmp.path()) / "loop";
  fs::create_directories(loop);
  fs::create_directory_symlink("proc", loop / "proc");
  auto r = run_cardiac({"doctor", "--offline", "--root", loop.string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find(loop.string()), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");

  if (geteuid() != 0) {
    fs::path locked = fs::path(tmp.path()) / "locked";
    fs::create_directories(locked / "proc");
    fs::permissions(locked / "proc", fs::perms::none);
    auto p = run_cardiac({"doctor", "--offline", "--root", locked.string(), "--quiet"});
    fs::permissions(locked / "proc", fs::perms::owner_all);
    EXPECT_EQ(p.exit_code, 3) << p.err;
  }
}

}  // namespace
}  // namespace cardiac::e2e
