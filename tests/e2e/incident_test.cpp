// SPDX-License-Identifier: Apache-2.0
// `cardiac incident list` and `cardiac incident remediate` against a running agent and its real
// store: the lifecycle listed, a remediation recorded under the caller's own user through the
// control socket, a wrong id and a wrong action refused, another Unix user refused (root only),
// nothing changed without an agent.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>

#include <vector>

#include "store/incidents.h"
#include "store/schema.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/e2e/unix_user.h"

namespace cardiac::e2e {
namespace {

std::string current_user() {
  passwd* pw = getpwuid(geteuid());
  return pw ? pw->pw_name : std::to_string(geteuid());
}

// One fenced incident of a card in the agent's store, as the agent records them.
std::int64_t seed_incident(const std::string& state_dir) {
  auto db = store::open_store(state_dir + "/cardiac.db");
  EXPECT_TRUE(db) << db.error().what();
  if (!db) return 0;
  store::Incident i;
  i.gpu = 3;
  i.uuid = "GPU-e2e-3";
  i.serial = "1650000000777";
  i.hostname = "node7";
  i.pci_bus_id = "0000:3b:00.0";
  i.cause = "xid_79";
  i.started_ns = 1'780'000'000 * kNsPerSec;
  i.detected_ns = i.started_ns + kNsPerSec;
  EXPECT_TRUE(store::open_incident(*db, i).value());
  EXPECT_TRUE(store::mark_incident_fenced(*db, 3, i.started_ns + 2 * kNsPerSec).value());
  return store::open_incident_of(*db, 3).value()->id;
}

TEST(IncidentCli, ListAndRemediateUnderTheCallersUser) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  ASSERT_TRUE(agent.start());
  const std::int64_t id = seed_incident(agent.state_dir());
  const std::string sid = std::to_string(id);

  auto r =
      run_cardiac({"incident", "remediate", sid, "--action", "reset", "--note", "nvidia-smi -r",
                   "--by", "night shift", "--json", "--state-dir", agent.state_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["remediations"].size(), 1u) << r.out;
  EXPECT_EQ(j["remediations"][0]["action"], "reset");
  EXPECT_EQ(j["remediations"][0]["who"], current_user() + " (says night shift)");

  auto list = run_cardiac(
      {"incident", "list", "--gpu", "1650000000777", "--json", "--state-dir", agent.state_dir()});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto all = nlohmann::json::parse(list.out);
  ASSERT_EQ(all.size(), 1u) << list.out;
  EXPECT_EQ(all[0]["cause"], "xid_79");
  EXPECT_EQ(all[0]["hostname"], "node7");
  EXPECT_FALSE(all[0]["fenced"].is_null());
  EXPECT_TRUE(all[0]["returned"].is_null());
  EXPECT_EQ(all[0]["remediations"][0]["note"], "nvidia-smi -r");
  // Another card: nothing.
  auto other = run_cardiac(
      {"incident", "list", "--gpu", "GPU-nope", "--json", "--state-dir", agent.state_dir()});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(nlohmann::json::parse(other.out).size(), 0u);
  auto text = run_cardiac({"incident", "list", "--state-dir", agent.state_dir()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("reset"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("no: still open"), std::string::npos) << text.out;

  auto missing = run_cardiac(
      {"incident", "remediate", "999", "--action", "rma", "--state-dir", agent.state_dir()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("no incident 999"), std::string::npos) << missing.err;
  auto bad = run_cardiac(
      {"incident", "remediate", sid, "--action", "pray", "--state-dir", agent.state_dir()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("\"pray\""), std::string::npos) << bad.err;
}

TEST(IncidentCli, RemediateNeedsTheAgent) {
  char tmpl[] = "/tmp/cardiac-noagent-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto r = run_cardiac({"incident", "remediate", "1", "--action", "reset", "--state-dir", dir});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("agent.sock"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

// Another local user reaches the control socket and is refused by its credentials; the
// incident keeps no remediation.
TEST(IncidentCli, AnotherUserCannotRecordARemediation) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as another Unix user";
  TestUser user("cdinc" + std::to_string(getpid() % 100000));
  ASSERT_TRUE(user.ok());

  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  ASSERT_TRUE(agent.start());
  const std::int64_t id = seed_incident(agent.state_dir());
  std::string binary = agent.dir() + "/cardiac";
  std::filesystem::copy_file(CARDIAC_BINARY, binary);
  ::chmod(binary.c_str(), 0755);
  ::chmod(agent.dir().c_str(), 0755);
  ::chmod(agent.state_dir().c_str(), 0755);

  auto r = run_as(&user, binary, "/", agent.state_dir(),
                  {"incident", "remediate", std::to_string(id), "--action", "rma", "--state-dir",
                   agent.state_dir()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("may not change alerts or incidents"), std::string::npos) << r.err;

  auto list = run_cardiac({"incident", "list", "--json", "--state-dir", agent.state_dir()});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out)[0]["remediations"].size(), 0u) << list.out;
}

}  // namespace
}  // namespace cardiac::e2e
