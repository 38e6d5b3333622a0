// SPDX-License-Identifier: Apache-2.0
// check_security on captured host trees (tests/fixtures/hosts/sec-*): each sign of compromise
// fires on the tree made for it, with its evidence and next steps, and on no clean tree.
#include <gtest/gtest.h>

#include "core/format.h"
#include "doctor/checks/checks.h"
#include "doctor/security_facts.h"
#include "doctor/tests/support.h"
#include "platform/fs.h"

namespace cardiac::doctor {
namespace {

constexpr TimeNs kSecurityT0 = 1'764'000'000 * kNsPerSec;

std::string fixture(std::string_view name) {
  return std::string(CARDIAC_FIXTURES_DIR) + "/hosts/" + std::string(name);
}

DoctorInput host_input(const std::string& root, const std::vector<std::uint32_t>& gpu_pids = {}) {
  DoctorInput in;
  in.now = kSecurityT0;
  auto fs = std::make_shared<RootFs>(root);
  in.fs = fs;
  in.security = read_security_facts(*fs, gpu_pids);
  return in;
}

std::vector<Finding> run_security(const DoctorInput& in) {
  std::vector<Finding> out;
  check_security(in, out);
  return out;
}

std::string evidence_text(const Finding& f) {
  std::string s;
  for (const auto& e : f.evidence) s += e.text + "\n";
  return s;
}

std::string actions_text(const Finding& f) {
  std::string s;
  for (const auto& a : f.actions) s += a + "\n";
  return s;
}

// Every security finding says how to isolate, keep the evidence, scan and reinstall.
void expect_response_steps(const Finding& f) {
  const std::string a = actions_text(f);
  EXPECT_NE(a.find("Isolate the host"), std::string::npos) << f.id << a;
  EXPECT_NE(a.find("Preserve the evidence"), std::string::npos) << f.id << a;
  EXPECT_NE(a.find("rkhunter --check"), std::string::npos) << f.id << a;
  EXPECT_NE(a.find("reinstall it from a known-good image"), std::string::npos) << f.id << a;
  EXPECT_EQ(category_name(f.category), "security");
}

TEST(ProcNet, ParsesAddressesPortsStatesAndInodes) {
  auto rows = parse_proc_net(
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
      "inode\n"
      "   0: 0100007F:0CF7 00000000:0000 0A 00000000:00000000 00:00000000 00000000   997        0 "
      "31337 1 0000000000000000 100 0 0 10 0\n"
      "   1: 0F02000A:B2F4 076433C6:0D05 01 00000000:00000000 00:00000000 00000000  1002        0 "
      "26001 1 0000000000000000 100 0 0 10 0\n"
      "   2: short row\n",
      "tcp");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].local_address, "127.0.0.1");
  EXPECT_EQ(rows[0].local_port, 3319U);
  EXPECT_TRUE(rows[0].listening());
  EXPECT_EQ(rows[0].uid, 997U);
  EXPECT_EQ(rows[0].inode, 31337U);
  EXPECT_EQ(rows[1].remote_address, "198.51.100.7");
  EXPECT_EQ(rows[1].remote_port, 3333U);
  EXPECT_FALSE(rows[1].listening());
  auto six = parse_proc_net(
      "  sl  local_address                         remote_address                        st\n"
      "   0: 00000000000000000000000001000000:0016 00000000000000000000000000000000:0000 0A "
      "00000000:00000000 00:00000000 00000000     0        0 21007 1\n",
      "tcp6");
  ASSERT_EQ(six.size(), 1U);
  EXPECT_EQ(six[0].local_address, "::1");
  EXPECT_EQ(six[0].family(), "tcp");
}

TEST(CheckSecurity, DeletedExecutable) {
  auto found = run_security(host_input(fixture("sec-deleted-exe")));
  ASSERT_EQ(found.size(), 1U) << hw_test::ids(found);
  const Finding& f = found[0];
  EXPECT_EQ(f.id, "security.deleted_executable");
  EXPECT_EQ(severity_name(f.severity), "warning");
  const std::string e = evidence_text(f);
  EXPECT_NE(e.find("pid 3101 (cache-helper, user bob)"), std::string::npos) << e;
  EXPECT_NE(e.find("/usr/local/bin/.cache-helper (deleted)"), std::string::npos) << e;
  EXPECT_NE(actions_text(f).find("cp /proc/3101/exe /root/evidence/3101.exe"), std::string::npos);
  expect_response_steps(f);
}

