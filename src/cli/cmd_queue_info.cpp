// SPDX-License-Identifier: Apache-2.0
// `cardiac logs`, `cardiac jobs`, `cardiac share`, `cardiac why`, `cardiac fence`: what the
// queue did and why, from the agent over its socket.
#include <cmath>
#include <ctime>

#include "cli/commands.h"
#include "cli/queue_client.h"
#include "core/format.h"
#include "core/time.h"
#include "server/params.h"

namespace cardiac::cli {
namespace {

struct LogsFlags {
  std::string state_dir, stream = "both";
  std::int64_t id = 0;
  bool follow = false;
};

void pause_briefly() {
  timespec ts{0, 200 * kNsPerMs};
  nanosleep(&ts, nullptr);
}

int run_logs(const LogsFlags& f, Context& ctx) {
  struct Stream {
    const char* name;
    std::ostream& to;
    std::int64_t offset = 0;
    bool done = false;
  };
  std::vector<Stream> streams;
  if (f.stream != "err") streams.push_back({"out", ctx.out});
  if (f.stream != "out") streams.push_back({"err", ctx.err});
  std::string state;  // the job's, from the last answer
  while (true) {
    bool progressed = false;
    bool all_done = true;
    for (auto& s : streams) {
      if (s.done) continue;
      int rc = kExitOk;
      auto answer =
          queue_call(ctx, "logs", f.state_dir,
                     {{"op", "logs"}, {"id", f.id}, {"stream", s.name}, {"offset", s.offset}}, rc);
      if (!answer) return rc;
      const std::string& data = (*answer)["data"].get_ref<const std::string&>();
      if (!data.empty()) {
        s.to << data << std::flush;
        progressed = true;
      }
      state = answer->value("state", "");
      s.offset = (*answer)["offset"].get<std::int64_t>();
      bool at_end = s.offset >= (*answer)["size"].get<std::int64_t>();
      s.done = (*answer)["done"].get<bool>() || (!f.follow && at_end);
      all_done = all_done && s.done;
    }
    if (all_done) {
      // Following a job to its end answers like waiting for it: 1 unless it completed, so
      // `cardiac logs -f ID && next-step` does not go on after a failure.
      if (!f.follow || state == "completed") return kExitOk;
      ctx.err << fmt::format("cardiac logs: job {} ended {}\n", f.id, state);
      return kExitFindings;
    }
    if (!progressed) pause_briefly();
  }
}

struct JobsFlags {
  std::string state_dir, since = "24h";
  bool json = false;
};

int run_jobs(const JobsFlags& f, Context& ctx) {
  auto since = server::parse_time_param(f.since, ctx.clock.now());
  if (!since) {
    ctx.err << "cardiac jobs: --since: " << since.error().what() << "\n";
    return kExitUsage;
  }
  int rc = kExitOk;
  auto answer = queue_call(ctx, "jobs", f.state_dir, {{"op", "jobs"}, {"since_ns", *since}}, rc);
  if (!answer) return rc;
  if (f.json) {
    ctx.out << (*answer)["jobs"].dump(2) << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format("{:>6}  {:<10} {:<16} {:<9} {:>5}  {:<24}  {:<8} {:<7}  {}\n", "ID",
                         "USER", "NAME", "STATE", "EXIT", "ENDED", "RAN", "GPU IDS", "REASON");
  for (const auto& j : (*answer)["jobs"]) {
    std::string exit = j["exit_code"].is_number() ? std::to_string(j["exit_code"].get<int>())
                       : j["signal"].is_number()  ? "sig" + std::to_string(j["signal"].get<int>())
                                                  : "-";
    double ran =
        j["start_ns"].is_number() && j["end_ns"].is_number()
            ? static_cast<double>(j["end_ns"].get<TimeNs>() - j["start_ns"].get<TimeNs>()) / 1e9
            : NAN;
    ctx.out << fmt::format("{:>6}  {:<10} {:<16} {:<9} {:>5}  {:<24}  {:<8} {:<7}  {}\n",
                           j["id"].get<std::int64_t>(), cell(j.value("user", ""), 10),
                           cell(j.value("name", ""), 16), j.value("state", ""), exit,
                           j["ended"].is_string() ? j["ended"].get<std::string>() : "-",
                           std::isnan(ran) ? "-" : short_duration(ran), gpu_list(j["gpu_indices"]),
                           j.value("reason", ""));
  }
  return kExitOk;
}

struct SimpleFlags {
  std::string state_dir;
  std::int64_t id = 0;
  bool json = false;
};

std::string number(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return fmt::format("{:.4g}", v.get<double>());
}

int run_share(const SimpleFlags& f, Context& ctx) {
  int rc = kExitOk;
  auto answer = queue_call(ctx, "share", f.state_dir, {{"op", "share"}}, rc);
  if (!answer) return rc;
  if (f.json) {
    ctx.out << answer->dump(2) << "\n";
    return kExitOk;
  }
  ctx.out << "policy " << answer->value("policy", "") << "\n";
  ctx.out << fmt::format("{:<14} {:<12} {:>10} {:>10} {:>12} {:>10} {:>10}\n", "ACCOUNT", "USER",
                         "RAW_SHARES", "NORM_SHARE", "RAW_USAGE", "NORM_USAGE", "FAIRSHARE");
  for (const auto& r : (*answer)["rows"]) {
    // Indented by depth in the account tree, as sshare shows it.
    std::string account(2 * r.value("depth", 0U), ' ');
    account += r.value("account", "");
    ctx.out << fmt::format("{:<14} {:<12} {:>10} {:>10} {:>12} {:>10} {:>10}\n", cell(account, 14),
                           cell(r.value("user", ""), 12), number(r["raw_shares"]),
                           number(r["norm_shares"]), number(r["raw_usage"]),
                           number(r["norm_usage"]), number(r["factor"]));
  }
  return kExitOk;
}

int run_why(const SimpleFlags& f, Context& ctx) {
  int rc = kExitOk;
  auto answer = queue_call(ctx, "why", f.state_dir, {{"op", "why"}, {"id", f.id}}, rc);
  if (!answer) return rc;
  if (f.json) {
    ctx.out << answer->dump(2) << "\n";
    return kExitOk;
  }
  const auto& j = (*answer)["job"];
  ctx.out << fmt::format("job {} ({}) of {}: {}\n", j["id"].get<std::int64_t>(),
                         j.value("name", ""), j.value("user", ""), j.value("state", ""));
  for (const auto& line : (*answer)["explanation"]) {
    ctx.out << "  " << line.get<std::string>() << "\n";
  }
  for (const auto& a : (*answer)["attempts"]) {
    ctx.out << fmt::format("  attempt {}: {} on GPU {} → {}{}\n", a["attempt"].get<unsigned>(),
                           a.value("started", ""), gpu_list(a["gpu_indices"]),
                           a.value("outcome", "").empty() ? "running" : a.value("outcome", ""),
                           a.value("reason", "").empty() ? "" : " (" + a.value("reason", "") + ")");
  }
  return kExitOk;
}

struct FenceFlags {
  std::string state_dir, action = "list", gpu, reason;
  bool all = false, json = false;
};

int run_fence(const FenceFlags& f, Context& ctx) {
  nlohmann::json req{{"op", "fence"}, {"action", f.action}, {"all", f.all}};
  if (!f.gpu.empty()) req["gpu"] = f.gpu;
  if (!f.reason.empty()) req["reason"] = f.reason;
  int rc = kExitOk;
  auto answer = queue_call(ctx, "fence " + f.action, f.state_dir, req, rc);
  if (!answer) return rc;
  if (f.json) {
    ctx.out << answer->dump(2) << "\n";
    return kExitOk;
  }
  if (f.action == "add") {
    ctx.out << "GPU " << f.gpu << " fenced: no new jobs start on it\n";
    return kExitOk;
  }
  if (f.action == "clear") {
    ctx.out << "GPU " << f.gpu << ": fence cleared\n";
    if (answer->contains("warning")) ctx.err << "warning: " << (*answer)["warning"] << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format("{:>4}  {:<42} {:<24} {:<20} {}\n", "GPU", "UUID", "SINCE", "BY",
                         "REASON");
  for (const auto& fe : (*answer)["fences"]) {
    std::string reason = fe.value("reason", "");
    if (fe["cleared"].is_string()) {
      reason += " [cleared " + fe["cleared"].get<std::string>() + " by " +
                fe.value("cleared_by", "") + "]";
    }
    ctx.out << fmt::format("{:>4}  {:<42} {:<24} {:<20} {}\n", fe["gpu"].get<unsigned>(),
                           fe.value("uuid", "").empty() ? "-" : fe.value("uuid", ""),
                           fe.value("since", ""), cell(fe.value("who", ""), 20), reason);
  }
  return kExitOk;
}

}  // namespace

Runner register_logs(CLI::App& sub) {
  auto f = std::make_shared<LogsFlags>();
  sub.add_option("ID", f->id, "Job id")->required();
  sub.add_flag("-f,--follow", f->follow, "Keep printing new output until the job ends");
  sub.add_option("--stream", f->stream, "out (stdout), err (stderr) or both")
      ->check(CLI::IsMember({"out", "err", "both"}))
      ->capture_default_str();
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_logs(*f, ctx); };
}

Runner register_jobs(CLI::App& sub) {
  auto f = std::make_shared<JobsFlags>();
  sub.add_option("--since", f->since, "Jobs that ended since: 24h (ago), RFC 3339, unix seconds")
      ->capture_default_str();
  sub.add_flag("--json", f->json, "JSON output");
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_jobs(*f, ctx); };
}

Runner register_share(CLI::App& sub) {
  auto f = std::make_shared<SimpleFlags>();
  sub.add_flag("--json", f->json, "JSON output");
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_share(*f, ctx); };
}

