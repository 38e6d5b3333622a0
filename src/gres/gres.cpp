// SPDX-License-Identifier: Apache-2.0
#include "gres/gres.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/format.h"
#include "core/strings.h"
#include "nvml/pci.h"

namespace cardiac::gres {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::optional<unsigned> parse_uint(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  unsigned v = 0;
  for (char c : s) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v;
}

std::string gpu_label(const nvml::GpuReading& g) {
  return g.pci_bus_id.empty() ? fmt::format("GPU {}", g.index)
                              : fmt::format("GPU {} ({})", g.index, g.pci_bus_id);
}

// Slurm's logical core index of every online CPU: cores ordered by (package, core id), the
// order in which hwloc numbers them ("Core 0 is the first core on the first socket"). Hyper-
// threads of one core share its index.
Result<std::map<unsigned, unsigned>> core_indices(const FileSystem& fs) {
  constexpr std::string_view kCpuDir = "/sys/devices/system/cpu";
  auto entries = fs.list_dir(kCpuDir);
  if (!entries) return fail(entries.error());
  std::map<unsigned, std::pair<unsigned, unsigned>> where;  // cpu → (package, core id)
  for (const auto& e : *entries) {
    if (e.size() < 4 || e.substr(0, 3) != "cpu") continue;
    auto cpu = parse_uint(std::string_view(e).substr(3));
    if (!cpu) continue;  // cpufreq, cpuidle, …
    const std::string topo = fmt::format("{}/{}/topology/", kCpuDir, e);
    auto package = fs.read_file(topo + "physical_package_id", 64);
    auto core = fs.read_file(topo + "core_id", 64);
    if (!package || !core) continue;  // offline: no topology directory
    auto p = parse_uint(trim(*package));
    auto c = parse_uint(trim(*core));
    if (!p || !c) {
      return fail(Error::parse(
          fmt::format("not a number: \"{}\" / \"{}\"", trim(*package), trim(*core)), topo));
    }
    where[*cpu] = {*p, *c};
  }
  if (where.empty()) {
    return fail(Error::not_found("no CPU with a topology/ directory", std::string(kCpuDir)));
  }
  std::set<std::pair<unsigned, unsigned>> cores;
  for (const auto& [cpu, pc] : where) cores.insert(pc);
  std::map<std::pair<unsigned, unsigned>, unsigned> index;
  for (const auto& pc : cores) index.emplace(pc, static_cast<unsigned>(index.size()));
  std::map<unsigned, unsigned> out;
  for (const auto& [cpu, pc] : where) out[cpu] = index.at(pc);
  return out;
}

// Fills cpus and cores of every GPU; what could not be read becomes a note.
void fill_cores(const FileSystem& fs, GresConf& conf) {
  auto cores = core_indices(fs);
  if (!cores) {
    conf.notes.push_back(
        fmt::format("Cores= left out: the CPU topology was not read ({})", cores.error().what()));
  }
  for (auto& g : conf.gpus) {
    const std::string path = fmt::format("/sys/bus/pci/devices/{}/local_cpulist", g.pci_bus_id);
    auto text = fs.read_file(path, 4096);
    if (!text) {
      conf.notes.push_back(
          fmt::format("GPU {}: Cores= left out: {}", g.index, text.error().what()));
      continue;
    }
    auto cpus = parse_cpu_list(*text);
    if (!cpus) {
      conf.notes.push_back(
          fmt::format("GPU {}: Cores= left out: {}: {}", g.index, path, cpus.error().what()));
      continue;
    }
    g.cpus = format_cpu_list(*cpus);
    if (!cores) continue;
    std::vector<unsigned> ids;
    for (unsigned cpu : *cpus) {
      auto it = cores->find(cpu);
      if (it == cores->end()) {
        conf.notes.push_back(
            fmt::format("GPU {}: Cores= left out: CPU {} of {} has no topology (offline?)", g.index,
                        cpu, path));
        ids.clear();
        break;
      }
      ids.push_back(it->second);
    }
    g.cores = format_cpu_list(std::move(ids));
  }
}

// Links= from NVLink: per GPU, how many of its active links end at each other GPU.
void fill_links(const std::vector<const nvml::GpuReading*>& readings, GresConf& conf) {
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < conf.gpus.size(); ++i) position[conf.gpus[i].pci_bus_id] = i;
  bool any_active = false;
  bool gpu_to_gpu = false;
  std::set<std::string> other_ends;  // NVSwitches, or GPUs of another node
  std::vector<unsigned> unknown_end;
  std::vector<std::vector<int>> links(conf.gpus.size(), std::vector<int>(conf.gpus.size(), 0));
  for (std::size_t i = 0; i < readings.size(); ++i) {
    links[i][i] = -1;
    bool unknown = false;
    for (const auto& l : readings[i]->nvlinks) {
      if (!l.active) continue;
      any_active = true;
      if (l.remote_pci_bus_id.empty()) {
        unknown = true;
        continue;
      }
      auto it = position.find(l.remote_pci_bus_id);
      if (it == position.end() || it->second == i) {
        other_ends.insert(l.remote_pci_bus_id);
        continue;
      }
      ++links[i][it->second];
      gpu_to_gpu = true;
    }
    if (unknown) unknown_end.push_back(conf.gpus[i].index);
  }
  if (!any_active) return;  // PCIe-only GPUs: nothing to say
  if (!unknown_end.empty()) {
    conf.notes.push_back(
        fmt::format("Links= left out: NVML did not say where the active NVLinks of GPU {} end "
                    "(nvmlDeviceGetNvLinkRemotePciInfo)",
                    fmt::join(unknown_end, ", ")));
    return;
  }
  if (!gpu_to_gpu) {
    conf.notes.push_back(fmt::format(
        "Links= left out: every active NVLink ends at a switch ({}), so each GPU reaches every "
        "other one alike and Links= would tell Slurm nothing",
        fmt::join(other_ends, ", ")));
    return;
  }
  if (!other_ends.empty()) {
    conf.notes.push_back(
        fmt::format("Links= counts only links between GPUs; links to {} are not "
                    "counted",
                    fmt::join(other_ends, ", ")));
  }
  for (std::size_t i = 0; i < conf.gpus.size(); ++i) conf.gpus[i].links = links[i];
}

