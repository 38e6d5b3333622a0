// SPDX-License-Identifier: Apache-2.0
// `cardiac scenario capture`: record what this machine's NVML answers into a scenario file
// for the fake NVML, so real hardware feeds the test fixtures.
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/strings.h"
#include "nvml/gpu_json.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::cli {
namespace {

struct ScenarioOptions {
  std::string output;
  std::string nvml_lib;
  std::string timeout = "5s";
  std::string description;
};

// Keys of a reading that describe one sample rather than the device.
constexpr const char* kVolatileKeys[] = {
    "index", "health", "health_detail", "sampled_at_ns", "sample_duration_us", "call_errors"};

nlohmann::json device_entry(const nvml::GpuReading& g) {
  nlohmann::json d = nvml::to_json(g);
  for (const char* key : kVolatileKeys) d.erase(key);
  switch (g.health) {
    case nvml::DeviceHealth::kLost:
      d["state"] = "lost";
      break;
    case nvml::DeviceHealth::kResetRequired:
      d["state"] = "reset_required";
      break;
    case nvml::DeviceHealth::kError:
      d["state"] = "unknown_error";
      break;
    case nvml::DeviceHealth::kUnresponsive:
    case nvml::DeviceHealth::kNotSampled:
      // Nothing was read; replaying it as a GPU that supports nothing would be a lie.
      d["state"] = "unknown_error";
      d["comment"] = "not captured: " + g.health_detail;
      break;
    case nvml::DeviceHealth::kOk:
      break;
  }
  // Calls that failed with something other than NOT_SUPPORTED replay as that code.
  if (!g.call_errors.empty()) d["returns"] = g.call_errors;
  if (auto it = d.find("processes"); it != d.end()) {
    for (auto& p : *it) p.erase("name");
  }
  return d;
}

int run_capture(const ScenarioOptions& o, Context& ctx) {
  auto timeout = parse_duration_ns(o.timeout);
  if (!timeout || *timeout <= 0) {
    ctx.err << "cardiac scenario capture: --timeout: not a duration: '" << o.timeout << "'\n";
    return kExitUsage;
  }
  telemetry::GpuCollectorOptions copts;
  copts.nvml_lib = o.nvml_lib;
  copts.timeout = *timeout;
  telemetry::GpuCollector collector(copts, ctx.clock);
  nvml::GpuSnapshot snap = collector.sample();

  nlohmann::json scenario;
  scenario["description"] =
      o.description.empty() ? "captured by cardiac scenario capture" : o.description;
  if (!snap.available) {
    ctx.err << "cardiac scenario capture: NVML unavailable: " << snap.error << "\n";
    return kExitCannotRun;
  }
  const auto& sys = snap.system;
  if (!sys.driver_version.empty()) scenario["driver_version"] = sys.driver_version;
  if (!sys.nvml_version.empty()) scenario["nvml_version"] = sys.nvml_version;
  if (sys.cuda_driver_version) scenario["cuda_driver_version"] = *sys.cuda_driver_version;
  auto& devices = scenario["devices"] = nlohmann::json::array();
  int incomplete = 0;
  for (const auto& g : snap.gpus) {
    devices.push_back(device_entry(g));
    if (g.health == nvml::DeviceHealth::kUnresponsive ||
        g.health == nvml::DeviceHealth::kNotSampled) {
      ctx.err << "cardiac scenario capture: GPU " << g.index
              << " was not captured: " << g.health_detail << "\n";
      ++incomplete;
    }
  }

  std::string text = scenario.dump(2) + "\n";
  const int rc = incomplete > 0 ? kExitFindings : kExitOk;
  if (o.output == "-") {
    ctx.out << text;
    return rc;
  }
  std::ofstream file(o.output, std::ios::trunc);
  if (!file || !(file << text) || !file.flush()) {
    ctx.err << "cardiac scenario capture: cannot write " << o.output << "\n";
    return kExitCannotRun;
  }
  ctx.err << "wrote " << o.output << ": " << snap.gpus.size() << " GPU(s), driver "
          << sys.driver_version << "\n";
  return rc;
}

}  // namespace

Runner register_scenario(CLI::App& sub) {
  auto o = std::make_shared<ScenarioOptions>();
  sub.require_subcommand(1);
  CLI::App* capture = sub.add_subcommand("capture", "Record the real NVML answers into FILE");
  capture->add_option("-o,--output", o->output, "Scenario file to write ('-' for stdout)")
      ->required();
  capture->add_option("--nvml-lib", o->nvml_lib, "NVML library to load");
  capture->add_option("--timeout", o->timeout, "Deadline for each NVML answer")
      ->capture_default_str();
  capture->add_option("--description", o->description, "Text stored in the scenario");
  return [o](Context& ctx) { return run_capture(*o, ctx); };
}

}  // namespace cardiac::cli
