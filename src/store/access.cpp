// SPDX-License-Identifier: Apache-2.0
// State directory and store file permissions, read-only opening, plain-word store errors.
#include "store/access.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/format.h"
#include "store/schema.h"

namespace cardiac::store {
namespace {

std::string octal(mode_t m) {
  return fmt::format("{:04o}", m & 07777);
}

std::string group_name(gid_t gid) {
  if (const group* g = getgrgid(gid)) return g->gr_name;
  return std::to_string(gid);
}

// Sets the mode and group of an existing path when they differ; notes each change.
Status fix_path(const std::string& path, mode_t mode, std::optional<gid_t> group,
                std::vector<std::string>& changes) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail(Error::io(path, errno));
  if (S_ISLNK(st.st_mode)) {
    // A link planted in the state directory must not make us chmod whatever it points at.
    return fail(Error::invalid("is a symbolic link; the store files must be plain files", path));
  }
  if (group && st.st_gid != *group) {
    if (::chown(path.c_str(), static_cast<uid_t>(-1), *group) != 0) {
      return fail(Error::io(path, errno)
                      .with_context(fmt::format("cannot give group '{}' to", group_name(*group))));
    }
    changes.push_back(
        fmt::format("{}: group {} → {}", path, group_name(st.st_gid), group_name(*group)));
  }
  if ((st.st_mode & 07777) != mode) {
    if (::chmod(path.c_str(), mode) != 0) return fail(Error::io(path, errno));
    changes.push_back(fmt::format("{}: mode {} → {}", path, octal(st.st_mode), octal(mode)));
  }
  return {};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Why `path` cannot be read by us, from its (or its directory's) owner and mode.
std::string permission_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return fmt::format(
        "permission denied on a directory above it ({}); run as the agent's user "
        "or ask for the group set in [agent] group",
        std::strerror(errno));
  }
  return fmt::format(
      "permission denied: the store is mode {}, owner uid {}, group '{}'; it holds job "
      "environments, so only the agent's user (and [agent] group, when set) may read it: run "
      "as that user (e.g. sudo) or ask to join that group",
      octal(st.st_mode), st.st_uid, group_name(st.st_gid));
}

}  // namespace

StoreAccess store_access(std::optional<gid_t> group, bool reachable) {
  StoreAccess a;
  a.group = group;
  a.dir_mode = group ? 0750 : 0700;
  a.file_mode = group ? 0640 : 0600;
  if (reachable) a.dir_mode |= 0001;
  return a;
}

Result<gid_t> group_id(const std::string& name) {
  errno = 0;
  const group* g = getgrnam(name.c_str());
  if (g == nullptr) {
    return fail(Error::invalid(
        errno != 0 ? fmt::format("cannot look up group '{}': {}", name, std::strerror(errno))
                   : fmt::format("no group named '{}' (create it with groupadd)", name)));
  }
  return g->gr_gid;
}

Result<std::vector<std::string>> secure_state_dir(const std::string& dir, const StoreAccess& a) {
  std::vector<std::string> changes;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return fail(
          Error::invalid(fmt::format("cannot create the state directory: {}", ec.message()), dir));
    }
    // Created just now: set the mode without reporting it as a change.
    if (::chmod(dir.c_str(), a.dir_mode) != 0) return fail(Error::io(dir, errno));
  }
  CARDIAC_TRY(fix_path(dir, a.dir_mode, a.group, changes));

  const std::string db = dir + "/cardiac.db";
  if (!exists(db)) {
    int fd = ::open(db.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, a.file_mode);
    if (fd < 0 && errno != EEXIST) return fail(Error::io(db, errno));
    if (fd >= 0) ::close(fd);
  }
  for (const char* suffix : {"", "-wal", "-shm", "-tail0", "-tail1"}) {
    const std::string path = db + suffix;
    if (!exists(path)) continue;
    CARDIAC_TRY(fix_path(path, a.file_mode, a.group, changes));
  }
  return changes;
}

Error explain_store_error(const Error& e, const std::string& path, StoreFile file) {
  if (e.code == ErrorCode::kParse) {
    const bool not_db = e.message.find("not a database") != std::string::npos;
    if (file == StoreFile::kInput) {
      return Error{ErrorCode::kParse,
                   fmt::format("not a cardiac store: {}",
                               not_db ? "not an SQLite database (its header is not SQLite's)"
                                      : "a damaged SQLite database (inconsistent pages)"),
                   path};
    }
    return Error{
        ErrorCode::kParse,
        fmt::format("{}. Nothing was changed. To start over with an empty store, stop the "
                    "agent, move the file aside with its -wal and -shm (mv {} {}.broken) and "
                    "start the agent again; keep the old file to inspect or recover it",
                    not_db ? "not an SQLite database (its header is not SQLite's)"
                           : "the database is damaged (SQLite found inconsistent pages)",
                    path, path),
        path};
  }
  if (e.code == ErrorCode::kPermission) {
    return Error{ErrorCode::kPermission, permission_text(path), path};
  }
  return e;
}

Result<Db> open_store_read_only(const std::string& path, StoreFile file) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == EACCES) return fail(Error{ErrorCode::kPermission, permission_text(path), path});
    return fail(
        Error::not_found("no agent store here: start `cardiac agent`, or pass --state-dir (or set "
                         "CARDIAC_STATE_DIR) to the agent's state directory",
                         path));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return fail(Error{ErrorCode::kPermission, permission_text(path), path});
  }
  OpenOptions o = query_options();
  o.read_only = true;
  auto db = Db::open(path, o);
  Result<int> v = db ? schema_version(*db) : Result<int>(fail(db.error()));
  // Without a -wal there is no writer and nothing outside the file; a reader who may not
  // create the -shm next to it then reads the file as it is.
  if (!v && v.error().code == ErrorCode::kPermission && !exists(path + "-wal")) {
    o.immutable = true;
    db = Db::open(path, o);
    v = db ? schema_version(*db) : Result<int>(fail(db.error()));
  }
  if (!v) return fail(explain_store_error(v.error(), path, file));
  const int latest = latest_schema_version();
  if (*v == 0) {
    return fail(Error::unavailable(
        fmt::format("the store has no tables yet ({} bytes): no agent has written it; start "
                    "`cardiac agent` with this state directory",
                    st.st_size),
        path));
  }
  if (*v > latest) {
    return fail(Error::unsupported(
        fmt::format("schema version {} is newer than this cardiac understands ({}); use the "
                    "cardiac that the agent runs",
                    *v, latest),
        path));
  }
  if (*v < latest) {
    return fail(Error::unsupported(
        fmt::format("schema version {} was written by an older cardiac (this one reads {}); "
                    "start the new `cardiac agent` once to upgrade the store",
                    *v, latest),
        path));
  }
  return db;
}

}  // namespace cardiac::store
