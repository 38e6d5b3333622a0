// SPDX-License-Identifier: Apache-2.0
// The file readers behind capture().
#include "baseline/capture_util.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::baseline {
namespace {

void add(std::vector<Fact>& out, std::string key, std::optional<std::string> value,
         std::string source) {
  out.push_back(make_fact(std::move(key), std::move(value), std::move(source)));
}

std::optional<std::string> read_trimmed(const FileSystem& fs, std::string_view path) {
  auto text = fs.read_file(path, 64 << 10);
  if (!text) return std::nullopt;
  return std::string(trim(*text));
}

std::string unquote(std::string_view v) {
  v = trim(v);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return std::string(v);
}

// Boot parameters that name this machine (its disks, its console, its image) rather than
// configure it: left out so that every node does not differ from every other.
bool machine_specific(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kSkip{
      "BOOT_IMAGE", "root",    "initrd", "ro",          "rw",        "quiet",
      "splash",     "console", "resume", "crashkernel", "rootflags", "cryptdevice"};
  return std::find(kSkip.begin(), kSkip.end(), name) != kSkip.end();
}

bool is_iommu_param(std::string_view name) {
  return name == "intel_iommu" || name == "amd_iommu" || name == "iommu" ||
         starts_with(name, "iommu.");
}

// The bracketed choice of a sysfs selector ("always [madvise] never" → "madvise").
std::string selected(std::string_view text) {
  auto open = text.find('[');
  auto close = text.find(']', open);
  if (open == std::string_view::npos || close == std::string_view::npos) {
    return std::string(trim(text));
  }
  return std::string(text.substr(open + 1, close - open - 1));
}

}  // namespace

std::string nvml_unread_reason(const nvml::GpuSnapshot* gpus) {
  if (gpus == nullptr) return "NVML not asked (offline)";
  if (!gpus->available) return fmt::format("NVML unavailable: {}", gpus->error_kind);
  return "NVML did not say";
}

void add_os_release(const FileSystem& fs, std::vector<Fact>& out) {
  for (std::string_view path : {"/etc/os-release", "/usr/lib/os-release"}) {
    auto text = fs.read_file(path, 64 << 10);
    if (!text) continue;
    std::string id;
    std::string version;
    for (auto line : split_lines(*text)) {
      auto eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      auto name = trim(line.substr(0, eq));
      if (name == "ID") id = unquote(line.substr(eq + 1));
      if (name == "VERSION_ID") version = unquote(line.substr(eq + 1));
    }
    if (id.empty()) {
      add(out, "os", std::nullopt, fmt::format("{}: no ID= line", path));
    } else {
      if (!version.empty()) id.append(" ").append(version);
      add(out, "os", id, std::string(path));
    }
    return;
  }
  add(out, "os", std::nullopt, "could not read /etc/os-release or /usr/lib/os-release");
}

std::string library_version(std::string_view file, std::string_view stem) {
  if (!starts_with(file, stem)) return "";
  auto v = file.substr(stem.size());
  if (v.empty() || std::any_of(v.begin(), v.end(),
                               [](char c) { return !((c >= '0' && c <= '9') || c == '.'); })) {
    return "";
  }
  return std::string(v);
}

