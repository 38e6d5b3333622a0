// SPDX-License-Identifier: Apache-2.0
// `cardiac slurm healthcheck|prolog|epilog` against real Slurm daemons (cluster.h) with a real
// agent per node on the fake NVML: a lost GPU drains its node with cardiac's reason, a
// requeued job moves to the other node, the node comes back when healthy, a person's drain is
// left alone, the blast-radius limit holds a second drain and a person hears of it, slurmd
// runs the health check itself, and the epilog names the job an Xid happened under.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "tests/e2e/webhook_receiver.h"
#include "tests/slurm/cluster.h"

namespace cardiac::slurm_e2e {
namespace {

using e2e::AgentProcess;
using e2e::scenario;

// GPU 1 of healthy-8xh100.json sits on 0000:2a:00.0.
// The message of a driver line, without its time stamp.
constexpr const char* kXid79 =
    "NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has "
    "fallen off the bus.\n";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// An agent for one node. Its host side reads a captured healthy host, so this machine's own
// load does not add problems; no queue, so no fence outlives the fault it came from.
std::unique_ptr<AgentProcess> agent_on(const std::string& scenario_name,
                                       const std::string& extra = "") {
  auto agent =
      std::make_unique<AgentProcess>(scenario(scenario_name).dump(),
                                     "[host]\nroot = \"" + std::string(CARDIAC_FIXTURES_DIR) +
                                         "/hosts/old-kernel\"\n[queue]\nenabled = false\n" + extra);
  agent->agent_keys("interval = \"200ms\"\n");
  return agent;
}

bool sampled(AgentProcess& agent) {
  return agent.start() && eventually([&] {
           auto j = nlohmann::json::parse(agent.get("/api/v1/status").second, nullptr, false);
           return j.is_object() && j.value("verdict", "UNKNOWN") != "UNKNOWN";
         });
}

class SlurmE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto missing = missing_slurm_program(); !missing.empty()) {
      GTEST_SKIP() << "Slurm is not installed (" << missing
                   << " is missing): apt-get install slurmctld slurmd slurm-client munge, as "
                      "scripts/setup.sh does";
    }
    if (geteuid() != 0) GTEST_SKIP() << "slurmd runs jobs as their users: run as root";
  }

  void start_cluster(const ClusterOptions& o = {}) {
    cluster_ = std::make_unique<SlurmCluster>(o);
    ASSERT_TRUE(cluster_->start()) << cluster_->logs();
  }
  void TearDown() override {
    if (cluster_ && HasFailure()) std::cerr << cluster_->logs();
  }

  // `cardiac slurm HOOK` as node `node` (as slurmd would run it), through `agent`.
  RunResult hook(const std::string& hook, const std::string& node, const AgentProcess& agent,
                 std::vector<std::string> extra = {},
                 std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> args = {
        "slurm", hook, "--config", agent.config_path(), "--scontrol", "/usr/bin/scontrol",
        // A loaded machine (or a sanitizer build) may take more than the default second.
        "--timeout", "10s"};
    args.insert(args.end(), extra.begin(), extra.end());
    env.emplace_back("SLURMD_NODENAME", node);
    env.emplace_back("SLURM_CONF", cluster_->conf_path());
    return e2e::run_cardiac(args, env);
  }

  std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(SlurmE2E, LostGpuDrainsTheNodeJobsGoElsewhereAndItResumesWhenHealthy) {
  start_cluster();
  auto bad = agent_on("gpu-lost.json");
  auto good = agent_on("healthy-8xh100.json");
  ASSERT_TRUE(sampled(*bad));
  ASSERT_TRUE(sampled(*good));

  auto r = hook("healthcheck", "n1", *bad);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "action: drained: cardiac: GPU 5")) << r.out;
  EXPECT_TRUE(eventually([&] { return has(cluster_->node_state("n1"), "DRAIN|cardiac: GPU 5"); }))
      << cluster_->node_state("n1");
  auto ok = hook("healthcheck", "n2", *good);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_EQ(cluster_->node_state("n2"), "IDLE|");

  // A job submitted now runs on the healthy node.
  auto sub = cluster_->sbatch({"--parsable", "--gres=gpu:8", "-o", cluster_->dir() + "/job.out",
                               "--wrap", "echo ran on $SLURMD_NODENAME"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  EXPECT_TRUE(
      eventually([&] { return has(read_text(cluster_->dir() + "/job.out"), "ran on"); }, 60));
  EXPECT_EQ(read_text(cluster_->dir() + "/job.out"), "ran on n2\n");

  // Repaired and rebooted: the agent starts again and sees eight good GPUs; the health check
  // resumes the node cardiac drained.
  bad->kill9();
  bad->write_scenario(scenario("healthy-8xh100.json").dump());
  ASSERT_TRUE(sampled(*bad));
  auto back = hook("healthcheck", "n1", *bad);
  EXPECT_EQ(back.exit_code, 0) << back.out << back.err;
  EXPECT_TRUE(has(back.out, "action: resumed")) << back.out;
  EXPECT_TRUE(eventually([&] { return !has(cluster_->node_state("n1"), "DRAIN"); }))
      << cluster_->node_state("n1");
}

TEST_F(SlurmE2E, FailedPrologDrainsAndTheRequeuedJobMovesToTheOtherNode) {
  start_cluster({"Prolog=" + std::string(SlurmCluster::kHookPlaceholder) + "\n"});
  cluster_->write_hook("prolog.sh", "prolog");
  ASSERT_EQ(cluster_->point_hook_at("prolog.sh"), 0);

  auto bad = agent_on("gpu-lost.json");
  auto good = agent_on("healthy-8xh100.json");
  ASSERT_TRUE(sampled(*bad));
  ASSERT_TRUE(sampled(*good));
  cluster_->config_for("n1", bad->config_path());
  cluster_->config_for("n2", good->config_path());

  // n2 is in maintenance, so the job can only start on n1, whose GPU 5 is lost.
  ASSERT_EQ(
      cluster_->scontrol({"update", "NodeName=n2", "State=DRAIN", "Reason=maintenance"}).exit_code,
      0);
  auto sub = cluster_->sbatch({"--parsable", "--requeue", "--gres=gpu:8", "-o",
                               cluster_->dir() + "/job.out", "--open-mode=append", "--wrap",
                               "echo ran on $SLURMD_NODENAME restart $SLURM_RESTART_COUNT"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string job(trim(sub.out));
  EXPECT_TRUE(
      eventually([&] { return has(cluster_->node_state("n1"), "DRAIN|cardiac: GPU 5"); }, 60))
      << cluster_->node_state("n1");
  EXPECT_TRUE(eventually([&] { return cluster_->job_field(job, "Restarts") == "1"; }, 30));
  EXPECT_TRUE(eventually([&] {
    return has(cluster_->log("prolog.sh-n1.log"), "job " + job + ": CRITICAL");
  })) << cluster_->log("prolog.sh-n1.log");

  // The health check of the node a person drained leaves it drained.
  auto kept = hook("healthcheck", "n2", *good);
  EXPECT_EQ(kept.exit_code, 0) << kept.out;
  EXPECT_TRUE(has(kept.out, "left drained")) << kept.out;
  EXPECT_EQ(cluster_->node_state("n2"), "IDLE+DRAIN|maintenance");

  // Maintenance over: the requeued job runs on n2.
  ASSERT_EQ(cluster_->scontrol({"update", "NodeName=n2", "State=RESUME"}).exit_code, 0);
  EXPECT_TRUE(
      eventually([&] { return has(read_text(cluster_->dir() + "/job.out"), "ran on"); }, 90))
      << cluster_->scontrol({"show", "job", job}).out;
  // Slurm wrote the failed prolog into the job's output; the second start ran on n2.
  const std::string out = read_text(cluster_->dir() + "/job.out");
  EXPECT_TRUE(has(out, "Error running slurm prolog: 1\n")) << out;
  EXPECT_TRUE(has(out, "ran on n2 restart 1\n")) << out;
  EXPECT_FALSE(has(out, "ran on n1")) << out;
  // Slurm drained n1 for the failed prolog too, keeping cardiac's reason, set first: the health
  // check will resume it once the GPU is back.
  EXPECT_TRUE(has(cluster_->node_state("n1"), "DRAIN|cardiac: GPU 5"))
      << cluster_->node_state("n1");
}

TEST_F(SlurmE2E, NodeDrainedByAPersonStaysDrained) {
  start_cluster();
  auto bad = agent_on("gpu-lost.json");
  ASSERT_TRUE(sampled(*bad));
  ASSERT_EQ(
      cluster_->scontrol({"update", "NodeName=n1", "State=DRAIN", "Reason=maintenance"}).exit_code,
      0);
  // Faulty: already drained, the person's reason is kept.
  auto r = hook("healthcheck", "n1", *bad);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "already drained by someone else (maintenance)")) << r.out;
  EXPECT_EQ(cluster_->node_state("n1"), "IDLE+DRAIN|maintenance");
  // Healthy: not resumed.
  bad->kill9();
  bad->write_scenario(scenario("healthy-8xh100.json").dump());
  ASSERT_TRUE(sampled(*bad));
  auto healthy = hook("healthcheck", "n1", *bad);
  EXPECT_EQ(healthy.exit_code, 0) << healthy.out;
  EXPECT_EQ(cluster_->node_state("n1"), "IDLE+DRAIN|maintenance");
}

TEST_F(SlurmE2E, BlastRadiusLimitHoldsTheSecondDrainAndAPersonHearsOfIt) {
  start_cluster();
  e2e::WebhookReceiver receiver;
  receiver.start();
  const std::string notifier = receiver.notifier();
  // Defaults: 10 % of 2 nodes rounds down to 0, at least 1 node per 10 minutes.
  auto a1 = agent_on("gpu-lost.json", notifier);
  auto a2 = agent_on("gpu-lost.json", notifier);
  ASSERT_TRUE(sampled(*a1));
  ASSERT_TRUE(sampled(*a2));
  auto first = hook("healthcheck", "n1", *a1);
  EXPECT_EQ(first.exit_code, 1) << first.out;
  EXPECT_TRUE(has(cluster_->node_state("n1"), "DRAIN|cardiac: GPU 5"));

  auto second = hook("healthcheck", "n2", *a2, {"--json"});
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  auto j = nlohmann::json::parse(second.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << second.out;
  EXPECT_EQ(j.value("action", ""), "hold");
  EXPECT_EQ(j["drain_limit"].value("allowance", 0), 1);
  EXPECT_EQ(j["drain_limit"]["recent_nodes"], nlohmann::json::array({"n1"}));
  EXPECT_EQ(j.value("alert_delivered", false), true) << second.err;
  EXPECT_EQ(cluster_->node_state("n2"), "IDLE|");

  // The alert reached the receiver: critical, naming the held node.
  auto bodies = receiver.bodies();
  ASSERT_FALSE(bodies.empty());
  auto body = nlohmann::json::parse(bodies.back(), nullptr, false);
  ASSERT_TRUE(body.is_object()) << bodies.back();
  const auto& alert = body["alerts"][0];
  EXPECT_EQ(alert["labels"].value("alertname", ""), "slurm_drain_limit");
  EXPECT_EQ(alert["labels"].value("severity", ""), "critical");
  EXPECT_EQ(alert["labels"].value("node", ""), "n2");
  EXPECT_TRUE(has(alert["annotations"].value("description", ""), "n1")) << bodies.back();

  // A wider limit lets the same drain through: the hold came from the limit, nothing else.
  std::ofstream(a2->config_path(), std::ios::app) << "[slurm]\ndrain_limit_min_nodes = 2\n";
  auto third = hook("healthcheck", "n2", *a2);
  EXPECT_EQ(third.exit_code, 1) << third.out << third.err;
  EXPECT_TRUE(has(cluster_->node_state("n2"), "DRAIN|cardiac: GPU 5"));
}

TEST_F(SlurmE2E, SlurmdRunsTheHealthCheckItself) {
  start_cluster({"HealthCheckProgram=" + std::string(SlurmCluster::kHookPlaceholder) +
                 "\nHealthCheckInterval=2\n"});
  cluster_->write_hook("healthcheck.sh", "healthcheck");
  auto bad = agent_on("gpu-lost.json");
  auto good = agent_on("healthy-8xh100.json");
  ASSERT_TRUE(sampled(*bad));
  ASSERT_TRUE(sampled(*good));
  cluster_->config_for("n1", bad->config_path());
  cluster_->config_for("n2", good->config_path());
  ASSERT_EQ(cluster_->point_hook_at("healthcheck.sh"), 0);

  EXPECT_TRUE(
      eventually([&] { return has(cluster_->node_state("n1"), "DRAIN|cardiac: GPU 5"); }, 60))
      << cluster_->node_state("n1");
  // The hook prints after it drained: its line may land a moment after the state changed.
  EXPECT_TRUE(
      eventually([&] { return has(cluster_->log("healthcheck.sh-n1.log"), "n1: CRITICAL"); }));
  // n2's own runs found it healthy and left it in service.
  EXPECT_TRUE(eventually(
      [&] { return has(cluster_->log("healthcheck.sh-n2.log"), "n2: OK - n2 is healthy"); }, 30));
  EXPECT_EQ(cluster_->node_state("n2"), "IDLE|");
}

TEST_F(SlurmE2E, EpilogNamesTheJobAnXidHappenedUnderAndDrains) {
  start_cluster({"Epilog=" + std::string(SlurmCluster::kHookPlaceholder) + "\n"});
  cluster_->write_hook("epilog.sh", "epilog");
  ASSERT_EQ(cluster_->point_hook_at("epilog.sh"), 0);
  auto a1 = agent_on("healthy-8xh100.json");
  auto a2 = agent_on("healthy-8xh100.json");
  ASSERT_TRUE(sampled(*a1));
  ASSERT_TRUE(sampled(*a2));
  cluster_->config_for("n1", a1->config_path());
  cluster_->config_for("n2", a2->config_path());
  std::ofstream(cluster_->dir() + "/xid.txt") << kXid79;

  // The job runs on n1 (n2 in maintenance); while it runs, GPU 1 falls off the bus: the job
  // writes the driver's line into n1's kernel log and waits until the agent recorded it.
  ASSERT_EQ(
      cluster_->scontrol({"update", "NodeName=n2", "State=DRAIN", "Reason=maintenance"}).exit_code,
      0);
  // The driver stamps kernel-log lines with the time since boot, which the agent turns into
  // wall time: the line gets this moment's uptime.
  const std::string script = cluster_->dir() + "/job.sh";
  std::ofstream(script) << "#!/bin/sh\n"
                        << "up=$(cut -d' ' -f1 /proc/uptime)\n"
                        << "printf '[%s] %s' \"$up\" \"$(cat " << cluster_->dir()
                        << "/xid.txt)\" >> " << a1->dir() << "/kern.log\n"
                        << "echo >> " << a1->dir() << "/kern.log\n"
                        << "for i in $(seq 1 300); do\n"
                        << "  curl -s 127.0.0.1:" << a1->port()
                        << "/api/v1/events | grep -q '\"xid\":79' && exit 0\n"
                        << "  sleep 0.1\ndone\nexit 1\n";
  auto sub =
      cluster_->sbatch({"--parsable", "--gres=gpu:8", "-o", cluster_->dir() + "/job.out", script});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string job(trim(sub.out));
  EXPECT_TRUE(eventually(
      [&] { return has(cluster_->node_state("n1"), "DRAIN|cardiac: job " + job + ": GPU 1"); }, 90))
      << cluster_->node_state("n1") << "\n"
      << cluster_->log("epilog.sh-n1.log");
  EXPECT_TRUE(eventually(
      [&] { return has(cluster_->log("epilog.sh-n1.log"), "n1 job " + job + ": CRITICAL"); }));
  // Slurm drains a node whose epilog failed too, and keeps cardiac's reason, set first.
  EXPECT_TRUE(eventually([&] { return cluster_->job_field(job, "JobState") == "COMPLETED"; }, 30))
      << cluster_->job_field(job, "JobState");
  EXPECT_TRUE(has(cluster_->node_state("n1"), "DRAIN|cardiac: job " + job + ": GPU 1"))
      << cluster_->node_state("n1");
  const std::string log = cluster_->log("epilog.sh-n1.log");
  EXPECT_TRUE(has(log, "GPU 1 (0000:2a:00.0) Xid 79 GPU has fallen off the bus")) << log;
}

}  // namespace
}  // namespace cardiac::slurm_e2e
