// SPDX-License-Identifier: Apache-2.0
// `cardiac submit`, `cardiac queue`, `cardiac cancel`, `cardiac hold`, `cardiac release`: the
// job queue client (the agent runs the queue; these talk to it over its Unix socket).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "cli/commands.h"
#include "cli/queue_client.h"
#include "cli/store_access.h"
#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"
#include "core/units.h"
#include "queue/client.h"
#include "queue/job.h"

extern char** environ;

namespace cardiac::cli {

int exit_code_for(const Error& e) {
  switch (e.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
    case ErrorCode::kParse:
      return kExitUsage;
    default:
      return kExitCannotRun;
  }
}

Result<nlohmann::json> queue_call(Context& ctx, std::string_view command,
                                  const std::string& state_dir_flag, const nlohmann::json& request,
                                  int& exit_code) {
  auto r = queue::call_agent(ctx.clock, resolve_state_dir(state_dir_flag), request);
  if (!r) {
    ctx.err << "cardiac " << command << ": " << r.error().what() << "\n";
    exit_code = exit_code_for(r.error());
  }
  return r;
}

std::string short_duration(const nlohmann::json& seconds) {
  if (!seconds.is_number()) return "-";
  return format_duration(static_cast<DurationNs>(seconds.get<double>() * 1e9));
}

std::string gpu_list(const nlohmann::json& indices) {
  std::string out;
  for (const auto& i : indices) {
    if (!out.empty()) out += ',';
    out += i.dump();
  }
  return out;
}

std::string cell(std::string_view text, std::size_t width) {
  if (text.size() <= width) return std::string(text);
  return std::string(text.substr(0, width - 1)) + "~";
}

namespace {

struct SubmitFlags {
  std::string state_dir, gpu_mem, priority_text, time, name, account;
  unsigned gpus = 1;
  bool shared = false, quiet = false, json = false;
  std::vector<std::string> after;
  std::vector<std::string> command;
  std::vector<std::string> unknown;  // options CLI11 did not recognise
};

int run_submit(const SubmitFlags& f, Context& ctx) {
  auto usage = [&](const std::string& what) {
    ctx.err << "cardiac submit: " << what << "\n";
    return kExitUsage;
  };
  for (const auto& u : f.unknown) {
    if (u != "--" && u.starts_with("-")) {
      return usage("unknown option '" + u +
                   "' (see cardiac submit --help; the command goes after --)");
    }
  }
  if (f.command.empty()) {
    return usage("no command given: cardiac submit [OPTIONS] -- COMMAND [ARGS...]");
  }
  queue::SubmitRequest r;
  r.argv = f.command;
  r.gpus = f.gpus;
  if (f.gpus == 0) return usage("--gpus: at least 1");
  r.shared = f.shared;
  r.name = f.name;
  r.account = f.account;
  if (!f.gpu_mem.empty()) {
    auto m = queue::parse_size(f.gpu_mem);
    if (!m) return usage("--gpu-mem: " + m.error().what());
    r.gpu_mem = *m;
  }
  if (!f.time.empty()) {
    auto t = queue::parse_time_limit(f.time);
    if (!t) return usage("--time: " + t.error().what());
    r.time_limit = *t;
  }
  if (!f.priority_text.empty()) {
    auto p = parse_i64(f.priority_text);
    if (!p || *p < -1000 || *p > 1000) {
      return usage("--priority: an integer between -1000 and 1000, not '" + f.priority_text + "'");
    }
    r.priority = static_cast<int>(*p);
  }
  for (const auto& a : f.after) {
    for (auto part : split(a, ',')) {
      auto id = parse_i64(part);
      if (!id || *id <= 0) return usage("--after: not a job id: '" + std::string(part) + "'");
      r.after.push_back(*id);
    }
  }
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    r.env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    ctx.err << "cardiac submit: the current directory: " << std::strerror(errno) << "\n";
    return kExitCannotRun;
  }
  r.cwd = cwd;
  int rc = kExitOk;
  auto answer =
      queue_call(ctx, "submit", f.state_dir, {{"op", "submit"}, {"job", queue::to_json(r)}}, rc);
  if (!answer) return rc;
  if (answer->contains("warning")) {
    ctx.err << "cardiac submit: warning: " << (*answer)["warning"].get<std::string>() << "\n";
  }
  if (f.json) {
    ctx.out << (*answer)["job"].dump(2) << "\n";
  } else if (f.quiet) {
    ctx.out << (*answer)["id"].get<std::int64_t>() << "\n";
  } else {
    ctx.out << "submitted job " << (*answer)["id"].get<std::int64_t>() << "\n";
  }
  return kExitOk;
}

struct ListFlags {
  std::string state_dir;
  bool all = false, json = false;
};

std::string where_or_why(const nlohmann::json& j) {
  std::string state = j.value("state", "");
  if (state == "running") {
    std::string gpus = "GPU " + gpu_list(j["gpu_indices"]);
    std::string reason = j.value("reason", "");
    return reason.empty() ? gpus : gpus + " (" + reason + ")";
  }
  if (j.contains("why")) return j["why"].get<std::string>();
  std::string reason = j.value("reason", "");
  if (j["exit_code"].is_number() && reason.empty()) {
    return fmt::format("exit {}", j["exit_code"].get<int>());
  }
  return reason;
}

double elapsed_seconds(const nlohmann::json& j, TimeNs now) {
  std::string state = j.value("state", "");
  auto ns = [&](const char* key) -> TimeNs {
    return j[key].is_number() ? j[key].get<TimeNs>() : 0;
  };
  TimeNs from = state == "pending" || state == "held" ? ns("submit_ns") : ns("start_ns");
  TimeNs to = j["end_ns"].is_number() ? ns("end_ns") : now;
  return from > 0 ? static_cast<double>(to - from) / 1e9 : 0;
}

int run_queue(const ListFlags& f, Context& ctx) {
  int rc = kExitOk;
  auto answer = queue_call(ctx, "queue", f.state_dir, {{"op", "list"}, {"all", f.all}}, rc);
  if (!answer) return rc;
  if (f.json) {
    ctx.out << (*answer)["jobs"].dump(2) << "\n";
    return kExitOk;
  }
  TimeNs now = ctx.clock.now();
  ctx.out << fmt::format("{:>6}  {:<10} {:<16} {:<9} {:>4} {:>5}  {:<8}  {}\n", "ID", "USER",
                         "NAME", "STATE", "GPUS", "PRIO", "TIME", "GPUS / WHY");
  for (const auto& j : (*answer)["jobs"]) {
    ctx.out << fmt::format("{:>6}  {:<10} {:<16} {:<9} {:>4} {:>5}  {:<8}  {}\n",
                           j["id"].get<std::int64_t>(), cell(j.value("user", ""), 10),
                           cell(j.value("name", ""), 16), j.value("state", ""),
                           j["gpus"].get<unsigned>(), j["priority"].get<int>(),
                           short_duration(elapsed_seconds(j, now)), where_or_why(j));
  }
  std::string blocked = answer->value("blocked", "");
  if (!blocked.empty()) ctx.out << "(nothing can start: " << blocked << ")\n";
  return kExitOk;
}

struct IdsFlags {
  std::string state_dir;
  std::vector<std::int64_t> ids;
  bool json = false;
};

int run_cancel(const IdsFlags& f, Context& ctx) {
  int rc = kExitOk;
  auto answer = queue_call(ctx, "cancel", f.state_dir, {{"op", "cancel"}, {"ids", f.ids}}, rc);
  if (!answer) return rc;
  if (f.json) {
    ctx.out << (*answer)["results"].dump(2) << "\n";
  }
  int worst = kExitOk;
  for (const auto& r : (*answer)["results"]) {
    auto id = r["id"].dump();
    if (r.value("ok", false)) {
      std::string state = r.value("state", "");
      if (!f.json) {
        ctx.out << "job " << id << ": "
                << (state == "cancelling" ? "cancelling (its process group is being stopped)"
                                          : state)
                << "\n";
      }
    } else {
      ctx.err << "cardiac cancel: job " << id << ": " << r.value("error", "") << "\n";
      worst = kExitUsage;
    }
  }
  return worst;
}

int run_hold(const IdsFlags& f, bool hold, Context& ctx) {
  int worst = kExitOk;
  const char* verb = hold ? "hold" : "release";
  for (auto id : f.ids) {
    int rc = kExitOk;
    auto answer = queue_call(ctx, verb, f.state_dir, {{"op", verb}, {"id", id}}, rc);
    if (!answer) {
      worst = std::max(worst, rc);
      continue;
    }
    ctx.out << "job " << id << ": " << (*answer)["job"].value("state", "") << "\n";
  }
  return worst;
}

}  // namespace