Result<std::string> node_name_of(const FileSystem& fs) {
  auto text = fs.read_file("/proc/sys/kernel/hostname", 256);
  if (!text) return fail(text.error());
  std::string_view name = trim(*text);
  name = name.substr(0, name.find('.'));
  if (name.empty()) {
    return fail(Error::parse("empty host name", "/proc/sys/kernel/hostname"));
  }
  return std::string(name);
}

}  // namespace

std::string GresGpu::file() const {
  return fmt::format("/dev/nvidia{}", minor);
}

std::string GresConf::node_line() const {
  std::vector<std::pair<std::string, unsigned>> counts;
  for (const auto& g : gpus) {
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == g.type; });
    if (it == counts.end()) {
      counts.emplace_back(g.type, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<std::string> parts;
  for (const auto& [type, n] : counts) parts.push_back(fmt::format("gpu:{}:{}", type, n));
  return fmt::format("NodeName={} Gres={}", node_name, fmt::join(parts, ","));
}

std::string slurm_gpu_type(std::string_view product_name) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char c : product_name) {
    if (c == ' ' || c == '-' || c == '_') {
      flush();
    } else if (c >= 'A' && c <= 'Z') {
      word += static_cast<char>(c - 'A' + 'a');
    } else if ((c >= 'a' && c <= 'z') || is_digit(c)) {
      word += c;
    }
  }
  flush();
  static const std::set<std::string, std::less<>> kBrands = {"nvidia", "tesla", "geforce",
                                                             "quadro"};
  std::erase_if(words, [](const std::string& w) { return kBrands.count(w) > 0; });
  if (words.empty()) return "";
  static const std::set<std::string, std::less<>> kPrefixes = {"rtx", "gtx", "titan"};
  if (words.size() > 1 && kPrefixes.count(words[0])) return words[0] + words[1];
  return words[0];
}

