// SPDX-License-Identifier: Apache-2.0
// `cardiac backup` and `cardiac restore`: the agent's store copied while the agent runs, and
// put back while it does not (store/backup.h).
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/store_access.h"
#include "core/format.h"
#include "store/backup.h"

namespace cardiac::cli {
namespace {

struct BackupFlags {
  std::string output, db, state_dir;
  bool force = false, json = false;
};

// --db, else <state dir>/cardiac.db (--state-dir, CARDIAC_STATE_DIR, the configuration).
std::string db_path(const BackupFlags& f) {
  return f.db.empty() ? resolve_state_dir(f.state_dir) + "/cardiac.db" : f.db;
}

int exit_for(const Error& e) {
  return e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kNotFound ||
                 e.code == ErrorCode::kUnsupported
             ? kExitUsage
             : kExitCannotRun;
}

int run_backup(const BackupFlags& f, Context& ctx) {
  const std::string db = db_path(f);
  auto s = store::backup_store(db, f.output);
  if (!s) {
    ctx.err << "cardiac backup: " << s.error().what() << "\n";
    return exit_for(s.error());
  }
  if (f.json) {
    ctx.out << nlohmann::json{{"backup", s->path},
                              {"store", db},
                              {"bytes", s->bytes},
                              {"schema_version", s->schema_version},
                              {"side_files", s->side_files}}
                   .dump(2)
            << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format("{}: backup of {} ({} bytes, schema {}{}{}), mode 0600\n", s->path, db,
                         s->bytes, s->schema_version, s->side_files.empty() ? "" : ", with ",
                         fmt::join(s->side_files, ", "));
  return kExitOk;
}

int run_restore(const BackupFlags& f, Context& ctx) {
  const std::string db = db_path(f);
  auto r = store::restore_store(f.output, db, f.force);
  if (!r) {
    ctx.err << "cardiac restore: " << r.error().what() << "\n";
    return exit_for(r.error());
  }
  if (f.json) {
    ctx.out << nlohmann::json{{"restored", f.output},
                              {"store", db},
                              {"kept",
                               r->kept.empty() ? nlohmann::json(nullptr) : nlohmann::json(r->kept)},
                              {"schema_version", r->schema_version},
                              {"side_files", r->side_files}}
                   .dump(2)
            << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format("{}: restored from {} (schema {})\n", db, f.output, r->schema_version);
  if (!r->kept.empty()) ctx.out << fmt::format("the replaced store is kept as {}\n", r->kept);
  ctx.out << "start the agent again: systemctl start cardiac\n";
  return kExitOk;
}

void add_store_flags(CLI::App& sub, BackupFlags& f) {
  sub.add_option("--db", f.db,
                 "The store's SQLite file (default: cardiac.db in the agent's state directory)");
  sub.add_option("--state-dir", f.state_dir, "The agent's state directory (instead of --db)");
  sub.add_flag("--json", f.json, "JSON output");
}

}  // namespace

Runner register_backup(CLI::App& sub) {
  auto f = std::make_shared<BackupFlags>();
  sub.footer(
      "Copies the agent's store (its SQLite file and the unsealed tail beside it) into one "
      "file, consistently, while the agent keeps running. The file is created with mode 0600: "
      "it holds every job's environment. Put it back with `cardiac restore FILE`.");
  sub.add_option("-o,--output", f->output, "The backup file to write (replaced whole)")->required();
  add_store_flags(sub, *f);
  return [f](Context& ctx) { return run_backup(*f, ctx); };
}

Runner register_restore(CLI::App& sub) {
  auto f = std::make_shared<BackupFlags>();
  sub.footer(
      "Puts a `cardiac backup` file back as the agent's store. Stop the agent first "
      "(systemctl stop cardiac): restore refuses while it runs. The file is checked (SQLite "
      "integrity_check, a cardiac store, a schema this cardiac reads) before anything is "
      "touched; the replaced store is kept as <db>.before-restore.");
  sub.add_option("FILE", f->output, "The backup file")->required();
  sub.add_flag("--force", f->force, "Replace a <db>.before-restore left by an earlier restore");
  add_store_flags(sub, *f);
  return [f](Context& ctx) { return run_restore(*f, ctx); };
}

}  // namespace cardiac::cli
