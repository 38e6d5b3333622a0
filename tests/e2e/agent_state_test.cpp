// SPDX-License-Identifier: Apache-2.0
// A broken agent never looks healthy, and its store is nobody else's: NVML unusable → a start
// warning, /healthz 503 with the reason, the nvml_unavailable alert through a notifier,
// cardiac_nvml_available 0 and GPU jobs refused; `status` over unreadable host files is not
// OK; the state directory and store are owner-only (or group-readable by configuration) and
// a too-open one is tightened; read commands open the store read-only and explain what they
// cannot open; an agent on a corrupt store says what is wrong and how to recover. The tests
// that need a second Unix user create one and skip unless root.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/e2e/unix_user.h"

namespace cardiac::e2e {
namespace {

mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// How the three ways NVML fails on a real machine reach the agent.
struct NvmlFault {
  std::string name;
  std::string scenario;  // the fake NVML's scenario
  bool bad_library;      // a mistyped library path instead
  std::string kind;      // the error kind /healthz names
};

void PrintTo(const NvmlFault& f, std::ostream* os) {
  *os << f.name;
}

class NvmlUnusable : public ::testing::TestWithParam<NvmlFault> {};

TEST_P(NvmlUnusable, AgentSaysSoEverywhere) {
  const NvmlFault& f = GetParam();
  auto sc = scenario(f.scenario);
  const std::string notes_name = "notes.json";
  AgentProcess agent(sc.dump(), "");
  const std::string notes = agent.dir() + "/" + notes_name;
  std::string cfg = read_text(agent.config_path());
  if (f.bad_library) {
    cfg.replace(cfg.find(FAKE_NVML_PATH), std::string(FAKE_NVML_PATH).size(),
                agent.dir() + "/libnvidia-ml.so.typo");
  }
  // Notifiers are top-level tables: they go before the [nvml] table.
  cfg = "[[notifier]]\ntype = \"exec\"\nargv = [\"/usr/bin/tee\", \"-a\", \"" + notes + "\"]\n" +
        "[queue]\nenabled = true\n" + cfg;
  std::ofstream(agent.config_path(), std::ios::trunc) << cfg;
  agent.agent_keys("interval = \"200ms\"\n");
  const std::string log = agent.dir() + "/agent.log";
  ASSERT_TRUE(agent.launch(log));

  std::pair<int, std::string> health;
  ASSERT_TRUE(eventually([&] {
    health = agent.get("/healthz");
    return health.first == 503;
  })) << health.first
      << " " << health.second;
  EXPECT_NE(health.second.find("NVML unavailable (" + f.kind + ")"), std::string::npos)
      << health.second;

  EXPECT_TRUE(eventually([&] {
    return agent.get("/metrics").second.find("cardiac_nvml_available{hostname=") !=
           std::string::npos;
  }));
  const std::string metrics = agent.get("/metrics").second;
  auto at = metrics.find("cardiac_nvml_available{hostname=");
  ASSERT_NE(at, std::string::npos);
  const std::string line = metrics.substr(at, metrics.find('\n', at) - at);
  EXPECT_EQ(line.substr(line.rfind(' ') + 1), "0") << line;

  // The critical alert fires and a person hears of it.
  ASSERT_TRUE(eventually([&] {
    return read_text(notes).find("nvml_unavailable") != std::string::npos;
  })) << read_text(notes);
  auto alerts = nlohmann::json::parse(agent.get("/api/v1/alerts").second, nullptr, false);
  ASSERT_TRUE(alerts.is_array()) << alerts;
  bool firing = false;
  for (const auto& a : alerts) {
    if (a.value("rule", "") == "nvml_unavailable") {
      firing = a.value("state", "") == "firing" && a.value("severity", "") == "critical";
    }
  }
  EXPECT_TRUE(firing) << alerts.dump(2);

  // The warning is in the log from the start, with the reason.
  const std::string logged = read_text(log);
  EXPECT_NE(logged.find("NVML unavailable (" + f.kind + ")"), std::string::npos) << logged;

  // A GPU job would wait for ever: refused with the reason.
  RunResult submit =
      run_cardiac({"submit", "--gpus", "1", "--state-dir", agent.state_dir(), "--", "/bin/true"});
  EXPECT_EQ(submit.exit_code, 3) << submit.out << submit.err;
  EXPECT_NE(submit.err.find("no GPU has been seen"), std::string::npos) << submit.err;
  EXPECT_NE(submit.err.find(f.kind), std::string::npos) << submit.err;
  EXPECT_EQ(agent.terminate(), 0);
}

INSTANTIATE_TEST_SUITE_P(Faults, NvmlUnusable,
                         ::testing::Values(NvmlFault{"driver_not_loaded", "driver-not-loaded.json",
                                                     false, "driver_not_loaded"},
                                           NvmlFault{"version_mismatch", "version-mismatch.json",
                                                     false, "version_mismatch"},
                                           NvmlFault{"mistyped_library", "healthy-8xh100.json",
                                                     true, "library_unusable"}),
                         [](const auto& p) { return p.param.name; });

TEST(AgentState, HealthyNvmlStillAnswers200AndJobsAreAccepted) {
  auto sc = scenario("healthy-8xh100.json");
  for (auto& d : sc["devices"]) d["processes"] = nlohmann::json::array();
  AgentProcess agent(sc.dump(), "[queue]\nenabled = true\n");
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());
  ASSERT_TRUE(eventually([&] {
    auto s = agent.get("/api/v1/status");
    return s.second.find("\"gpus\"") != std::string::npos;
  }));
  RunResult submit = run_cardiac(
      {"submit", "-q", "--gpus", "1", "--state-dir", agent.state_dir(), "--", "/bin/true"});
  EXPECT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_EQ(agent.get("/healthz").first, 200);
}

TEST(StatusHost, UnreadableHostFilesAreShownNotOk) {
  const std::string garbage = std::string(CARDIAC_FIXTURES_DIR) + "/hosts/garbage";
  RunResult text = run_cardiac({"status", "--nvml-lib", FAKE_NVML_PATH, "--root", garbage},
                               {scenario_env("healthy-8xh100.json")});
  EXPECT_EQ(text.exit_code, 1) << text.out << text.err;
  EXPECT_EQ(text.out.find("Host OK"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Host WARN"), std::string::npos) << text.out;
  for (const char* file : {"/proc/stat", "/proc/meminfo", "/proc/loadavg", "/proc/uptime"}) {
    EXPECT_NE(text.out.find(std::string("could not read ") + file), std::string::npos)
        << file << "\n"
        << text.out;
  }

  RunResult json =
      run_cardiac({"status", "--json", "--nvml-lib", FAKE_NVML_PATH, "--root", garbage},
                  {scenario_env("healthy-8xh100.json")});
  EXPECT_EQ(json.exit_code, 1);
  auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << json.out;
  EXPECT_EQ(j["host"]["verdict"], "WARN");
  std::size_t read_errors = 0;
  for (const auto& r : j["host"]["reasons"]) read_errors += r["code"] == "host_read_error";
  EXPECT_EQ(read_errors, j["host"]["errors"].size());
  EXPECT_GE(read_errors, 5u) << j["host"].dump(2);
}

TEST(AgentState, StateDirectoryAndStoreAreOwnerOnlyAndTightened) {
  // Without the queue nobody else needs to reach anything in the directory.
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "[queue]\nenabled = false\n");
  agent.agent_keys("interval = \"200ms\"\n");
  // As an older cardiac left it: world-readable directory and store.
  std::filesystem::create_directories(agent.state_dir());
  ::chmod(agent.state_dir().c_str(), 0755);
  std::ofstream(agent.state_dir() + "/cardiac.db").flush();
  ::chmod((agent.state_dir() + "/cardiac.db").c_str(), 0644);
  const std::string log = agent.dir() + "/agent.log";
  ASSERT_TRUE(agent.launch(log));
  ASSERT_TRUE(eventually([&] { return agent.get("/healthz").first == 200; }));
  EXPECT_EQ(mode_of(agent.state_dir()), 0700u);
  for (const char* f : {"/cardiac.db", "/cardiac.db-wal", "/cardiac.db-shm"}) {
    EXPECT_EQ(mode_of(agent.state_dir() + f), 0600u) << f;
  }
  const std::string logged = read_text(log);
  EXPECT_NE(logged.find(agent.state_dir() + ": mode 0755 → 0700"), std::string::npos) << logged;
  EXPECT_EQ(agent.terminate(), 0);
}

TEST(AgentState, GroupMayReadTheStoreWhenConfigured) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  const group* g = getgrgid(getegid());
  ASSERT_NE(g, nullptr);
  agent.agent_keys("interval = \"200ms\"\ngroup = \"" + std::string(g->gr_name) + "\"\n");
  ASSERT_TRUE(agent.start());
  // The queue (on by default) needs others to reach queue.sock: search permission only.
  EXPECT_EQ(mode_of(agent.state_dir()), 0751u);
  EXPECT_EQ(mode_of(agent.state_dir() + "/cardiac.db"), 0640u);
  struct stat st {};
  ASSERT_EQ(::stat((agent.state_dir() + "/cardiac.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, getegid());
}

TEST(AgentState, UnknownGroupIsAConfigurationError) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.agent_keys("group = \"no-such-group-cardiac\"\n");
  RunResult r = run_cardiac({"agent", "--config", agent.config_path()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no-such-group-cardiac"), std::string::npos) << r.err;
}

// A second local user: cannot read the store at all by default; reads it, read-only and
// without SQL errors, when in the configured group.
class SecondUser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "creates a Unix user: needs root";
    std::string tag = std::to_string(getpid() % 100000);
    user_ = std::make_unique<TestUser>("cs" + tag + "u");
    ASSERT_TRUE(user_->ok()) << "useradd failed";
  }
  void start(const std::string& agent_keys) {
    agent_ = std::make_unique<AgentProcess>(scenario("healthy-8xh100.json").dump(), "");
    agent_->agent_keys("interval = \"200ms\"\n" + agent_keys);
    ::chmod(agent_->dir().c_str(), 0755);
    client_ = agent_->dir() + "/cardiac";
    std::filesystem::copy_file(CARDIAC_BINARY, client_);
    ::chmod(client_.c_str(), 0755);
    ASSERT_TRUE(agent_->start());
    // Something to read: a kernel-log event.
    std::ofstream(agent_->dir() + "/kern.log", std::ios::app)
        << "[  1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n";
    ASSERT_TRUE(eventually([&] {
      auto r = run_cardiac({"events", "--json", "--state-dir", agent_->state_dir()});
      return r.out.find("Xid") != std::string::npos || r.out.find("xid") != std::string::npos;
    }));
  }
  RunResult as_user(const std::vector<std::string>& args) {
    return run_as(user_.get(), client_, "/", agent_->state_dir(), args);
  }

  std::unique_ptr<TestUser> user_;
  std::unique_ptr<AgentProcess> agent_;
  std::string client_;
};

TEST_F(SecondUser, CannotReadTheStore) {
  start("");
  const std::string db = agent_->state_dir() + "/cardiac.db";
  RunResult r = as_user({"events", "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find(db), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("Xid"), std::string::npos) << r.out;
  // Not through cardiac either: the file itself.
  RunResult cat = run_as(user_.get(), "/bin/cat", "/", agent_->state_dir(), {db});
  EXPECT_NE(cat.exit_code, 0);
  EXPECT_TRUE(cat.out.empty());
}

TEST_F(SecondUser, GroupMemberReadsWithoutSqlErrorsAndWritesNothing) {
  const std::string group = "cs" + std::to_string(getpid() % 100000) + "g";
  ASSERT_EQ(std::system(("groupadd " + group + " 2>/dev/null").c_str()), 0);
  std::system(("usermod -a -G " + group + " " + user_->name()).c_str());
  start("group = \"" + group + "\"\n");
  const std::string db = agent_->state_dir() + "/cardiac.db";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"events", "--json"},
        {"incidents", "--json"},
        {"alerts", "list", "--json"},
        {"history", "--metric", "gpu_temperature", "--gpu", "0"}}) {
    RunResult r = run_as(user_.get(), client_, "/", agent_->state_dir(), args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.err.find("readonly"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("SQL"), std::string::npos) << r.err;
  }
  // Stopped agent, no -wal/-shm left: still readable, still nothing written.
  EXPECT_EQ(agent_->terminate(), 0);
  const auto size = std::filesystem::file_size(db);
  RunResult r = run_as(user_.get(), client_, "/", agent_->state_dir(), {"events", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("79"), std::string::npos) << r.out;
  EXPECT_EQ(std::filesystem::file_size(db), size);
  agent_.reset();
  std::system(("groupdel " + group + " 2>/dev/null").c_str());
}

TEST(ReadCommands, EmptyOrMissingStoreIsExplainedAndNeverWritten) {
  char tmpl[] = "/tmp/cardiac-ro-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  const std::string db = dir + "/cardiac.db";
  std::ofstream(db).flush();
  for (const std::vector<std::string>& args : {std::vector<std::string>{"events"},
                                               {"incidents"},
                                               {"alerts", "list"},
                                               {"history", "--metric", "gpu_temperature"}}) {
    std::vector<std::string> full = args;
    full.insert(full.end(), {"--state-dir", dir});
    RunResult r = run_cardiac(full);
    EXPECT_EQ(r.exit_code, 3) << args[0] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(db), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no tables yet"), std::string::npos) << r.err;
    EXPECT_EQ(std::filesystem::file_size(db), 0u) << args[0];
  }
  const std::string host = std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x";
  RunResult doctor = run_cardiac({"doctor", "--offline", "--root", host, "--db", db});
  EXPECT_EQ(doctor.exit_code, 2) << doctor.out << doctor.err;
  EXPECT_NE(doctor.err.find("no tables yet"), std::string::npos) << doctor.err;
  EXPECT_EQ(std::filesystem::file_size(db), 0u);
  std::filesystem::remove(db);
  RunResult missing = run_cardiac({"events", "--state-dir", dir});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("no agent store here"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(db));
  std::filesystem::remove_all(dir);
}

TEST(AgentState, CorruptStoreIsExplainedWithARecoveryHint) {
  char tmpl[] = "/tmp/cardiac-corrupt-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  const std::string db = dir + "/cardiac.db";
  std::ofstream(db) << std::string(8192, 'x');
  std::filesystem::create_directories(dir + "/jobs");
  std::ofstream(dir + "/jobs/7.out") << "job output\n";
  const std::string cfg = dir + "/cardiac.toml";
  std::ofstream(cfg) << "[agent]\nstate_dir = \"" << dir
                     << "\"\nlisten = \"127.0.0.1:" << free_port() << "\"\n";
  RunResult r = run_cardiac({"agent", "--config", cfg});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find(db), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not an SQLite database"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mv " + db + " " + db + ".broken"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("file is not a database"), std::string::npos) << r.err;
  // Nothing is deleted or rewritten.
  EXPECT_EQ(read_text(db), std::string(8192, 'x'));
  EXPECT_EQ(read_text(dir + "/jobs/7.out"), "job output\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cardiac::e2e