Result<std::vector<unsigned>> parse_cpu_list(std::string_view text) {
  std::set<unsigned> ids;
  text = trim(text);
  if (text.empty()) return fail(Error::parse("empty CPU list"));
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    auto dash = part.find('-');
    auto first = parse_uint(part.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : parse_uint(part.substr(dash + 1));
    if (!first || !last || *last < *first || *last - *first > 65535) {
      return fail(Error::parse(fmt::format("not a CPU or CPU range: \"{}\"", part)));
    }
    for (unsigned c = *first; c <= *last; ++c) ids.insert(c);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return std::vector<unsigned>(ids.begin(), ids.end());
}

std::string format_cpu_list(std::vector<unsigned> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return out;
}

Result<GresConf> build_gres(const nvml::GpuSnapshot& snap, const FileSystem& fs,
                            const GresOptions& options) {
  if (!snap.available) {
    return fail(Error::unavailable(
        fmt::format("NVML could not be read ({}): {}. No gres.conf written: it would claim no GPUs",
                    snap.error_kind, snap.error)));
  }
  if (snap.gpus.empty()) {
    return fail(Error::not_found(fmt::format(
        "NVML answered (driver {}) but lists no GPU. No gres.conf written: it would claim no "
        "GPUs. Check `nvidia-smi -L` and the kernel log",
        snap.system.driver_version.empty() ? "unknown" : snap.system.driver_version)));
  }
  GresConf conf;
  conf.driver_version = snap.system.driver_version;
  if (!options.node_name.empty()) {
    conf.node_name = options.node_name;
  } else {
    auto name = node_name_of(fs);
    if (!name) {
      return fail(Error::not_found(fmt::format(
          "the host name was not read ({}); give it with --node-name", name.error().what())));
    }
    conf.node_name = *name;
  }
  std::vector<const nvml::GpuReading*> readings;
  for (const auto& g : snap.gpus) {
    const std::string why = g.health == nvml::DeviceHealth::kOk
                                ? ""
                                : fmt::format(" (the GPU is {}: {})",
                                              nvml::device_health_name(g.health), g.health_detail);
    if (!g.minor_number) {
      return fail(Error::unavailable(fmt::format(
          "{}: NVML gave no minor number (nvmlDeviceGetMinorNumber), so its /dev/nvidiaN is "
          "unknown{}. No gres.conf written: it would leave this GPU out",
          gpu_label(g), why)));
    }
    if (g.pci_bus_id.empty()) {
      return fail(Error::unavailable(fmt::format(
          "GPU {}: NVML gave no PCI bus id (nvmlDeviceGetPciInfo){}, so its slot's CPUs and "
          "NVLink peers are unknown. No gres.conf written",
          g.index, why)));
    }
    GresGpu out;
    out.index = g.index;
    out.minor = *g.minor_number;
    out.pci_bus_id = nvml::normalize_pci_bus_id(g.pci_bus_id);
    out.name = g.name;
    out.type = options.type.empty() ? slurm_gpu_type(g.name) : options.type;
    if (out.type.empty()) {
      return fail(Error::invalid(
          fmt::format("{}: no GPU type in its product name \"{}\"{}; give one with --type",
                      gpu_label(g), g.name, why)));
    }
    if (g.mig_mode.value_or(false)) {
      conf.notes.push_back(fmt::format(
          "GPU {} is in MIG mode: its line names the whole GPU, not its MIG instances", g.index));
    }
    conf.gpus.push_back(std::move(out));
    readings.push_back(&g);
  }
  // Slurm numbers the GPUs of a written gres.conf by the number in File= (`slurmd -G` shows
  // Index=3 for /dev/nvidia3), and Links= positions count in that numbering.
  std::vector<std::size_t> order(conf.gpus.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return conf.gpus[a].minor < conf.gpus[b].minor; });
  std::vector<GresGpu> sorted;
  std::vector<const nvml::GpuReading*> sorted_readings;
  for (std::size_t i : order) {
    if (!sorted.empty() && sorted.back().minor == conf.gpus[i].minor) {
      return fail(Error::unavailable(fmt::format(
          "GPUs {} and {} both have minor number {} (/dev/nvidia{}). No gres.conf written",
          sorted.back().index, conf.gpus[i].index, conf.gpus[i].minor, conf.gpus[i].minor)));
    }
    sorted.push_back(std::move(conf.gpus[i]));
    sorted_readings.push_back(readings[i]);
  }
  conf.gpus = std::move(sorted);
  readings = std::move(sorted_readings);
  fill_cores(fs, conf);
  fill_links(readings, conf);
  return conf;
}

std::string render_gres_conf(const GresConf& conf) {
  std::string out = fmt::format(
      "# gres.conf for {}: {} GPU{} as NVML sees {} (driver {}).\n"
      "# Written by `cardiac export slurm-gres`. Type from the product name, File from the\n"
      "# minor number, Cores from the slot's local_cpulist, Links from NVLink.\n"
      "# slurm.conf: {}\n",
      conf.node_name, conf.gpus.size(), conf.gpus.size() == 1 ? "" : "s",
      conf.gpus.size() == 1 ? "it" : "them",
      conf.driver_version.empty() ? "unknown" : conf.driver_version, conf.node_line());
  for (const auto& n : conf.notes) out += fmt::format("# Note: {}\n", n);
  for (const auto& g : conf.gpus) {
    out += fmt::format("Name=gpu Type={} File={}", g.type, g.file());
    if (!g.cores.empty()) out += fmt::format(" Cores={}", g.cores);
    if (g.links) out += fmt::format(" Links={}", fmt::join(*g.links, ","));
    out += '\n';
  }
  return out;
}

nlohmann::json to_json(const GresConf& conf) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : conf.gpus) {
    nlohmann::json j{{"index", g.index}, {"minor_number", g.minor},
                     {"file", g.file()}, {"pci_bus_id", g.pci_bus_id},
                     {"name", g.name},   {"type", g.type},
                     {"cpus", g.cpus},   {"cores", g.cores}};
    j["links"] = g.links ? nlohmann::json(*g.links) : nlohmann::json(nullptr);
    gpus.push_back(std::move(j));
  }
  return {{"schema", "cardiac.slurm-gres/v1"},
          {"node_name", conf.node_name},
          {"node_line", conf.node_line()},
          {"driver_version", conf.driver_version},
          {"gpus", std::move(gpus)},
          {"notes", conf.notes},
          {"gres_conf", render_gres_conf(conf)}};
}

}  // namespace cardiac::gres