void add_libraries(const FileSystem& fs, std::vector<Fact>& out) {
  std::set<std::string> dirs{"/lib",
                             "/lib64",
                             "/usr/lib",
                             "/usr/lib64",
                             "/lib/x86_64-linux-gnu",
                             "/usr/lib/x86_64-linux-gnu",
                             "/lib/aarch64-linux-gnu",
                             "/usr/lib/aarch64-linux-gnu",
                             "/usr/local/cuda/lib64",
                             "/usr/local/cuda/targets/x86_64-linux/lib",
                             "/usr/local/cuda/targets/sbsa-linux/lib",
                             "/usr/local/nvidia/lib64"};
  // ld.so.conf and its includes: the directories the dynamic linker searches.
  std::vector<std::string> conf_files{"/etc/ld.so.conf"};
  if (auto names = fs.list_dir("/etc/ld.so.conf.d")) {
    for (const auto& n : *names) {
      if (ends_with(n, ".conf")) conf_files.push_back("/etc/ld.so.conf.d/" + n);
    }
  }
  for (const auto& file : conf_files) {
    auto text = fs.read_file(file, 64 << 10);
    if (!text) continue;
    for (auto line : split_lines(*text)) {
      line = trim(line);
      if (starts_with(line, "/")) dirs.insert(std::string(line));
    }
  }
  // The cache holds every library path as a NUL-terminated string; their directories count
  // too (libraries a package placed outside the usual ones).
  if (auto cache = fs.read_file("/etc/ld.so.cache", 8 << 20)) {
    for (auto s : split(*cache, '\0')) {
      if (!starts_with(s, "/") || s.find(".so") == std::string_view::npos) continue;
      auto slash = s.rfind('/');
      if (slash > 0) dirs.insert(std::string(s.substr(0, slash)));
    }
  }

  struct Lib {
    std::string_view key;
    std::string_view stem;
  };
  static constexpr std::array<Lib, 4> kLibs{
      Lib{"library.nccl", "libnccl.so."}, Lib{"library.cudnn", "libcudnn.so."},
      Lib{"library.cublas", "libcublas.so."}, Lib{"library.nvidia-ml", "libnvidia-ml.so."}};
  std::array<std::set<std::string>, kLibs.size()> full;         // "2.21.5"
  std::array<std::set<std::string>, kLibs.size()> soname_only;  // "2" (the soname alone)
  std::array<std::string, kLibs.size()> where;
  for (const auto& dir : dirs) {
    auto names = fs.list_dir(dir);
    if (!names) continue;
    for (const auto& n : *names) {
      for (std::size_t i = 0; i < kLibs.size(); ++i) {
        auto v = library_version(n, kLibs[i].stem);
        if (v.empty()) continue;
        // A soname link ("libnccl.so.2") names the full version in its target.
        if (v.find('.') == std::string::npos) {
          if (auto target = fs.read_link(fmt::format("{}/{}", dir, n))) {
            auto base = target->substr(target->rfind('/') + 1);
            auto tv = library_version(base, kLibs[i].stem);
            if (tv.find('.') != std::string::npos) v = tv;
          }
        }
        (v.find('.') != std::string::npos ? full[i] : soname_only[i]).insert(v);
        if (where[i].empty()) where[i] = dir;
      }
    }
  }
  for (std::size_t i = 0; i < kLibs.size(); ++i) {
    const auto& versions = full[i].empty() ? soname_only[i] : full[i];
    if (versions.empty()) {
      add(out, std::string(kLibs[i].key), std::string(kAbsent),
          "not in the library directories or /etc/ld.so.cache");
      continue;
    }
    std::string joined;
    for (const auto& v : versions) joined += (joined.empty() ? "" : ",") + v;
    add(out, std::string(kLibs[i].key), joined, where[i]);
  }
}