// After an upgrade a daemon runs the replaced file: the path is there again. That is likely
// harmless (info, restart it); memfd never had a path and stays a warning.
TEST(CheckSecurity, DeletedButReplacedIsInfoAndMemfdIsNot) {
  auto fs = std::make_shared<MemFs>();
  fs->add_file("/proc/900/stat", "900 (sshd) S 1 900 900 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1\n");
  fs->add_file("/proc/900/cmdline", std::string("/usr/sbin/sshd\0-D\0", 18));
  fs->add_link("/proc/900/exe", "/usr/sbin/sshd (deleted)");
  fs->add_file("/usr/sbin/sshd", "ELF");
  DoctorInput in;
  in.fs = fs;
  in.security = read_security_facts(*fs, {});
  auto found = run_security(in);
  ASSERT_EQ(found.size(), 1U) << hw_test::ids(found);
  EXPECT_EQ(severity_name(found[0].severity), "info");
  EXPECT_NE(actions_text(found[0]).find("systemctl restart"), std::string::npos);

  fs->add_file("/proc/901/stat", "901 (x) S 1 901 901 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1\n");
  fs->add_link("/proc/901/exe", "/memfd:payload (deleted)");
  in.security = read_security_facts(*fs, {});
  found = run_security(in);
  ASSERT_EQ(found.size(), 1U) << hw_test::ids(found);
  EXPECT_EQ(severity_name(found[0].severity), "warning");
  EXPECT_NE(evidence_text(found[0]).find("/memfd:payload"), std::string::npos);
  EXPECT_EQ(evidence_text(found[0]).find("sshd"), std::string::npos);  // the upgrade is not news
}

// Numbers wider than the kernel's fields are not read as the number they wrap to: a passwd
// UID of 2^32 is not root's name, a state of 0x10000000A is not LISTEN
// (fuzz/crashes-found/security_facts-…).
TEST(SecurityFacts, NumbersWiderThanTheirFieldDoNotWrap) {
  MemFs fs;
  fs.add_file("/etc/passwd", "evil:x:4294967296:0::/:/bin/sh\nroot:x:0:0:root:/root:/bin/bash\n");
  fs.add_file("/proc/1/stat", "1 (init) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1\n");
  fs.add_file("/proc/1/status", "Name:\tinit\nUid:\t0\t0\t0\t0\n");
  fs.add_file("/proc/2/stat", "2 (x) S 1 2 2 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1\n");
  fs.add_file("/proc/2/status", "Name:\tx\nUid:\t4294967296\t0\t0\t0\n");
  fs.add_file("/proc/net/tcp",
              "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
              "timeout inode\n"
              "   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
              "0 101 1\n"
              "   1: 00000000:1F90 00000000:0000 10000000A 00000000:00000000 00:00000000 00000000 "
              "0 0 102 1\n"
              "   2: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000 "
              "4294967296 0 103 1\n");
  const auto facts = read_security_facts(fs, {});
  ASSERT_EQ(facts.processes.size(), 2U);
  EXPECT_EQ(facts.processes[0].user, "root");
  EXPECT_EQ(facts.processes[1].uid, std::nullopt);
  ASSERT_EQ(facts.sockets.size(), 1U);
  EXPECT_EQ(facts.sockets[0].inode, 101U);
  ASSERT_EQ(facts.uid0_accounts.size(), 1U);
  EXPECT_EQ(facts.uid0_accounts[0].name, "root");
}

TEST(CheckSecurity, TmpExecutable) {
  auto found = run_security(host_input(fixture("sec-tmp-exe")));
  ASSERT_EQ(found.size(), 1U) << hw_test::ids(found);
  const Finding& f = found[0];
  EXPECT_EQ(f.id, "security.tmp_executable");
  EXPECT_EQ(severity_name(f.severity), "warning");
  EXPECT_NE(evidence_text(f).find("pid 4711 (kworkerd, user www-data), executable "
                                  "/dev/shm/.x/kworkerd: /dev/shm/.x/kworkerd -B"),
            std::string::npos)
      << evidence_text(f);
  expect_response_steps(f);
}

TEST(CheckSecurity, Uid0Account) {
  auto found = run_security(host_input(fixture("sec-uid0")));
  ASSERT_EQ(found.size(), 1U) << hw_test::ids(found);
  const Finding& f = found[0];
  EXPECT_EQ(f.id, "security.uid0_account");
  EXPECT_EQ(severity_name(f.severity), "critical");
  EXPECT_NE(f.title.find("toor"), std::string::npos) << f.title;
  ASSERT_EQ(f.evidence.size(), 1U);
  EXPECT_EQ(f.evidence[0].text, "toor:x:0:0::/root:/bin/bash");
  EXPECT_EQ(f.evidence[0].source, "/etc/passwd:7");
  EXPECT_NE(actions_text(f).find("usermod -L -e 1 toor"), std::string::npos);
  expect_response_steps(f);
}

