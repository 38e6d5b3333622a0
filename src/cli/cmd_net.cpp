// SPDX-License-Identifier: Apache-2.0
// `cardiac net top`: which processes use the network now — two socket snapshots a window
// apart (netproc), the busiest processes with user, rates, share of the link and remotes.
#include <time.h>

#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/strings.h"
#include "core/text.h"
#include "host/network.h"
#include "netproc/json.h"
#include "netproc/snapshot.h"
#include "platform/fs.h"

namespace cardiac::cli {
namespace {

constexpr std::size_t kCommandWidth = 60;  // of the text table; --json has the whole line

struct NetTopOptions {
  std::string window = "5s";
  std::size_t count = 10;
  bool json = false;
  bool loopback = false;
  std::string nic;
};

void sleep_for(DurationNs d) {
  timespec ts{static_cast<time_t>(d / kNsPerSec), static_cast<long>(d % kNsPerSec)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

std::string percent(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f}", *v) : std::string("-");
}

std::string short_command(const netproc::Process& p) {
  std::string s = printable(p.cmdline.empty() ? "[" + p.comm + "]" : p.cmdline);
  if (s.size() <= kCommandWidth) return s;
  std::size_t cut = kCommandWidth - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

std::string render(const netproc::Traffic& t, std::size_t count) {
  std::string link = t.link.name.empty() ? std::string("no NIC to compare with") : t.link.name;
  if (!t.link.name.empty()) {
    link += t.link.speed_mbps ? fmt::format(" {} Mb/s", *t.link.speed_mbps) : " (speed unknown)";
  }
  std::string out = fmt::format(
      "Traffic over {:.1f} s · shares of {} · all sockets: sent {}, received {}{}\n", t.window_s,
      link, netproc::bits_per_s(t.sent_bytes_per_s), netproc::bits_per_s(t.received_bytes_per_s),
      t.loopback_included ? "" : " (loopback left out)");
  if (t.talkers.empty()) return out + "No process moved bytes over the window.\n";
  out += fmt::format("{:<12} {:>8} {:>11} {:>11} {:>6} {:>6} {:>7}  {}\n", "USER", "PID", "SENT",
                     "RECEIVED", "SENT%", "RECV%", "REMOTES", "COMMAND");
  for (std::size_t i = 0; i < t.talkers.size() && i < count; ++i) {
    const auto& x = t.talkers[i];
    out += fmt::format("{:<12} {:>8} {:>11} {:>11} {:>6} {:>6} {:>7}  {}\n",
                       printable(x.process.user).substr(0, 12), x.process.pid,
                       netproc::bits_per_s(x.sent_bytes_per_s),
                       netproc::bits_per_s(x.received_bytes_per_s), percent(x.sent_link_percent),
                       percent(x.received_link_percent), x.remote_count, short_command(x.process));
  }
  if (t.talkers.size() > count) {
    out += fmt::format("… {} more processes (--count)\n", t.talkers.size() - count);
  }
  return out;
}

int run_net_top(const NetTopOptions& o, Context& ctx) {
  auto window = parse_duration_ns(o.window);
  if (!window || *window < kNsPerSec / 10) {
    ctx.err << "cardiac net top: --window: not a duration of at least 100ms: '" << o.window
            << "' (e.g. 5s)\n";
    return kExitUsage;
  }
  auto fs = std::make_shared<RootFs>("/");
  auto nics_before = host::collect_net_devices(*fs);
  const TimeNs t0 = ctx.clock.monotonic();
  netproc::Snapshot before = netproc::take_snapshot(*fs, t0);
  sleep_for(*window);
  auto nics_after = host::collect_net_devices(*fs);
  netproc::Snapshot after = netproc::take_snapshot(*fs, ctx.clock.monotonic());

  std::vector<host::NetDevice> nics = nics_after ? *nics_after : std::vector<host::NetDevice>{};
  std::vector<host::NetRates> rates;
  if (nics_before && nics_after) {
    rates = host::compute_net_rates(*nics_before, *nics_after,
                                    static_cast<double>(after.taken_at - before.taken_at) / 1e9);
  }
  auto link = netproc::pick_link(*fs, nics, rates, o.nic);
  auto traffic = netproc::rate(before, after, link, {.include_loopback = o.loopback});
  if (o.json) {
    auto j = netproc::to_json(traffic, o.count);
    j = {{"schema", "cardiac.net_top/v1"}, {"traffic", std::move(j)}};
    ctx.out << j.dump(2) << "\n";
  } else {
    ctx.out << render(traffic, o.count);
    for (const auto& n : traffic.notes) ctx.err << "cardiac net top: note: " << n << "\n";
  }
  return kExitOk;
}

}  // namespace

Runner register_net(CLI::App& app) {
  app.require_subcommand(1);
  auto o = std::make_shared<NetTopOptions>();
  CLI::App* top = app.add_subcommand(
      "top",
      "The processes using the network now: bytes sent and received per second over a short "
      "window, their share of the NIC's link speed and how many remote addresses they talk to");
  top->add_option("--window", o->window, "How long to measure (at least 100ms)")
      ->capture_default_str();
  top->add_option("--count", o->count, "How many processes to show")->capture_default_str();
  top->add_flag("--json", o->json, "Print JSON (cardiac.net_top/v1, docs/cli.md)");
  top->add_flag("--loopback", o->loopback,
                "Count traffic over loopback too (it never reaches a NIC; left out by default)");
  top->add_option("--interface", o->nic,
                  "The NIC to take shares of (default: the default route's, else the busiest)");
  top->footer(
      "TCP byte counters come from the kernel (netlink sock_diag), owners from /proc/<pid>/fd: "
      "run as root to see every process. UDP has no byte counters; UDP sockets show only drops "
      "in --json. A socket opened and closed within the window is not seen.");
  return [o](Context& ctx) { return run_net_top(*o, ctx); };
}

}  // namespace cardiac::cli
