// SPDX-License-Identifier: Apache-2.0
#include "agent/loops.h"

#include <malloc.h>

#include <algorithm>
#include <ctime>
#include <optional>

#include "core/log.h"
#include "platform/subprocess.h"
#include "store/retention.h"
#include "telemetry/event_worker.h"

namespace cardiac::agent {

HostView read_host(host::HostReader& reader, std::optional<host::HostSnapshot>& previous,
                   TimeNs now, DurationNs timeout) {
  HostView view;
  if (auto snap = reader.collect(now, timeout)) {
    if (previous) view.rates = host::compute_rates(*previous, *snap);
    previous = *snap;
    view.snapshot = std::move(*snap);
  } else {
    host::HostSnapshot late;
    late.taken_at = now;
    late.timed_out = true;
    view.snapshot = std::move(late);
  }
  return view;
}

void run_host(host::HostReader& reader, Latest<HostView>& out, DurationNs interval,
              DurationNs timeout, const Clock& clock, Stopper& stop) {
  std::optional<host::HostSnapshot> previous;
  do {
    out.set(read_host(reader, previous, clock.now(), timeout));
  } while (stop.sleep_for(interval));
}

namespace {

// `journalctl -k -f` for machines where /dev/kmsg is not readable by us but the journal is
// (containers, restricted dmesg). Lines come in syslog's short-iso form.
std::optional<Child> start_journal(const std::string& journalctl) {
  SpawnOptions o;
  o.argv = {journalctl, "-k", "-f", "-n", "0", "-o", "short-iso-precise", "--no-pager"};
  o.pipe_stdin = false;
  auto c = Child::spawn(o);
  if (!c) return std::nullopt;
  return std::move(*c);
}

int current_year(TimeNs now) {
  std::time_t secs = static_cast<std::time_t>(now / kNsPerSec);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm.tm_year + 1900;
}

// Records carry µs since boot; wall time at boot turns them into timestamps.
TimeNs boot_time(const Clock& clock) {
  return clock.now() - clock.monotonic();
}

}  // namespace

DurationNs kernel_log_poll_period(DurationNs sampling_interval) {
  return std::clamp<DurationNs>(sampling_interval, 250 * kNsPerMs, kNsPerSec);
}

KernelLogFollower::KernelLogFollower(std::string source, const Clock& clock, DurationNs poll_period)
    : source_(std::move(source)), clock_(clock), poll_period_(poll_period) {
  kmsg::KmsgReaderOptions kopts;
  kopts.boot_time_ns = boot_time(clock_);
  kmsg_reader_ = std::make_unique<kmsg::KmsgReader>(source_, kopts);
  file_reader_ = std::make_unique<kmsg::FileTailReader>(source_);
}

void KernelLogFollower::open_at_end(KmsgStatus& status) {
  if (source_.starts_with("/dev/")) {
    open_ = kmsg_reader_->open().has_value();
    status.set(open_, "");
  } else if (source_ != "journal") {
    auto first = file_reader_->poll();  // skips what the file already holds
    open_ = true;
    status.set(first && file_reader_->reading(), "");
  }
}

void KernelLogFollower::run(Inbox& inbox, KmsgStatus& status, Stopper& stop) {
  const bool device = source_.starts_with("/dev/");
  const bool journal_only = source_ == "journal";
  const std::int64_t boot_time_ns = boot_time(clock_);
  std::optional<Child> journal;
  bool warned = false;
  std::optional<bool> was_up;
  // Says once when the log stops or starts being read: the fault counts depend on it.
  auto report = [&](bool up, const std::string& why) {
    status.set(up, why);
    if (was_up == up) return;
    if (!up && !device && !journal_only) {
      log::warn("kernel log {} cannot be read ({}); no kernel-log faults are counted until it can",
                source_, why);
    } else if (up && was_up) {
      log::info("kernel log {} is read again", source_);
    }
    was_up = up;
  };
  while (true) {
    if (!open_ && !journal) {
      auto st = journal_only ? fail(Error::unavailable("journal requested")) : kmsg_reader_->open();
      if (st) {
        open_ = true;
        report(true, "");
      } else if (journal = start_journal("/usr/bin/journalctl"); journal) {
        log::info("kernel log: {} unavailable ({}); following journalctl -k", source_,
                  st.error().what());
        report(true, "");
      } else {
        if (!warned) {
          log::warn("kernel log {} unavailable ({}) and no journal; retrying every 30 s", source_,
                    st.error().what());
          warned = true;
        }
        report(false, st.error().what());
      }
    }
    if (journal) {
      // Lines as they come, at most one poll period of waiting per round.
      TimeNs until = io_deadline(poll_period_);
      std::vector<kmsg::KernelEvent> events;
      while (auto line = journal->read_line(until)) {
        if (auto e = kmsg::classify_line(*line, current_year(clock_.now()), boot_time_ns)) {
          events.push_back(std::move(*e));
        }
      }
      inbox.add_kernel(std::move(events));
      if (journal->try_wait()) {
        // journalctl ended (no journal on this machine?): try again later, not in a loop.
        journal.reset();
        report(false, "journalctl -k ended");
        if (!stop.sleep_for(30 * kNsPerSec)) return;
        continue;
      }
      if (stop.stopping()) return;
      continue;
    }
    if (open_) {
      auto events = device ? kmsg_reader_->poll() : file_reader_->poll();
      if (events) inbox.add_kernel(std::move(*events));
      // A file is tried again at every poll (an open() of a missing file is cheap), so a log
      // that appears is followed from its first line.
      if (!device) {
        if (!events) {
          report(false, events.error().what());
        } else if (!file_reader_->reading()) {
          report(false, "no such file");
        } else {
          report(true, "");
        }
      }
    }
    if (!stop.sleep_for(open_ ? poll_period_ : 30 * kNsPerSec)) return;
  }
}

// How often the maintenance thread wakes to roll raw samples up. Each run rolls up to
// store::rollup_horizon(): minutes for whole hours, 2 minutes after they end, so a run writes
// each series' minute block of the hour once, all of them appended together; hours for whole
// days, so the hour table (a page per series) is written once a day. A run with nothing new
// writes nothing. Rolling up every 10 minutes to the last minute
// rewrote at least one `rollup_1m` page per series each time (about 70 MB a day for 8 GPUs on a
// fresh store, several times that once the table is large). Answers do not change: history()
// fills the part of a range not rolled up yet from raw samples (store/query.h).
constexpr DurationNs kRollupPeriod = 10 * store::kMinuteNs;
// How often each level is pruned by age.
constexpr DurationNs kPrunePeriod = store::kHourNs;

void run_maintenance(const config::Config& c, const Clock& clock, Stopper& stop) {
  // Its own connection: a long first roll-up must not hold the sampler's writer.
  auto db = store::Db::open(c.agent.state_dir + "/cardiac.db", store::kept_options());
  if (!db) {
    log::error("store maintenance disabled: {}", db.error().what());
    return;
  }
  store::RetentionPolicy policy{c.store.raw_retention, c.store.minute_retention,
                                c.store.hour_retention};
  TimeNs last_prune = 0;
  std::optional<TimeNs> checkpointed_at_horizon;
  while (stop.sleep_for(kRollupPeriod)) {
    TimeNs now = clock.now();
    const auto horizon = store::rollup_horizon(now);
    if (auto r = store::roll_up(*db, horizon.minutes, horizon.hours); !r) {
      log::warn("roll-up: {}", r.error().what());
    }
    // The WAL's pages into the database file after the run that rolled a new hour up (and the
    // first run), not at SQLite's 1000-page mark: the WAL then holds an hour (six seals and the
    // roll-up, about 1 MB for 8 GPUs) and restarts from its beginning. The pages that several
    // seals rewrite (the tables' last leaves, their parents) reach the database file once an
    // hour rather than six times: 5% of what the store hands to write(2) (BM_StoreWritesPerDay).
    // The WAL is synced before a tail file is cut (store/writer.h), so no sample depends on
    // this. PASSIVE never waits for the sampler's writes or the readers.
    if (checkpointed_at_horizon != horizon.minutes) {
      checkpointed_at_horizon = horizon.minutes;
      if (auto done = db->exec("PRAGMA wal_checkpoint(PASSIVE)"); !done) {
        log::warn("checkpoint: {}", done.error().what());
      }
    }
    if (now - last_prune >= kPrunePeriod) {
      last_prune = now;
      if (auto p = store::prune(*db, now, policy); !p) log::warn("prune: {}", p.error().what());
    }
    // The connection's page cache (up to 2 MiB) is of no use for the next ten minutes, and
    // what the roll-up allocated (5-6 MiB at its peak) is free now: both go back at once,
    // rather than staying in the agent's RSS until the sampler's next heap trim.
    if (auto st = db->exec("PRAGMA shrink_memory"); !st) {
      log::warn("maintenance: {}", st.error().what());
    }
    malloc_trim(0);
  }
}

}  // namespace cardiac::agent
