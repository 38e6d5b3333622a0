// SPDX-License-Identifier: Apache-2.0
// `cardiac agent`: run the daemon until SIGINT/SIGTERM.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "agent/agent.h"
#include "agent/api_token.h"
#include "cli/commands.h"
#include "config/agent_config.h"
#include "config/config.h"
#include "core/strings.h"

namespace cardiac::cli {
namespace {

struct AgentFlags {
  std::string config = config::kDefaultConfigPath;
  std::string state_dir;
  std::string listen;
  std::string nvml_lib;
  std::string metrics_compat;
  std::string interval;
  bool print_default_config = false;
};

constexpr int kMallocArenas = 2;

// The main thread sleeps in read() on this pipe until a signal handler, on whichever thread the
// signal lands, writes a byte: no periodic wake-up to look at a flag.
std::atomic<bool> g_stop{false};
int g_stop_pipe[2] = {-1, -1};
void on_signal(int) {
  g_stop = true;
  const int saved = errno;
  char byte = 1;
  (void)!::write(g_stop_pipe[1], &byte, 1);
  errno = saved;
}

// Returns once SIGINT or SIGTERM arrived.
void wait_for_stop_signal() {
  char byte = 0;
  while (!g_stop) {
    if (::read(g_stop_pipe[0], &byte, 1) < 0 && errno != EINTR) {
      timespec ts{0, 100 * kNsPerMs};  // cannot happen on a pipe of our own; but never spin
      nanosleep(&ts, nullptr);
    }
  }
}

int run_agent(const AgentFlags& f, bool config_named, Context& ctx) {
  if (f.print_default_config) {
    ctx.out << config::default_config_text();
    return kExitOk;
  }
  auto cfg = config::load_config(f.config, config_named);
  if (!cfg) {
    ctx.err << "cardiac agent: " << cfg.error().what() << "\n";
    return kExitUsage;
  }
  // Flags win over the environment, which wins over the file: the same order the clients
  // use to find the agent (`resolve_state_dir`), so both sides agree on the directory.
  if (!f.state_dir.empty()) {
    cfg->agent.state_dir = f.state_dir;
  } else if (const char* env = std::getenv("CARDIAC_STATE_DIR"); env && *env) {
    cfg->agent.state_dir = env;
  }
  if (!f.listen.empty()) cfg->agent.listen = f.listen;
  if (!f.nvml_lib.empty()) cfg->nvml.library = f.nvml_lib;
  if (!f.metrics_compat.empty()) cfg->agent.metrics_compat = f.metrics_compat;
  if (!f.interval.empty()) {
    auto ns = parse_duration_ns(f.interval);
    if (!ns) {
      ctx.err << "cardiac agent: --interval: not a duration: '" << f.interval << "'\n";
      return kExitUsage;
    }
    if (*ns <= 0) {
      ctx.err << "cardiac agent: --interval '" << f.interval
              << "': the sampling interval must be positive (e.g. 1s, 100ms)\n";
      return kExitUsage;
    }
    cfg->agent.interval = *ns;
  }
  // What the start message names; the configuration moves into the agent below.
  const auto listen = config::split_listen(cfg->agent.listen);
  const std::string scheme = cfg->agent.tls_cert.empty() ? "http" : "https";
  const std::string token_from = cfg->agent.token.empty()
                                     ? agent::api_token_path(cfg->agent.state_dir)
                                     : std::string("the configuration");
  // glibc gives each thread that allocates an arena of its own (up to 8 per core): with a
  // dozen mostly idle threads that is a dozen heaps each keeping freed pages. Two arenas hold
  // the agent's few allocations per second without contention and keep its RSS flat.
  mallopt(M_ARENA_MAX, kMallocArenas);
  agent::AgentOptions options;
  options.config = std::move(*cfg);
  agent::Agent a(std::move(options), ctx.clock);
  if (auto st = a.start(); !st) {
    ctx.err << "cardiac agent: " << st.error().what() << "\n";
    return st.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitCannotRun;
  }
  // The write end never blocks: a handler must not hang on a full pipe, and one byte is enough.
  if (::pipe2(g_stop_pipe, O_CLOEXEC) != 0 || ::fcntl(g_stop_pipe[1], F_SETFL, O_NONBLOCK) != 0) {
    ctx.err << "cardiac agent: pipe: " << std::strerror(errno) << "\n";
    return kExitCannotRun;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  std::string host = listen ? listen->first : "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
  ctx.err << "cardiac agent: serving on " << scheme << "://" << host << ":" << a.port()
          << " (API token: " << token_from << ")\n";
  wait_for_stop_signal();
  a.stop();
  return kExitOk;
}

}  // namespace

Runner register_agent(CLI::App& sub) {
  auto f = std::make_shared<AgentFlags>();
  sub.add_option("--config", f->config, "Configuration file")->capture_default_str();
  sub.add_option("--state-dir", f->state_dir,
                 "History database and state (else CARDIAC_STATE_DIR, agent.state_dir, "
                 "/var/lib/cardiac)");
  sub.add_option("--listen", f->listen, "HTTP address:port (default 127.0.0.1:9847)");
  sub.add_option("--nvml-lib", f->nvml_lib, "NVML library to load");
  // option_text: the help shows `--metrics-compat dcgm`, not the validator's `TEXT:{dcgm}`.
  sub.add_option("--metrics-compat", f->metrics_compat, "Also export dcgm-exporter's metric names")
      ->check(CLI::IsMember({"dcgm"}))
      ->option_text("dcgm");
  sub.add_option("--interval", f->interval, "GPU sampling interval (default 1s)");
  sub.add_flag("--print-default-config", f->print_default_config,
               "Print the commented default configuration and exit");
  return [f, &sub](Context& ctx) { return run_agent(*f, sub.count("--config") > 0, ctx); };
}

}  // namespace cardiac::cli