Runner register_why(CLI::App& sub) {
  auto f = std::make_shared<SimpleFlags>();
  sub.add_option("ID", f->id, "Job id")->required();
  sub.add_flag("--json", f->json, "JSON output");
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_why(*f, ctx); };
}

Runner register_fence(CLI::App& sub) {
  auto f = std::make_shared<FenceFlags>();
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  sub.add_flag("--json", f->json, "JSON output");
  auto* list = sub.add_subcommand("list", "Fenced GPUs (with --all also cleared fences)");
  list->add_flag("--all", f->all, "Include cleared fences");
  auto* add = sub.add_subcommand("add", "Fence a GPU: no new jobs start on it");
  add->add_option("GPU", f->gpu, "GPU index or UUID")->required();
  add->add_option("--reason", f->reason, "Why (shown in `fence list` and `why`)")->required();
  auto* clear = sub.add_subcommand("clear", "Clear a GPU's fences");
  clear->add_option("GPU", f->gpu, "GPU index or UUID")->required();
  for (auto* action : {list, add, clear}) action->fallthrough();
  sub.require_subcommand(0, 1);
  return [f, add, clear](Context& ctx) {
    if (add->parsed()) f->action = "add";
    if (clear->parsed()) f->action = "clear";
    return run_fence(*f, ctx);
  };
}

}  // namespace cardiac::cli
