// SPDX-License-Identifier: Apache-2.0
// `cardiac stats failures`: failure rates, MTBI and MTTR per class, GPU and node from the
// agent's store, as a table, CSV or the cardiac.failure-stats/v1 file a fleet collects.
#include <unistd.h>

#include <climits>
#include <cmath>
#include <fstream>
#include <set>

#include "cli/commands.h"
#include "cli/store_access.h"
#include "core/format.h"
#include "core/time.h"
#include "failstats/file_format.h"
#include "nvml/gpu.h"
#include "server/params.h"
#include "store/access.h"
#include "store/incidents.h"
#include "store/minute_blocks.h"
#include "store/retention.h"
#include "store/sealed.h"

namespace cardiac::cli {
namespace {

constexpr double kNsPerDay = 86400e9;

struct StatsFlags {
  std::string state_dir, db, since = "90d", by = "class", out, node;
  bool json = false, csv = false;
};

std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// The first minute bucket of the earliest hour's minute blocks: a block is keyed by its hour,
// its first bucket may be any minute of it.
Result<std::optional<TimeNs>> first_minute_block(const store::Db& db) {
  auto st = db.prepare(
      "SELECT hour_ns, data FROM rollup_1m_blocks WHERE hour_ns = "
      "(SELECT min(hour_ns) FROM rollup_1m_blocks)");
  if (!st) return fail(st.error());
  std::optional<TimeNs> first;
  for (;;) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    auto buckets = store::decode_minute_block(st->column_blob(1), st->column_int64(0));
    if (!buckets) return fail(buckets.error().with_context(db.path()));
    if (!buckets->empty() && (!first || buckets->front().bucket < *first)) {
      first = buckets->front().bucket;
    }
  }
  return first;
}

// The earliest instant the store holds anything from: its raw samples (legacy rows, seals, the
// tail), minute and hour roll-ups, and incidents. A roll-up's bucket starts before its first
// sample, so a level counts only for the time before the finer ones begin (raw samples pruned by
// age): a store started at 11:23 observed from 11:23, not from its first hour bucket's 11:00.
// nullopt for a store with nothing in it.
Result<std::optional<TimeNs>> first_data(const store::Db& db) {
  std::optional<TimeNs> first;
  auto keep = [&](std::optional<TimeNs> t) {
    if (t) first = first ? std::min(*first, *t) : *t;
  };
  for (const char* sql :
       {"SELECT min(time_ns) FROM samples", "SELECT min(start_ns) FROM sample_seals"}) {
    auto t = db.query_int64(sql);
    if (!t) return fail(t.error());
    keep(*t);
  }
  auto tail = store::live_tail_records(db);
  if (!tail) return fail(tail.error());
  for (const auto& r : tail->records) keep(r.start_ns);
  // A coarser level's bucket counts where it lies wholly before what the finer levels hold.
  const auto coarser = [&](std::optional<TimeNs> bucket, DurationNs width) {
    if (bucket && (!first || *bucket + width <= *first)) first = bucket;
  };
  auto minute_rows = db.query_int64("SELECT min(bucket_ns) FROM rollup_1m");
  if (!minute_rows) return fail(minute_rows.error());
  auto minute_blocks = first_minute_block(db);
  if (!minute_blocks) return fail(minute_blocks.error());
  std::optional<TimeNs> minute = *minute_rows;
  if (*minute_blocks && (!minute || **minute_blocks < *minute)) minute = *minute_blocks;
  coarser(minute, store::kMinuteNs);
  auto hour = db.query_int64("SELECT min(bucket_ns) FROM rollup_1h");
  if (!hour) return fail(hour.error());
  coarser(*hour, store::kHourNs);
  auto incident = db.query_int64("SELECT min(started_ns) FROM incidents");
  if (!incident) return fail(incident.error());
  keep(*incident);
  return first;
}

// The GPUs the store saw in the window: raw samples since then, hour roll-ups (which outlive
// the raw samples), and any GPU with an incident.
Result<std::set<std::int64_t>> gpus_seen(const store::Db& db, TimeNs since,
                                         const std::vector<store::Incident>& incidents) {
  std::set<std::int64_t> gpus;
  auto raw = store::gpus_with_raw_samples(db, since);
  if (!raw) return fail(raw.error());
  gpus.insert(raw->begin(), raw->end());
  auto st = db.prepare("SELECT DISTINCT gpu FROM rollup_1h WHERE bucket_ns >= ? AND gpu >= 0");
  if (!st) return fail(st.error());
  st->bind_all(since);
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    gpus.insert(st->column_int64(0));
  }
  for (const auto& i : incidents) gpus.insert(i.gpu);
  return gpus;
}