DoctorInput listen_input() {
  DoctorInput in = host_input(fixture("sec-listen"));
  in.config.allowed_listen_ports = {{"tcp", 22, 22}, {"udp", 53, 53}};
  return in;
}

TEST(CheckSecurity, NewListeningPortAgainstTheConfiguredList) {
  auto found = run_security(listen_input());
  ASSERT_EQ(found.size(), 1U) << hw_test::ids(found);
  const Finding& f = found[0];
  EXPECT_EQ(f.id, "security.new_listening_port");
  EXPECT_EQ(severity_name(f.severity), "warning");
  // Only nc's port: ssh and the resolver are allowed, NCCL's port is a Slurm job's, the UDP
  // socket on 45000 is a client's.
  EXPECT_EQ(f.title, "New listening port: tcp/4444");
  ASSERT_EQ(f.evidence.size(), 1U);
  EXPECT_EQ(f.evidence[0].text,
            "tcp 0.0.0.0:4444 listening, pid 5150 (nc, user www-data), executable "
            "/usr/bin/nc.openbsd: nc -lvp 4444");
  EXPECT_NE(actions_text(f).find("iptables -I INPUT -p tcp --dport 4444 -j DROP"),
            std::string::npos);
  expect_response_steps(f);
}

TEST(CheckSecurity, NoBaselineNoListeningFinding) {
  DoctorInput in = listen_input();
  in.config.allowed_listen_ports.clear();
  EXPECT_TRUE(run_security(in).empty()) << hw_test::ids(run_security(in));
}

// With the agent's store: a port it saw while learning the host is known; one first seen
// after that, within the last week, is new; one seen for longer than that is the host's normal.
TEST(CheckSecurity, NewListeningPortAgainstTheStore) {
  DoctorInput in = listen_input();
  in.config.allowed_listen_ports.clear();
  const TimeNs day = 86400 * kNsPerSec;
  in.seen_listen_ports = std::vector<SeenListenPort>{
      {"tcp", 22, kSecurityT0 - 30 * day, kSecurityT0},
      {"udp", 53, kSecurityT0 - 30 * day + 60 * kNsPerSec, kSecurityT0}};
  auto found = run_security(in);
  ASSERT_EQ(found.size(), 1U) << hw_test::ids(found);
  EXPECT_EQ(found[0].title, "New listening port: tcp/4444");
  EXPECT_NE(found[0].explanation.find("the agent had not seen it"), std::string::npos);

  in.seen_listen_ports->push_back({"tcp", 4444, kSecurityT0 - 2 * day, kSecurityT0});
  EXPECT_EQ(run_security(in).size(), 1U);  // first seen two days ago: still new
  in.seen_listen_ports->back().first_seen = kSecurityT0 - 8 * day;
  EXPECT_TRUE(run_security(in).empty()) << hw_test::ids(run_security(in));
}

// GPU samples over the window: every GPU at `util` %, GPU i held by pids[i].
std::vector<nvml::GpuSnapshot> gpu_window(const std::vector<std::uint32_t>& pids, unsigned util,
                                          std::size_t samples = 10,
                                          const std::string& job_of_2 = "123") {
  std::vector<nvml::GpuSnapshot> out;
  for (std::size_t s = 0; s < samples; ++s) {
    nvml::GpuSnapshot snap;
    snap.available = true;
    snap.taken_at = kSecurityT0 + static_cast<TimeNs>(s) * kNsPerSec;
    for (unsigned i = 0; i < pids.size(); ++i) {
      nvml::GpuReading r;
      r.index = i;
      r.uuid = fmt::format("GPU-{}", i);
      r.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + i);
      r.health = nvml::DeviceHealth::kOk;
      r.utilization_gpu = util;
      r.sampled_at = snap.taken_at;
      nvml::GpuProcess p;
      p.pid = pids[i];
      p.type = "compute";
      if (i == 2 && !job_of_2.empty()) {
        p.job = job_of_2;
        p.job_source = "slurm";
        p.job_from = "cgroup";
      }
      r.processes.push_back(p);
      snap.gpus.push_back(std::move(r));
    }
    out.push_back(std::move(snap));
  }
  return out;
}

DoctorInput gpu_input(unsigned util, std::size_t samples = 10) {
  const std::vector<std::uint32_t> pids = {6001, 6002, 6003, 6004};
  DoctorInput in = host_input(fixture("sec-gpu-miner"), pids);
  in.gpu_samples = gpu_window(pids, util, samples);
  in.config.allowed_gpu_commands = {"/opt/transcode/bin/*"};
  return in;
}

