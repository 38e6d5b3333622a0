// SPDX-License-Identifier: Apache-2.0
// `cardiac baseline capture` / `show`: the configuration facts that should be the same on every
// node of a kind, written to a `cardiac.baseline/v1` file that `cardiac doctor --baseline`
// compares another node with (docs/baseline.md).
#include <fstream>
#include <memory>

#include "baseline/json.h"
#include "cli/commands.h"
#include "core/strings.h"
#include "platform/fs.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::cli {
namespace {

struct BaselineOptions {
  std::string output;
  std::string root = "/";
  bool json = false;
  bool offline = false;
  std::string nvml_lib;
  std::string timeout = "5s";
  std::string file;  // show
};

int run_capture(const BaselineOptions& o, Context& ctx) {
  auto timeout = parse_duration_ns(o.timeout);
  if (!timeout || *timeout <= 0) {
    ctx.err << "cardiac baseline capture: --timeout: not a duration: '" << o.timeout << "'\n";
    return kExitUsage;
  }
  RootFs fs(o.root);
  if (!fs.exists("/proc") && !fs.exists("/sys") && !fs.exists("/etc")) {
    ctx.err << "cardiac baseline capture: --root " << o.root
            << ": no proc/, sys/ or etc/ under it: not a host tree\n";
    return kExitUsage;
  }
  std::optional<nvml::GpuSnapshot> snap;
  if (!o.offline) {
    telemetry::GpuCollectorOptions copts;
    copts.nvml_lib = o.nvml_lib;
    copts.timeout = *timeout;
    telemetry::GpuCollector collector(copts, ctx.clock);
    snap = collector.sample();
    if (!snap->available) {
      ctx.err << "cardiac baseline capture: NVML unavailable (" << snap->error
              << "): the GPU facts only NVML knows are recorded as not read\n";
    }
  }
  baseline::Baseline b = baseline::capture(fs, snap ? &*snap : nullptr, ctx.clock.now());
  const std::string text = baseline::to_json(b).dump(2) + "\n";
  if (o.output == "-") {
    ctx.out << text;
  } else {
    std::ofstream file(o.output, std::ios::binary | std::ios::trunc);
    if (!file || !(file << text) || !file.flush()) {
      ctx.err << "cardiac baseline capture: cannot write " << o.output << "\n";
      return kExitCannotRun;
    }
    ctx.out << (o.json ? text : baseline::render_text(b));
  }
  std::size_t unread = 0;
  for (const auto& f : b.facts) unread += f.value ? 0 : 1;
  ctx.err << "cardiac baseline capture: " << b.facts.size() << " facts";
  if (unread > 0) ctx.err << ", " << unread << " not read (null in the file, not compared)";
  if (o.output != "-") ctx.err << ", written to " << o.output;
  ctx.err << "\n";
  return kExitOk;
}

int run_show(const BaselineOptions& o, Context& ctx) {
  auto b = baseline::load_baseline(o.file);
  if (!b) {
    ctx.err << "cardiac baseline show: " << b.error().what() << "\n";
    return b.error().code == ErrorCode::kNotFound ? kExitCannotRun : kExitUsage;
  }
  ctx.out << (o.json ? baseline::to_json(*b).dump(2) + "\n" : baseline::render_text(*b));
  return kExitOk;
}

}  // namespace

Runner register_baseline(CLI::App& sub) {
  auto o = std::make_shared<BaselineOptions>();
  sub.require_subcommand(1);
  CLI::App* capture = sub.add_subcommand(
      "capture",
      "Record this node's configuration (driver, CUDA, kernel, OS, libraries, GPU modes, "
      "limits and clocks, PCIe, NUMA, IOMMU, kernel parameters) into FILE, to compare other "
      "nodes with `cardiac doctor --baseline FILE`");
  capture->add_option("-o,--output", o->output, "Baseline file to write ('-' for stdout)")
      ->required();
  capture
      ->add_option("--root", o->root,
                   "Read /proc, /sys, /etc and the libraries under DIR (a captured host tree)")
      ->capture_default_str();
  capture->add_flag("--json", o->json, "Print the baseline as JSON instead of a table");
  capture->add_flag("--offline", o->offline,
                    "Do not ask NVML (the GPU facts only NVML knows are recorded as not read)");
  capture->add_option("--nvml-lib", o->nvml_lib, "NVML library to load");
  capture->add_option("--timeout", o->timeout, "Deadline for each NVML answer")
      ->capture_default_str();
  CLI::App* show = sub.add_subcommand("show", "Print a baseline file");
  show->add_option("FILE", o->file, "Baseline file (cardiac.baseline/v1)")->required();
  show->add_flag("--json", o->json, "Print it as JSON");
  return [o, capture, show](Context& ctx) {
    if (capture->parsed()) return run_capture(*o, ctx);
    if (show->parsed()) return run_show(*o, ctx);
    return static_cast<int>(kExitUsage);
  };
}

}  // namespace cardiac::cli
