// SPDX-License-Identifier: Apache-2.0
#include "jobmap/jobmap.h"

#include <map>

#include "core/format.h"

namespace cardiac::jobmap {
namespace {

// /proc/<pid>/environ is as long as the process made it; the variables we want are a few
// bytes. 1 MiB covers any real environment and keeps a hostile one from costing memory.
constexpr std::size_t kEnvironMax = 1u << 20;
constexpr std::size_t kCgroupMax = 64u << 10;

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The id in a path component "job_<digits>", else "".
std::string_view job_component(std::string_view path) {
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (part.size() > 4 && part.substr(0, 4) == "job_" && all_digits(part.substr(4))) {
      return part.substr(4);
    }
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return {};
}

std::string proc_path(std::uint32_t pid, std::string_view file) {
  return fmt::format("/proc/{}/{}", pid, file);
}

// A read failure worth telling: the process being gone (not found) is not.
std::string unreadable(const Error& e, std::string_view path) {
  if (e.code == ErrorCode::kNotFound) return "";
  if (e.code == ErrorCode::kPermission) {
    return fmt::format(
        "{}: permission denied (reading another user's process needs root or CAP_SYS_PTRACE)",
        path);
  }
  return fmt::format("{}: {}", path, e.message);
}

}  // namespace

std::optional<std::string> slurm_job_from_cgroup(std::string_view text) {
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    // hierarchy-ID:controller-list:path; the path may itself hold ':'.
    auto first = line.find(':');
    auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second != std::string_view::npos) {
      if (auto id = job_component(line.substr(second + 1)); !id.empty()) return std::string(id);
    }
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return std::nullopt;
}

std::optional<JobRef> job_from_environ(std::string_view text) {
  std::map<std::string_view, std::string_view> found;
  while (!text.empty()) {
    auto nul = text.find('\0');
    std::string_view var = text.substr(0, nul);
    auto eq = var.find('=');
    if (eq != std::string_view::npos) {
      std::string_view name = var.substr(0, eq);
      if (name == "CARDIAC_JOB_ID" || name == "SLURM_JOB_ID") {
        found.emplace(name, var.substr(eq + 1));  // the first one wins, as getenv's does
      }
    }
    if (nul == std::string_view::npos) break;
    text.remove_prefix(nul + 1);
  }
  for (auto [name, source] :
       {std::pair<std::string_view, std::string_view>{"CARDIAC_JOB_ID", "cardiac"},
        {"SLURM_JOB_ID", "slurm"}}) {
    auto it = found.find(name);
    if (it != found.end() && all_digits(it->second)) {
      return JobRef{std::string(it->second), std::string(source), "environ"};
    }
  }
  return std::nullopt;
}

Attribution find_job(const FileSystem& fs, std::uint32_t pid) {
  Attribution a;
  // The cgroup first: any user may read it and the job's own user cannot change it.
  const std::string cgroup_path = proc_path(pid, "cgroup");
  auto cgroup = fs.read_file(cgroup_path, kCgroupMax);
  if (cgroup) {
    if (auto id = slurm_job_from_cgroup(*cgroup)) {
      a.job = JobRef{*id, "slurm", "cgroup"};
      return a;
    }
  } else if (cgroup.error().code == ErrorCode::kNotFound) {
    return a;  // gone (or a tree without it): nothing to say
  } else {
    a.note = unreadable(cgroup.error(), cgroup_path);
  }
  const std::string environ_path = proc_path(pid, "environ");
  auto environ_text = fs.read_file(environ_path, kEnvironMax);
  if (!environ_text) {
    std::string why = unreadable(environ_text.error(), environ_path);
    if (!why.empty()) a.note = a.note.empty() ? why : a.note + "; " + why;
    return a;
  }
  a.job = job_from_environ(*environ_text);
  return a;
}

void attribute_jobs(const FileSystem& fs, nvml::GpuSnapshot& snap) {
  // A process on several GPUs is read once.
  std::map<std::uint32_t, Attribution> seen;
  for (auto& g : snap.gpus) {
    for (auto& p : g.processes) {
      auto it = seen.find(p.pid);
      if (it == seen.end()) it = seen.emplace(p.pid, find_job(fs, p.pid)).first;
      const Attribution& a = it->second;
      if (a.job) {
        p.job = a.job->id;
        p.job_source = a.job->source;
        p.job_from = a.job->from;
      }
      p.job_note = a.note;
    }
  }
}

std::string describe(std::string_view source, std::string_view id) {
  return fmt::format("{} job {}", source == "cardiac" ? "cardiac queue" : source, id);
}

}  // namespace cardiac::jobmap
