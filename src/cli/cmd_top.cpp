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
#include "fleet/prometheus.h"
#include "top/fleet.h"
#include "top/fleet_source.h"
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
  bool fleet = false;
  std::string prometheus;
  std::string job;
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

// Blocks the stop signals while `make` starts a thread, so they interrupt this thread's key
// reads and not the fetch thread.
template <typename F>
void start_fetch_thread(F make) {
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  make();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

int exit_status() {
  const int sig = g_stop_signal.load();
  // Ctrl-C is a way to quit like q; another signal ends the program as that signal would.
  return sig == 0 || sig == SIGINT ? kExitOk : 128 + sig;
}

// `cardiac top --fleet`: every node of the Prometheus that scrapes the agents (docs/fleet.md).
int run_fleet_top(const TopOptions& o, const config::Config& cfg, bool utf8, bool want_color,
                  Context& ctx) {
  const std::string url = o.prometheus.empty() ? cfg.fleet.prometheus : o.prometheus;
  if (url.empty()) {
    ctx.err << "cardiac top: --fleet: no Prometheus to read: pass --prometheus "
               "http://HOST:9090 or set [fleet] prometheus in "
            << o.config << "\n";
    return kExitUsage;
  }
  auto opts = fleet::prometheus_options(url, cfg.fleet.timeout, cfg.fleet.bearer_token_file);
  if (!opts) {
    ctx.err << "cardiac top: [fleet] bearer_token_file: " << opts.error().what() << "\n";
    return kExitCannotRun;
  }
  auto prom = fleet::Prometheus::connect(*opts);
  if (!prom) {
    ctx.err << "cardiac top: --prometheus: " << prom.error().what() << "\n";
    return kExitUsage;
  }
  top::FleetScreen fs;
  fs.prometheus = url;
  fs.job = o.job.empty() ? cfg.fleet.job : o.job;

  install_stop_handlers();
  auto screen = top::Screen::open(want_color);
  if (!screen) {
    ctx.err << "cardiac top: " << screen.error().what() << "\n";
    return kExitCannotRun;
  }
  std::optional<top::FleetPoller> poller;
  start_fetch_thread([&] {
    poller.emplace(std::move(*prom), fs.job, static_cast<DurationNs>(o.interval * 1e9), ctx.clock);
  });
  top::FleetState state;
  bool dirty = true;
  TimeNs drawn_at = 0;
  while (g_stop_signal == 0) {
    if (auto r = poller->take()) {
      fs.waiting = false;
      if (r->view) {
        fs.view = std::move(*r->view);
        fs.read_at = r->at;
        fs.error.clear();
      } else {
        fs.error = r->view.error().what();
      }
      dirty = true;
    }
    // The "read N s ago" figure moves on while Prometheus is slow.
    if (ctx.clock.now() - drawn_at >= kNsPerSec) dirty = true;
    if (dirty) {
      top::clamp_selection(state, fs);
      drawn_at = ctx.clock.now();
      top::RenderOptions ro{(*screen)->width(), (*screen)->height(), utf8, drawn_at, o.interval};
      (*screen)->draw(top::render_fleet(fs, state, ro));
      dirty = false;
    }
    const int key = (*screen)->read_key(kKeyTimeoutMs);
    if (key == top::Screen::kNoKey) continue;
    if (key == top::Screen::kResized) {
      dirty = true;
      continue;
    }
    const top::Action a = top::handle_fleet_key(state, fs, key);
    if (a == top::Action::kQuit) break;
    if (a == top::Action::kRedraw) dirty = true;
  }
  // The terminal first: the poller may still wait for Prometheus (up to [fleet] timeout).
  (*screen)->close();
  poller.reset();
  return exit_status();
}

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
  if (!o.fleet && (!o.prometheus.empty() || !o.job.empty())) {
    ctx.err << "cardiac top: --prometheus and --job go with --fleet\n";
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

  if (o.fleet) {
    if (o.timeout_given) {
      if (auto t = parse_duration_ns(o.timeout)) so.config.fleet.timeout = *t;
    }
    return run_fleet_top(o, so.config, utf8, want_color, ctx);
  }

  install_stop_handlers();
  auto screen = top::Screen::open(want_color);
  if (!screen) {
    ctx.err << "cardiac top: " << screen.error().what() << "\n";
    return kExitCannotRun;
  }
  std::optional<top::Poller> poller;
  start_fetch_thread([&] { poller.emplace(so, ctx.clock); });

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
  return exit_status();
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
                 "Deadline for each NVML answer of a local sample (default 5s, e.g. 500ms); "
                 "with --fleet, for each Prometheus answer (default [fleet] timeout)")
      ->option_text("DURATION");
  sub.add_option("--state-dir", o->state_dir, "The agent's state directory (for its API token)")
      ->option_text("DIR");
  sub.add_option("--config", o->config, "Configuration file (default /etc/cardiac/cardiac.toml)")
      ->option_text("FILE");
  sub.add_flag("--fleet", o->fleet,
               "Every node that Prometheus scrapes instead of this machine (docs/fleet.md)");
  sub.add_option("--prometheus", o->prometheus,
                 "With --fleet: the Prometheus that scrapes the agents (default: [fleet] "
                 "prometheus)")
      ->option_text("URL");
  sub.add_option("--job", o->job, "With --fleet: the agents' scrape job (default: [fleet] job)")
      ->option_text("NAME");
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
      "--fleet shows every node of the Prometheus that scrapes the agents ([fleet] prometheus\n"
      "or --prometheus): verdict, GPUs, firing alerts, Xids and why; Enter expands a node into\n"
      "its GPUs and alerts, a expands all. A node Prometheus cannot scrape reads UNKNOWN.\n"
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
