// SPDX-License-Identifier: Apache-2.0
// `cardiac agent`: run the daemon until SIGINT/SIGTERM; SIGHUP re-reads the configuration.
#include <fcntl.h>
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
#include "core/format.h"
#include "core/log.h"
#include "core/malloc_tuning.h"
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

// The main thread sleeps in read() on this pipe until a signal handler, on whichever thread the
// signal lands, writes a byte: no periodic wake-up to look at a flag.
std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};
int g_signal_pipe[2] = {-1, -1};
void wake_main_thread() {
  const int saved = errno;
  char byte = 1;
  (void)!::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}
void on_stop_signal(int) {
  g_stop = true;
  wake_main_thread();
}
void on_reload_signal(int) {
  g_reload = true;
  wake_main_thread();
}

enum class Wake { kStop, kReload };

// Returns once SIGINT or SIGTERM (stop) or SIGHUP (reload) arrived; a stop wins.
Wake wait_for_signal() {
  char byte = 0;
  while (true) {
    if (g_stop) return Wake::kStop;
    if (g_reload.exchange(false)) return Wake::kReload;
    if (::read(g_signal_pipe[0], &byte, 1) < 0 && errno != EINTR) {
      timespec ts{0, 100 * kNsPerMs};  // cannot happen on a pipe of our own; but never spin
      nanosleep(&ts, nullptr);
    }
  }
}

// The configuration file with the environment and the flags applied over it, in that order
// (flags win over the environment, which wins over the file): at start and on every reload,
// so that a flag never reads as a changed key.
Result<config::Config> effective_config(const AgentFlags& f, bool config_named) {
  auto cfg = config::load_config(f.config, config_named);
  if (!cfg) return fail(cfg.error());
  // The same order the clients use to find the agent (`resolve_state_dir`), so both sides
  // agree on the directory.
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
      return fail(Error::invalid(fmt::format("not a duration: '{}'", f.interval), "--interval"));
    }
    if (*ns <= 0) {
      return fail(Error::invalid(fmt::format(
          "--interval '{}': the sampling interval must be positive (e.g. 1s, 100ms)", f.interval)));
    }
    cfg->agent.interval = *ns;
  }
  return cfg;
}

// SIGHUP (`systemctl reload cardiac`): reads the file again and hands it to the agent. A file
// that does not parse is logged with its file:line:column and the agent keeps what it runs.
void reload(const AgentFlags& f, bool config_named, agent::Agent& a) {
  log::info("reload: reading {}", f.config);
  auto cfg = effective_config(f, config_named);
  Status st = cfg ? a.reload(*cfg) : Status(fail(cfg.error()));
  if (!st) {
    log::error("reload failed, the agent keeps its previous configuration: {}", st.error().what());
  }
}

// The write end never blocks: a handler must not hang on a full pipe, and one byte is enough.
// Installed before the agent starts, so a stop or reload signal during the start is not lost
// (and SIGHUP's default action, to terminate, never applies).
bool install_signal_handlers() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0 ||
      ::fcntl(g_signal_pipe[1], F_SETFL, O_NONBLOCK) != 0) {
    return false;
  }
  signal(SIGINT, on_stop_signal);
  signal(SIGTERM, on_stop_signal);
  signal(SIGHUP, on_reload_signal);
  return true;
}

int run_agent(const AgentFlags& f, bool config_named, Context& ctx) {
  if (f.print_default_config) {
    ctx.out << config::default_config_text();
    return kExitOk;
  }
  // Once, before anything is read or said: the process starts again from main() with the same
  // arguments and the agent's allocator tunables (core/malloc_tuning.h).
  reexec_with_agent_tunables();
  // Under systemd the journal stamps and ranks each line (journalctl -u cardiac).
  log::use_journal_format_if_connected();
  auto cfg = effective_config(f, config_named);
  if (!cfg) {
    ctx.err << "cardiac agent: " << cfg.error().what() << "\n";
    return kExitUsage;
  }
  // What the start message names; the configuration moves into the agent below.
  const auto listen = config::split_listen(cfg->agent.listen);
  const std::string scheme = cfg->agent.tls_cert.empty() ? "http" : "https";
  const std::string token_from = cfg->agent.token.empty()
                                     ? agent::api_token_path(cfg->agent.state_dir)
                                     : std::string("the configuration");
  tune_malloc_for_agent();
  if (!install_signal_handlers()) {
    ctx.err << "cardiac agent: pipe: " << std::strerror(errno) << "\n";
    return kExitCannotRun;
  }
  agent::AgentOptions options;
  options.config = std::move(*cfg);
  agent::Agent a(std::move(options), ctx.clock);
  if (auto st = a.start(); !st) {
    ctx.err << "cardiac agent: " << st.error().what() << "\n";
    return st.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitCannotRun;
  }
  std::string host = listen ? listen->first : "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
  ctx.err << "cardiac agent: serving on " << scheme << "://" << host << ":" << a.port()
          << " (API token: " << token_from << ")\n";
  while (wait_for_signal() == Wake::kReload) reload(f, config_named, a);
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
  sub.footer(
      "Signals: SIGTERM or SIGINT stop the agent (queue jobs keep running and are adopted at the "
      "next start); SIGHUP (systemctl reload cardiac) re-reads the configuration and the rules "
      "file: rules and notifiers change live, other keys are logged as needing a restart, and a "
      "file with an error is logged and the running configuration kept (docs/agent.md).");
  return [f, &sub](Context& ctx) { return run_agent(*f, sub.count("--config") > 0, ctx); };
}

}  // namespace cardiac::cli