void add_host_settings(const FileSystem& fs, std::vector<Fact>& out) {
  // Kernel command line: IOMMU parameters on their own, the rest one fact each.
  if (auto cmdline = read_trimmed(fs, "/proc/cmdline")) {
    std::string iommu;
    std::set<std::string> seen;
    for (auto item : split_ws(*cmdline)) {
      auto eq = item.find('=');
      std::string name(item.substr(0, eq));
      std::string value = eq == std::string_view::npos ? "set" : std::string(item.substr(eq + 1));
      if (is_iommu_param(name)) {
        iommu += (iommu.empty() ? "" : " ") + std::string(item);
      } else if (!machine_specific(name) && seen.insert(name).second) {
        add(out, "cmdline." + name, value, "/proc/cmdline");
      }
    }
    add(out, "iommu.cmdline", iommu.empty() ? "none" : iommu, "/proc/cmdline");
  } else {
    add(out, "iommu.cmdline", std::nullopt, "could not read /proc/cmdline");
  }
  if (auto units = fs.list_dir("/sys/class/iommu")) {
    add(out, "iommu.units", std::to_string(units->size()), "/sys/class/iommu");
  } else if (fs.exists("/sys/class")) {
    add(out, "iommu.units", "0", "/sys/class/iommu (not there)");
  } else {
    add(out, "iommu.units", std::nullopt, "could not read /sys/class/iommu");
  }

  static constexpr std::array<std::string_view, 5> kSysctls{
      "vm.swappiness", "kernel.numa_balancing", "vm.zone_reclaim_mode", "net.core.rmem_max",
      "net.core.wmem_max"};
  for (auto name : kSysctls) {
    std::string path = "/proc/sys/" + std::string(name);
    std::replace(path.begin() + 10, path.end(), '.', '/');
    auto v = read_trimmed(fs, path);
    add(out, "sysctl." + std::string(name), v, v ? path : fmt::format("could not read {}", path));
  }

  if (auto nodes = fs.list_dir("/sys/devices/system/node")) {
    auto n = std::count_if(nodes->begin(), nodes->end(), [](const std::string& e) {
      return starts_with(e, "node") && parse_u64(std::string_view(e).substr(4)).has_value();
    });
    add(out, "numa.nodes", std::to_string(n), "/sys/devices/system/node");
  } else {
    add(out, "numa.nodes", std::nullopt, "could not read /sys/devices/system/node");
  }

  std::optional<std::string> total;
  std::optional<std::string> size;
  if (auto meminfo = fs.read_file("/proc/meminfo", 1 << 20)) {
    for (auto line : split_lines(*meminfo)) {
      auto fields = split_ws(line);
      if (fields.size() < 2) continue;
      if (fields[0] == "HugePages_Total:") total = std::string(fields[1]);
      if (fields[0] == "Hugepagesize:") size = std::string(fields[1]);
    }
  }
  const std::string why = "could not read it from /proc/meminfo";
  add(out, "hugepages.total", total, total ? "/proc/meminfo" : why);
  add(out, "hugepages.size_kb", size, size ? "/proc/meminfo" : why);
  const std::string thp = "/sys/kernel/mm/transparent_hugepage/enabled";
  auto t = read_trimmed(fs, thp);
  add(out, "hugepages.transparent", t ? std::optional(selected(*t)) : std::nullopt,
      t ? thp : "could not read " + thp);

  // The governors of every CPU with cpufreq; "none" when the CPUs have no cpufreq (a VM).
  if (auto cpus = fs.list_dir("/sys/devices/system/cpu")) {
    std::set<std::string> governors;
    for (const auto& c : *cpus) {
      if (!starts_with(c, "cpu") || !parse_u64(std::string_view(c).substr(3))) continue;
      if (auto g = read_trimmed(fs, "/sys/devices/system/cpu/" + c + "/cpufreq/scaling_governor")) {
        governors.insert(*g);
      }
    }
    std::string joined;
    for (const auto& g : governors) joined += (joined.empty() ? "" : ",") + g;
    add(out, "cpu.governor", joined.empty() ? "none" : joined,
        "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor");
  } else {
    add(out, "cpu.governor", std::nullopt, "could not read /sys/devices/system/cpu");
  }
}

bool key_less(std::string_view a, std::string_view b) {
  // Part by part: numbers (digits only) before words, numbers by value, then by their text so
  // that "01" and "1" stay two keys; words by their text. Each part's place depends on it
  // alone, so this is a strict weak order whose equal keys are equal strings.
  auto pa = split(a, '.');
  auto pb = split(b, '.');
  auto number = [](std::string_view part) -> std::optional<std::uint64_t> {
    if (part.empty() ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    return parse_u64(part);
  };
  for (std::size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
    if (pa[i] == pb[i]) continue;
    auto na = number(pa[i]);
    auto nb = number(pb[i]);
    if (na.has_value() != nb.has_value()) return na.has_value();
    if (na && *na != *nb) return *na < *nb;
    return pa[i] < pb[i];
  }
  return pa.size() < pb.size();
}

}  // namespace cardiac::baseline