// The store's incidents in [since, now) as failure statistics of one node. Exposure: every GPU
// the store saw, from the later of --since and the store's first data until now (a GPU that was
// out of the machine for part of it still counts: the figure is an upper bound on exposure).
Result<failstats::FailureStats> stats_from_store(const store::Db& db, TimeNs since, TimeNs now,
                                                 const std::string& node) {
  auto all = store::incidents_since(db, since);
  if (!all) return fail(all.error());
  std::vector<store::Incident> incidents;
  for (auto& i : *all) {
    if (i.started_ns >= since && i.started_ns < now) incidents.push_back(std::move(i));
  }
  auto first = first_data(db);
  if (!first) return fail(first.error());
  auto gpus = gpus_seen(db, since, incidents);
  if (!gpus) return fail(gpus.error());
  const TimeNs start = first->has_value() ? std::max(since, **first) : now;
  const double days = static_cast<double>(std::max<TimeNs>(0, now - start)) / kNsPerDay;
  const auto gpu_count = static_cast<unsigned>(gpus->size());
  std::vector<failstats::IncidentRecord> records;
  for (const auto& i : incidents) {
    failstats::IncidentRecord r;
    r.fault_class = failstats::classify_incident(nvml::device_health_name(i.kind), i.evidence);
    r.start = i.started_ns;
    r.end = i.ended_ns;
    r.node = node;
    r.gpu = i.uuid.empty() ? fmt::format("{}/gpu{}", node, i.gpu) : i.uuid;
    records.push_back(std::move(r));
  }
  auto s = failstats::tabulate(records, {{node, gpu_count, days * gpu_count}}, start, now);
  if (!s) return fail(s.error());
  s->sources.push_back("store: " + node);
  return s;
}

std::string figure(double v, int digits = 3) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return "inf";
  if (std::abs(v) >= 1000) return fmt::format("{:.0f}", v);  // 2970, not 2.97e+03
  return fmt::format("{:.{}g}", v, digits);
}

std::string render_text(const failstats::FailureStats& s, failstats::By by) {
  const double days = static_cast<double>(s.window_end - s.window_start) / kNsPerDay;
  std::string out = fmt::format(
      "{} node{}, {} GPU{}, {} to {} ({:.1f} days, {:.1f} GPU-days observed)\n"
      "{} incident{} ({} still open)\n\n",
      s.nodes.size(), s.nodes.size() == 1 ? "" : "s", s.gpus, s.gpus == 1 ? "" : "s",
      format_iso8601(s.window_start), format_iso8601(s.window_end), days, s.gpu_days,
      failstats::total(s.counts), failstats::total(s.counts) == 1 ? "" : "s", s.open);
  const char* head = by == failstats::By::kClass  ? "CLASS"
                     : by == failstats::By::kNode ? "NODE"
                                                  : "GPU";
  constexpr std::string_view kRow = "{:<24} {:>5}  {:>22}  {:>24}  {:>20}\n";
  out += fmt::format(kRow, head, "COUNT", "PER 1000 GPU-DAYS (95%)", "MTBI HOURS (95%)",
                     "MTTR H MEAN/MED/P90");
  auto line = [&](const failstats::Row& r) {
    const auto& f = r.rate;
    const auto& p = r.repair;
    out += fmt::format(
        fmt::runtime(kRow), r.key, f.count,
        fmt::format("{} ({}-{})", figure(f.per_1000), figure(f.per_1000_low),
                    figure(f.per_1000_high)),
        fmt::format("{} ({}-{})", figure(f.mtbi_hours), figure(f.mtbi_low), figure(f.mtbi_high)),
        p.n == 0 ? std::string("-")
                 : fmt::format("{}/{}/{}", figure(p.mean_hours), figure(p.median_hours),
                               figure(p.p90_hours)));
  };
  for (const auto& r : failstats::rows(s, by)) line(r);
  line(failstats::overall(s));
  const failstats::Lemons l = failstats::estimate_lemons(s);
  if (l.nodes > 0) {
    out += fmt::format(
        "\nlemon nodes: {} of {} ({:.1f} %) hold {:.0f} % of the hardware failures, "
        "{} times the others' rate\n",
        l.nodes, s.nodes.size(), 100 * l.fraction, 100 * l.share, figure(l.factor));
  }
  return out;
}

