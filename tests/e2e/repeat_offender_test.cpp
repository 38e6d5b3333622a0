// SPDX-License-Identifier: Apache-2.0
// A repeat offender reaches a person: the fake NVML's GPU 3 falls off the bus (the queue fences
// it), comes back and a person clears the fence, and it falls off again; the agent opens an
// incident each time, and the second fault within 7 days of the return to service fires the default
// `gpu_repeat_offender` alert, which the webhook notifier delivers to a receiver on loopback,
// naming the card's serial.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/e2e/webhook_receiver.h"

namespace cardiac::e2e {
namespace {

// The incidents `cardiac incident list --json` shows for the card with this serial.
nlohmann::json incidents_of(const AgentProcess& agent, const std::string& serial) {
  RunResult r = run_cardiac({"incident", "list", "--state-dir", agent.state_dir(), "--json"});
  auto all = nlohmann::json::parse(r.out, nullptr, false);
  nlohmann::json out = nlohmann::json::array();
  if (!all.is_array()) return out;
  for (const auto& i : all) {
    if (i.contains("serial") && i["serial"].is_string() && i["serial"] == serial) out.push_back(i);
  }
  return out;
}

TEST(RepeatOffenderE2e, AGpuFaultingAgainAfterItsReturnPagesThroughTheWebhook) {
  WebhookReceiver hook;
  hook.start();
  auto sc = scenario("healthy-8xh100.json");
  const std::string serial = sc["devices"][3].value("serial", "");
  ASSERT_FALSE(serial.empty()) << "the scenario's GPU 3 has no serial";
  AgentProcess agent(sc.dump(), hook.notifier());
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());
  // The card is lost only after the agent has seen it (and its serial).
  ASSERT_TRUE(eventually([&] {
    auto j = nlohmann::json::parse(agent.get("/api/v1/status").second, nullptr, false);
    return j.is_object() && j.contains("gpus") && j["gpus"].size() == 8;
  }));

  // First fault, then the card answers again: one incident, ended (returned to service).
  sc["devices"][3]["state"] = "lost";
  agent.write_scenario(sc.dump());
  ASSERT_TRUE(eventually([&] { return incidents_of(agent, serial).size() == 1; }))
      << incidents_of(agent, serial).dump();
  // A lost GPU is fenced; its incident ends when the card answers again and a person clears
  // the fence (the return to service).
  ASSERT_TRUE(eventually([&] {
    auto i = incidents_of(agent, serial);
    return i.size() == 1 && !i[0]["fenced"].is_null();
  })) << incidents_of(agent, serial).dump();
  sc["devices"][3]["state"] = "ok";
  agent.write_scenario(sc.dump());
  ASSERT_TRUE(eventually([&] {
    auto j = nlohmann::json::parse(agent.get("/api/v1/status").second, nullptr, false);
    return j.is_object() && j.contains("gpus") && j["gpus"].size() == 8 &&
           j["gpus"][3].value("health", "") == "ok";
  }));
  auto clear = run_cardiac({"fence", "clear", "3"}, {{"CARDIAC_STATE_DIR", agent.state_dir()}});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  ASSERT_TRUE(eventually([&] {
    auto i = incidents_of(agent, serial);
    return i.size() == 1 && !i[0]["returned"].is_null();
  })) << incidents_of(agent, serial).dump();
  EXPECT_TRUE(hook.received("gpu_repeat_offender", "firing").empty());

  // The same card faults again within 7 days of its return: a person hears of it.
  sc["devices"][3]["state"] = "lost";
  agent.write_scenario(sc.dump());
  ASSERT_TRUE(eventually([&] { return !hook.received("gpu_repeat_offender", "firing").empty(); }))
      << agent.get("/api/v1/alerts").second;
  auto a = hook.received("gpu_repeat_offender", "firing")[0];
  EXPECT_EQ(a["labels"].value("severity", ""), "critical") << a.dump();
  EXPECT_EQ(a["labels"].value("serial", ""), serial) << a.dump();
  EXPECT_EQ(incidents_of(agent, serial).size(), 2U);
  EXPECT_EQ(agent.terminate(), 0);
}

}  // namespace
}  // namespace cardiac::e2e
