// SPDX-License-Identifier: Apache-2.0
// `cardiac top`: a full-screen view of every GPU, its processes, the alerts and the queue,
// refreshed every interval, from the running agent or a sample of its own (docs/top.md).
#include <langinfo.h>
#include <signal.h>

#include <atomic>
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "config/config.h"
#include "core/format.h"
#include "core/strings.h"
#include "top/render.h"
#include "top/screen.h"
#include "top/source.h"

namespace cardiac::cli {
namespace {

struct TopOptions {
  double interval = 1.0;
  bool no_color = false;
  bool ascii = false;
  bool local = false;
  std::string nvml_lib;
  std::string root;
  std::string timeout = "5s";
  std::string state_dir;
  std::string config = config::kDefaultConfigPath;
  bool config_named = false;
  bool timeout_given = false;
};

// The signal that asked us to stop (0: none). The main loop sees it within one key timeout.
std::atomic<int> g_stop_signal{0};

void on_stop(int sig) {
  g_stop_signal = sig;
}

// Handlers without SA_RESTART, so a signal also ends a pending key read at once.
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// The key read's timeout: how soon a new sample is drawn after it arrives.
constexpr int kKeyTimeoutMs = 100;

int run_top(TopOptions o, Context& ctx) {
  auto cfg = config::load_config(o.config, o.config_named);
  if (!cfg) {
    ctx.err << "cardiac top: " << cfg.error().what() << "\n";
    return kExitUsage;
  }
  if (!(o.interval >= 0.1 && o.interval <= 3600)) {
    ctx.err << "cardiac top: --interval: between 0.1 and 3600 seconds, got " << o.interval << "\n";
    return kExitUsage;
  }
  if (!o.timeout_given) o.timeout = fmt::format("{}ns", cfg->nvml.timeout);
  auto timeout = parse_duration_ns(o.timeout);
  if (!timeout || *timeout <= 0) {
    ctx.err << "cardiac top: --timeout: not a duration: '" << o.timeout << "' (e.g. 5s, 500ms)\n";
    return kExitUsage;
  }
  top::SourceOptions so;
  so.config = std::move(*cfg);
  if (!o.root.empty()) so.config.host.root = o.root;
  so.state_dir = o.state_dir.empty() ? so.config.agent.state_dir : o.state_dir;
  if (o.state_dir.empty()) {
    if (const char* env = std::getenv("CARDIAC_STATE_DIR"); env && *env) so.state_dir = env;
  }
  so.nvml_lib = o.nvml_lib;
  so.timeout = *timeout;
  so.interval = static_cast<DurationNs>(o.interval * 1e9);
  so.use_agent = !o.local;

  // The character set only (ncursesw needs it for UTF-8); numbers keep the C locale's form.
  std::setlocale(LC_CTYPE, "");
  const bool utf8 = !o.ascii && std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  const char* no_color_env = std::getenv("NO_COLOR");
  const bool want_color = !o.no_color && !(no_color_env && *no_color_env);

  install_stop_handlers();
  auto screen = top::Screen::open(want_color);
  if (!screen) {
    ctx.err << "cardiac top: " << screen.error().what() << "\n";
    return kExitCannotRun;
  }
  // The poller's thread blocks the stop signals, so they interrupt this thread's key reads.
  std::optional<top::Poller> poller;
  {
    sigset_t block, old;
    sigemptyset(&block);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) sigaddset(&block, sig);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    poller.emplace(so, ctx.clock);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  top::Snapshot snap;
  snap.message = "waiting for the first sample";
  top::History history;
  top::ViewState state;
  bool dirty = true;
  while (g_stop_signal == 0) {
    if (auto u = poller->take()) {
      for (const auto& p : u->seed) history.add(p.gpu, p.metric, p.time, p.value);
      history.record(u->snapshot);
      snap = std::move(u->snapshot);
      dirty = true;
    }
    if (dirty) {
      top::clamp_selection(state, snap);
      top::RenderOptions ro{(*screen)->width(), (*screen)->height(), utf8, ctx.clock.now(),
                            o.interval};
      (*screen)->draw(top::render(snap, history, state, ro));
      dirty = false;
    }
    const int key = (*screen)->read_key(kKeyTimeoutMs);
    if (key == top::Screen::kNoKey) continue;
    if (key == top::Screen::kResized) {
      dirty = true;
      continue;
    }
    const top::Action a = top::handle_key(state, key);
    if (a == top::Action::kQuit) break;
    if (a == top::Action::kRedraw) dirty = true;
  }
  // The terminal first: the poller may still wait for an NVML answer (up to --timeout).
  (*screen)->close();
  poller.reset();
  const int sig = g_stop_signal.load();
  // Ctrl-C is a way to quit like q; another signal ends the program as that signal would.
  return sig == 0 || sig == SIGINT ? kExitOk : 128 + sig;
}

}  // namespace

Runner register_top(CLI::App& sub) {
  auto o = std::make_shared<TopOptions>();
  sub.add_option("--interval", o->interval, "Seconds between refreshes (default 1)")
      ->option_text("SECONDS");
  sub.add_flag("--no-color", o->no_color,
               "No colours (also when NO_COLOR is set or the terminal has none)");
  sub.add_flag("--ascii", o->ascii, "Bars and sparklines in ASCII (the default without UTF-8)");
  sub.add_flag("--local", o->local, "Sample locally even when an agent runs");
  sub.add_option("--nvml-lib", o->nvml_lib,
                 "NVML library for local samples (default libnvidia-ml.so.1, then "
                 "libnvidia-ml.so)")
      ->option_text("PATH");
  sub.add_option("--root", o->root, "Read /proc and /sys under DIR (a captured host tree)")
      ->option_text("DIR");
  sub.add_option("--timeout", o->timeout,
                 "Deadline for each NVML answer of a local sample (default 5s, e.g. 500ms)")
      ->option_text("DURATION");
  sub.add_option("--state-dir", o->state_dir, "The agent's state directory (for its API token)")
      ->option_text("DIR");
  sub.add_option("--config", o->config, "Configuration file (default /etc/cardiac/cardiac.toml)")
      ->option_text("FILE");
  sub.footer(
      "Shows every GPU with bars and a utilization sparkline (UTIL, MEM, TEMP against the\n"
      "slowdown threshold, POWER against the limit), its verdict and reason, throttle reasons\n"
      "and processes (user, job, memory); the agent's firing alerts and its job queue.\n"
      "\n"
      "Reads the agent at agent.listen when one answers and is sampling, else samples through\n"
      "the isolated NVML worker like `cardiac status --watch`.\n"
      "\n"
      "Keys: q quit; tab, 1-4 views (GPUs, processes, alerts, queue); s, left, right sort key;\n"
      "S reverse; up, down select; / filter by GPU index (3, 0,5) or process, user or job;\n"
      "Esc clear the filter; h help.\n"
      "\n"
      "Exit status: 0 after q or Ctrl-C, 2 bad flags or configuration, 3 no terminal,\n"
      "128+N after signal N (SIGTERM, SIGHUP). Full description: docs/top.md.");
  return [o, &sub](Context& ctx) {
    o->config_named = sub.count("--config") > 0;
    o->timeout_given = sub.count("--timeout") > 0;
    return run_top(*o, ctx);
  };
}

}  // namespace cardiac::cli