int run_stats_failures(const StatsFlags& f, Context& ctx) {
  const TimeNs now = ctx.clock.now();
  auto since = server::parse_time_param(f.since, now);
  if (!since) {
    ctx.err << "cardiac stats failures: --since: " << since.error().what() << "\n";
    return kExitUsage;
  }
  if (*since >= now) {
    ctx.err << fmt::format("cardiac stats failures: --since {} is not in the past\n", f.since);
    return kExitUsage;
  }
  if (f.json && f.csv) {
    ctx.err << "cardiac stats failures: give --json or --csv, not both\n";
    return kExitUsage;
  }
  const failstats::By by = f.by == "gpu"    ? failstats::By::kGpu
                           : f.by == "node" ? failstats::By::kNode
                                            : failstats::By::kClass;
  auto db = f.db.empty() ? open_agent_store(resolve_state_dir(f.state_dir))
                         : store::open_store_read_only(f.db, store::StoreFile::kInput);
  if (!db) {
    ctx.err << "cardiac stats failures: " << db.error().what() << "\n";
    return kExitCannotRun;
  }
  auto s = stats_from_store(*db, *since, now, f.node.empty() ? this_host() : f.node);
  if (!s) {
    ctx.err << "cardiac stats failures: " << s.error().what() << "\n";
    return kExitCannotRun;
  }
  const std::string text = f.json  ? failstats::to_json(*s).dump(2) + "\n"
                           : f.csv ? failstats::to_csv(*s, by)
                                   : render_text(*s, by);
  if (f.out.empty() || f.out == "-") {
    ctx.out << text;
    return kExitOk;
  }
  std::ofstream file(f.out, std::ios::trunc);
  file << text;
  file.close();
  if (!file) {
    ctx.err << "cardiac stats failures: " << Error::io(f.out, errno).what() << "\n";
    return kExitCannotRun;
  }
  return kExitOk;
}

}  // namespace

Runner register_stats(CLI::App& sub) {
  auto f = std::make_shared<StatsFlags>();
  sub.require_subcommand(1);
  auto* failures = sub.add_subcommand(
      "failures",
      "Failures per 1,000 GPU-days with 95 % intervals, MTBI and MTTR per fault class, GPU or "
      "node, from the agent's store; --json writes the cardiac.failure-stats/v1 file that "
      "`cardiac sim --failures-from` fits a failure model from");
  failures->add_option("--state-dir", f->state_dir,
                       "The agent's state directory (default: CARDIAC_STATE_DIR, the "
                       "configuration, /var/lib/cardiac)");
  failures->add_option("--db", f->db, "Read this store file instead (cardiac.db)");
  failures->add_option("--since", f->since, "How far back: 90d, 12h, or a time (RFC 3339)")
      ->capture_default_str();
  failures->add_option("--by", f->by, "Rows per fault class, GPU or node")
      ->check(CLI::IsMember({"class", "gpu", "node"}))
      ->capture_default_str();
  failures->add_option("--node", f->node, "The node's name in the output (default: hostname)");
  failures->add_flag("--json", f->json, "The cardiac.failure-stats/v1 file (docs/stats.md)");
  failures->add_flag("--csv", f->csv, "CSV, one row per class, GPU or node, then all");
  failures->add_option("-o,--output", f->out, "Write to this file instead of stdout");
  return [f](Context& ctx) { return run_stats_failures(*f, ctx); };
}

}  // namespace cardiac::cli
