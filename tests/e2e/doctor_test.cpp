// SPDX-License-Identifier: Apache-2.0
// `cardiac doctor` end to end: the binary over the fake NVML, captured host trees and kernel
// logs; each scenario gives the expected finding with category, severity and first action.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

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

INSTANTIATE_TEST_SUITE_P(
    Scenarios, DoctorScenario,
    ::testing::Values(
        Expect{"thermal-throttle.json", "gpu.thermal.slowdown", 1, "hardware", "warning",
               "airflow"},
        Expect{"ecc-dbe.json", "gpu.ecc.dbe", std::nullopt, "hardware", "critical", "reset"},
        Expect{"gpu-lost.json", "gpu.lost", std::nullopt, "hardware", "critical", "reboot"},
        Expect{"pcie-degraded.json", "gpu.pcie.degraded", std::nullopt, "hardware", "warning", ""},
        Expect{"healthy-8xh100.json", "driver.dstate_nvidia", std::nullopt, "driver", "critical",
               "reboot"},
        Expect{"version-mismatch.json", "driver.version_mismatch", std::nullopt, "driver",
               "critical", "eboot"},
        Expect{"driver-not-loaded.json", "driver.not_loaded", std::nullopt, "driver", "critical",
               "modprobe"},
        Expect{"data-loading.json", "resources.gpu_starved", 0, "resources", "warning", "iostat",
               kIowait}),
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
std::string healthy_host() {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "doctor-healthy-host";
  fs::remove_all(dir);
  fs::copy(kHost, dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove_all(dir / "proc" / "48213");
  return dir.string();
}

TEST(Doctor, HealthyMachineExitsZero) {
  Doctor d = doctor("healthy-8xh100.json", {}, healthy_host());
  ASSERT_FALSE(d.j.is_discarded()) << d.run.out << d.run.err;
  EXPECT_EQ(d.run.exit_code, 0) << ids(d.j);
  for (const auto& f : d.j["findings"]) EXPECT_EQ(f["severity"], "info") << f.dump(2);
}

// A small machine with only an Intel graphics device on its PCI bus.
std::string plain_host() {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "doctor-plain-host";
  fs::remove_all(dir);
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
  std::string root = plain_host();
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

TEST(Doctor, NetworkLossOnOneFarTargetIsRemote) {
  // Near target and one far target clean, the other far target drops one packet in four: the
  // problem is that remote host, not this one or the path.
  using doctor::loopback::EchoBehaviour;
  using doctor::loopback::UdpEchoResponder;
  auto near_ok = UdpEchoResponder::start({});
  auto far_ok = UdpEchoResponder::start({});
  EchoBehaviour lossy;
  lossy.drop_pattern = EchoBehaviour::drop_every(4);
  lossy.delays = {20 * kNsPerMs};
  auto far_bad = UdpEchoResponder::start(lossy);
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
}

TEST(Doctor, NetworkLossOnEveryFarTargetIsThePath) {
  using doctor::loopback::EchoBehaviour;
  using doctor::loopback::UdpEchoResponder;
  auto near_ok = UdpEchoResponder::start({});
  EchoBehaviour lossy;
  lossy.drop_pattern = EchoBehaviour::drop_every(3);
  auto far_bad = UdpEchoResponder::start(lossy);
  ASSERT_TRUE(near_ok && far_bad);
  Doctor d = doctor("healthy-8xh100.json",
                    {"--probe", (*far_bad)->target(), "--gateway", (*near_ok)->target()}, kMinimal);
  const auto* f = finding(d.j, "network.loss");
  ASSERT_NE(f, nullptr) << ids(d.j) << d.run.err;
  std::string text = (*f)["title"].get<std::string>() + (*f)["explanation"].get<std::string>();
  EXPECT_NE(text.find("path"), std::string::npos) << text;
}

TEST(Doctor, FormatsRenderTheSameRun) {
  auto md = run_cardiac({"doctor", "--markdown", "--nvml-lib", FAKE_NVML_PATH, "--root", kHost,
                         "--window", "0", "--quiet", "--no-probe", "--no-kmsg"},
                        {scenario_env("ecc-dbe.json")});
  EXPECT_EQ(md.exit_code, 1);
  EXPECT_NE(md.out.find("# "), std::string::npos);
  std::string html_path = ::testing::TempDir() + "/doctor-report.html";
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

  auto window = run_cardiac({"doctor", "--offline", "--root", kHost, "--window", "soon"});
  EXPECT_EQ(window.exit_code, 2);
  EXPECT_NE(window.err.find("--window"), std::string::npos) << window.err;

  auto both = run_cardiac({"doctor", "--offline", "--json", "--html"});
  EXPECT_EQ(both.exit_code, 2);

  auto db = run_cardiac({"doctor", "--offline", "--root", kHost, "--db", "/nonexistent/x.db"});
  EXPECT_EQ(db.exit_code, 2);
  EXPECT_NE(db.err.find("/nonexistent/x.db"), std::string::npos) << db.err;
}

}  // namespace
}  // namespace cardiac::e2e
