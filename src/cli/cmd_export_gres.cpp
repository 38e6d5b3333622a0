// SPDX-License-Identifier: Apache-2.0
// `cardiac export slurm-gres`: Slurm's gres.conf for this node from one NVML sample (through
// the isolated worker) and sysfs under --root; `--node-line` prints only the slurm.conf
// NodeName line, `--json` everything as JSON (docs/slurm-gres.md).
#include "cli/cmd_export_gres.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "config/config.h"
#include "core/format.h"
#include "core/strings.h"
#include "gres/gres.h"
#include "platform/fs.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::cli {
namespace {

struct GresFlags {
  std::string output = "-";
  std::string type;
  std::string node_name;
  bool node_line = false;
  bool json = false;
  std::string nvml_lib;
  std::string root = "/";
  std::string timeout = "5s";
  std::string config = config::kDefaultConfigPath;
  bool config_named = false;
  bool root_given = false;
  bool timeout_given = false;
};

// Replaces `path` whole or not at all: a gres.conf cut short would hand Slurm fewer GPUs.
int write_file_atomically(const std::string& path, const std::string& text, Context& ctx) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  errno = 0;
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) {
      ctx.err << "cardiac export slurm-gres: cannot write " << tmp << ": "
              << (errno ? std::strerror(errno) : "write failed") << "\n";
      std::remove(tmp.c_str());
      return kExitCannotRun;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ctx.err << "cardiac export slurm-gres: cannot replace " << path << ": " << std::strerror(errno)
            << "\n";
    std::remove(tmp.c_str());
    return kExitCannotRun;
  }
  return kExitOk;
}

int run_export_gres(GresFlags f, Context& ctx) {
  auto cfg = config::load_config(f.config, f.config_named);
  if (!cfg) {
    ctx.err << "cardiac export slurm-gres: " << cfg.error().what() << "\n";
    return kExitUsage;
  }
  if (f.nvml_lib.empty()) f.nvml_lib = cfg->nvml.library;
  if (!f.root_given) f.root = cfg->host.root;
  if (!f.timeout_given) f.timeout = fmt::format("{}ns", cfg->nvml.timeout);
  auto timeout = parse_duration_ns(f.timeout);
  if (!timeout || *timeout <= 0) {
    ctx.err << "cardiac export slurm-gres: --timeout: not a duration: '" << f.timeout
            << "' (e.g. 5s, 500ms)\n";
    return kExitUsage;
  }
  // Slurm reads Gres=gpu:<type>:<n> and splits gres.conf at spaces: a type holds neither.
  const bool type_ok = std::all_of(f.type.begin(), f.type.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
  if (!type_ok) {
    ctx.err << "cardiac export slurm-gres: --type: '" << f.type
            << "' is not a Slurm GRES type (letters, digits, '_', '-' and '.', e.g. h100 or "
               "a100_80g)\n";
    return kExitUsage;
  }
  auto fs = std::make_shared<RootFs>(f.root);
  if (!fs->exists("/sys")) {
    ctx.err << "cardiac export slurm-gres: --root " << f.root << ": no sys/ directory under it\n";
    return kExitUsage;
  }
  telemetry::GpuCollectorOptions copts;
  copts.nvml_lib = f.nvml_lib;
  copts.timeout = *timeout;
  telemetry::GpuCollector collector(copts, ctx.clock);
  nvml::GpuSnapshot snap = collector.sample();
  auto conf = gres::build_gres(snap, *fs, {f.type, f.node_name});
  if (!conf) {
    ctx.err << "cardiac export slurm-gres: " << conf.error().what() << "\n";
    return kExitCannotRun;
  }
  for (const auto& n : conf->notes) ctx.err << "cardiac export slurm-gres: note: " << n << "\n";
  std::string text;
  if (f.json) {
    text = gres::to_json(*conf).dump(2) + "\n";
  } else if (f.node_line) {
    text = conf->node_line() + "\n";
  } else {
    text = gres::render_gres_conf(*conf);
  }
  if (f.output == "-") {
    ctx.out << text;
    return kExitOk;
  }
  return write_file_atomically(f.output, text, ctx);
}

}  // namespace

Runner with_export_slurm_gres(CLI::App& sub, Runner others) {
  auto f = std::make_shared<GresFlags>();
  auto* gres = sub.add_subcommand(
      "slurm-gres",
      "Slurm gres.conf for this node from NVML: Type, File=/dev/nvidiaN, Cores, Links; and "
      "the slurm.conf NodeName Gres= line");
  gres->add_option("-o,--output", f->output, "File to write, replaced whole ('-' for stdout)")
      ->capture_default_str();
  gres->add_option("--type", f->type,
                   "Type= for every GPU (default: from the product name, e.g. h100)");
  gres->add_option("--node-name", f->node_name,
                   "NodeName= (default: this host's name up to the first '.')");
  auto* node_line =
      gres->add_flag("--node-line", f->node_line,
                     "Print only the slurm.conf line: NodeName=<host> Gres=gpu:<type>:<N>");
  gres->add_flag("--json", f->json, "Print everything as JSON (docs/slurm-gres.md)")
      ->excludes(node_line);
  gres->add_option("--nvml-lib", f->nvml_lib,
                   "NVML library to load (default libnvidia-ml.so.1, then libnvidia-ml.so)");
  gres->add_option("--root", f->root, "Read /sys and /proc under DIR (a captured host tree)")
      ->capture_default_str();
  gres->add_option("--timeout", f->timeout, "Deadline for each NVML answer (e.g. 5s, 500ms)")
      ->capture_default_str();
  gres->add_option("--config", f->config, "Configuration file")->capture_default_str();
  return [f, gres, others = std::move(others)](Context& ctx) {
    if (!gres->parsed()) return others(ctx);
    f->config_named = gres->count("--config") > 0;
    f->root_given = gres->count("--root") > 0;
    f->timeout_given = gres->count("--timeout") > 0;
    return run_export_gres(*f, ctx);
  };
}

}  // namespace cardiac::cli