Runner register_submit(CLI::App& sub) {
  auto f = std::make_shared<SubmitFlags>();
  sub.add_option("--gpus", f->gpus, "GPUs the job needs")->capture_default_str();
  sub.add_option("--gpu-mem", f->gpu_mem, "Memory per GPU, e.g. 20G (powers of 1024)");
  sub.add_flag("--shared", f->shared, "May share GPUs with other --shared jobs (by memory)");
  sub.add_option("--priority", f->priority_text,
                 "-1000..1000 (above 0: root or admins only; default 0)");
  sub.add_option("--time", f->time, "Time limit, e.g. 2h or 90m (SIGTERM, then SIGKILL)");
  sub.add_option("--after", f->after, "Start only after these jobs completed (ID, or ID,ID)");
  sub.add_option("--name", f->name, "Job name (default: the command's base name)");
  sub.add_option("--account", f->account,
                 "Fair-share account to charge (one of yours; default: your first)");
  sub.add_flag("-q,--quiet", f->quiet, "Print only the job id");
  sub.add_flag("--json", f->json, "Print the queued job as JSON");
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  sub.add_option("command", f->command, "-- COMMAND [ARGS...]");
  sub.footer("The command follows `--`; it runs with this environment and working directory.");
  // Unknown options are collected and named in our own error rather than CLI11's, which
  // reports whatever argument it happened to stop at.
  sub.allow_extras();
  return [f, &sub](Context& ctx) {
    f->unknown = sub.remaining();
    return run_submit(*f, ctx);
  };
}

Runner register_queue(CLI::App& sub) {
  auto f = std::make_shared<ListFlags>();
  sub.add_flag("--all", f->all, "Also jobs that ended (the latest 1000)");
  sub.add_flag("--json", f->json, "JSON output");
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_queue(*f, ctx); };
}

Runner register_cancel(CLI::App& sub) {
  auto f = std::make_shared<IdsFlags>();
  sub.add_option("ID", f->ids, "Job ids")->required();
  sub.add_flag("--json", f->json, "JSON output");
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_cancel(*f, ctx); };
}

Runner register_hold(CLI::App& sub) {
  auto f = std::make_shared<IdsFlags>();
  sub.add_option("ID", f->ids, "Job ids")->required();
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_hold(*f, true, ctx); };
}

Runner register_release(CLI::App& sub) {
  auto f = std::make_shared<IdsFlags>();
  sub.add_option("ID", f->ids, "Job ids")->required();
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_hold(*f, false, ctx); };
}

}  // namespace cardiac::cli