TEST(CheckSecurity, GpuCryptojackingAndAnUnknownGpuProcess) {
  auto found = run_security(gpu_input(98));
  ASSERT_EQ(found.size(), 2U) << hw_test::ids(found);
  const Finding* miner = hw_test::find(found, "security.gpu_cryptojacking");
  ASSERT_NE(miner, nullptr) << hw_test::ids(found);
  EXPECT_EQ(severity_name(miner->severity), "critical");
  EXPECT_EQ(confidence_name(miner->confidence), "high");
  EXPECT_EQ(miner->gpu.index, 0U);
  const std::string e = evidence_text(*miner);
  EXPECT_NE(e.find("names a mining pool (stratum+tcp://"), std::string::npos) << e;
  EXPECT_NE(e.find("connected to 198.51.100.7:3333, a mining-pool port"), std::string::npos) << e;
  EXPECT_NE(e.find("GPU 0 at 70 % utilization or more in 10 of 10 samples"), std::string::npos)
      << e;
  EXPECT_NE(actions_text(*miner).find("iptables -I OUTPUT"), std::string::npos);
  expect_response_steps(*miner);

  const Finding* unknown = hw_test::find(found, "security.unknown_gpu_process");
  ASSERT_NE(unknown, nullptr) << hw_test::ids(found);
  EXPECT_EQ(severity_name(unknown->severity), "warning");
  EXPECT_EQ(unknown->gpu.index, 1U);
  EXPECT_NE(unknown->title.find("pid 6002 (python3)"), std::string::npos) << unknown->title;
  EXPECT_NE(actions_text(*unknown).find("allowed_gpu_commands"), std::string::npos);
  expect_response_steps(*unknown);
  // pid 6003 is Slurm job 123's, pid 6004 is on the allow list: neither is named.
  for (const auto& f : found) {
    EXPECT_EQ(f.title.find("6003"), std::string::npos);
    EXPECT_EQ(f.title.find("6004"), std::string::npos);
  }
}

TEST(CheckSecurity, TheAllowListMatchesRegexesToo) {
  DoctorInput in = gpu_input(98);
  in.config.allowed_gpu_commands = {"re:^python3 render\\.py", "*encoder*"};
  auto found = run_security(in);
  ASSERT_EQ(found.size(), 1U) << hw_test::ids(found);
  EXPECT_EQ(found[0].id, "security.gpu_cryptojacking");
}

// The job is known from /proc when the samples did not carry it (the cgroup names job 123).
TEST(CheckSecurity, AJobKnownOnlyFromProcIsStillAJob) {
  const std::vector<std::uint32_t> pids = {6001, 6002, 6003, 6004};
  DoctorInput in = host_input(fixture("sec-gpu-miner"), pids);
  in.gpu_samples = gpu_window(pids, 98, 10, "");
  in.config.allowed_gpu_commands = {"/opt/transcode/bin/*"};
  EXPECT_EQ(run_security(in).size(), 2U) << hw_test::ids(run_security(in));
}

TEST(CheckSecurity, NotBusyOrNotLongEnoughIsNoFinding) {
  EXPECT_TRUE(run_security(gpu_input(30)).empty());     // the GPUs are not busy
  EXPECT_TRUE(run_security(gpu_input(98, 2)).empty());  // two samples say nothing about "for long"
  DoctorInput in = gpu_input(98);
  // Busy in only half of the window.
  for (std::size_t s = 0; s < in.gpu_samples.size(); s += 2) {
    for (auto& g : in.gpu_samples[s].gpus) g.utilization_gpu = 10;
  }
  EXPECT_TRUE(run_security(in).empty()) << hw_test::ids(run_security(in));
}

// The clean trees have no sign of compromise: the HGX capture, the Slurm node, the minimal one.
TEST(CheckSecurity, CleanTreesHaveNoFinding) {
  for (const char* name : {"debian-gpu-8x", "slurm-node-2numa", "minimal", "old-kernel"}) {
    DoctorInput in = host_input(fixture(name));
    in.config.allowed_listen_ports = {{"tcp", 22, 22}};
    auto found = run_security(in);
    EXPECT_TRUE(found.empty()) << name << ": " << hw_test::ids(found);
    EXPECT_EQ(in.security->exe_unreadable, 0U) << name;
  }
  // And diagnose() runs the check: the same trees give no security finding there either.
  DoctorInput in = host_input(fixture("debian-gpu-8x"));
  for (const auto& f : diagnose(in).findings) EXPECT_NE(category_name(f.category), "security");
  EXPECT_NE(
      hw_test::find(diagnose(host_input(fixture("sec-uid0"))).findings, "security.uid0_account"),
      nullptr);
}

}  // namespace
}  // namespace cardiac::doctor
