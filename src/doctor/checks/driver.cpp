// SPDX-License-Identifier: Apache-2.0
// Driver and software checks: NVML missing or unusable (with or without a GPU on the bus), the
// kernel module not loaded or not matching the library, hung or slow NVML, persistence mode,
// processes stuck in the NVIDIA driver, GPU memory held by processes that are gone.
#include <algorithm>
#include <set>

#include "core/units.h"
#include "doctor/checks/checks.h"
#include "doctor/checks/util.h"

namespace cardiac::doctor {
namespace {

using check_util::describe;
using check_util::evidence;
using check_util::make_finding;
using check_util::smi_target;

// One device read taking longer than this is what users feel as "nvidia-smi is slow"; a
// healthy GPU answers a full read in tens of milliseconds.
constexpr std::int64_t kSlowNvmlUs = 1'000'000;

// Where distributions put libnvidia-ml.so.1: a link to libnvidia-ml.so.<driver version>.
constexpr std::string_view kLibraryLinks[] = {
    "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1",
    "/usr/lib64/libnvidia-ml.so.1", "/usr/lib/libnvidia-ml.so.1"};

struct Context {
  const DoctorInput& in;
  const nvml::GpuSnapshot* snap;   // last GPU sample, may be null (offline)
  const host::HostSnapshot* host;  // last host sample, may be null
  std::vector<const host::PciDevice*> bus;
  std::vector<Finding>& out;
};

// The version of the user-space library, when NVML could not say (init failed): the name the
// library link points to carries it.
std::string library_version(const Context& c) {
  if (c.snap != nullptr && !c.snap->system.driver_version.empty()) {
    return c.snap->system.driver_version;
  }
  if (!c.in.fs) return "";
  for (auto path : kLibraryLinks) {
    auto target = c.in.fs->read_link(path);
    if (!target) continue;
    constexpr std::string_view kPrefix = "libnvidia-ml.so.";
    auto pos = target->rfind(kPrefix);
    if (pos != std::string::npos) return target->substr(pos + kPrefix.size());
  }
  return "";
}

std::string bus_list(const Context& c) {
  std::vector<std::string> parts;
  for (const auto* d : c.bus) {
    parts.push_back(
        fmt::format("{} (0x{:04x}, driver {})", d->bus_id, d->device, d->driver.value_or("none")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

void add_bus_evidence(const Context& c, Finding& f) {
  if (c.host == nullptr || !c.host->pci) return;
  f.evidence.push_back(evidence(
      "reading",
      c.bus.empty() ? std::string("no NVIDIA GPU on the PCI bus")
                    : fmt::format("{} NVIDIA GPU(s) on the PCI bus: {}", c.bus.size(), bus_list(c)),
      std::nullopt, "/sys/bus/pci/devices"));
}

void add_module_evidence(const Context& c, Finding& f) {
  if (c.host == nullptr) return;
  const auto& s = c.host->system;
  f.evidence.push_back(
      evidence("reading",
               fmt::format("kernel {}; nvidia module {}", s.kernel.value_or("unknown"),
                           s.nvidia_module_loaded
                               ? "loaded, version " + s.nvidia_driver_version.value_or("unknown")
                               : std::string("not loaded")),
               std::nullopt, "/proc/driver/nvidia/version"));
}

Evidence nvml_evidence(const Context& c) {
  return evidence("reading", fmt::format("NVML: {} ({})", c.snap->error_kind, c.snap->error),
                  c.snap->taken_at);
}

// --- NVML could not be used at all.

void nvml_missing(const Context& c) {
  bool scanned = c.host != nullptr && c.host->pci.has_value();
  if (scanned && c.bus.empty()) {
    // GPUs bound to vfio-pci belong to virtual machines: the host needs no driver for them.
    std::size_t for_vms = c.host->pci->gpus.size();
    Finding f = make_finding(
        "driver.nvml_missing", Category::kDriver, Severity::kInfo, Confidence::kHigh, {},
        for_vms == 0 ? std::string("No NVIDIA GPU on this machine")
                     : fmt::format("No NVIDIA GPU for this host ({} passed through to virtual "
                                   "machines)",
                                   for_vms),
        "There is no NVIDIA driver library and no NVIDIA GPU on the PCI bus for this host to "
        "drive, so there is nothing for the GPU checks to look at. The host checks still ran.");
    add_bus_evidence(c, f);
    f.actions = {
        "Nothing to do if this machine has no GPU; if it should have one, check that "
        "the card is seated and powered (`lspci -d 10de:` lists none)"};
    c.out.push_back(std::move(f));
    return;
  }
  Severity sev = scanned ? Severity::kCritical : Severity::kWarning;
  bool module = c.host != nullptr && c.host->system.nvidia_module_loaded;
  std::string title =
      scanned ? fmt::format("{} NVIDIA GPU(s) on the PCI bus but no NVIDIA driver library",
                            c.bus.size())
              : "No NVIDIA driver library (libnvidia-ml.so.1), and the PCI bus could not be read";
  std::string explanation =
      "libnvidia-ml.so.1 could not be found, so nothing can use the GPUs: no CUDA, no "
      "nvidia-smi, no monitoring.";
  if (module) {
    explanation +=
        " The nvidia kernel module is loaded, so the user-space part is what is missing: "
        "typical of a container started without the NVIDIA container toolkit.";
  }
  Finding f = make_finding("driver.nvml_missing", Category::kDriver, sev, Confidence::kHigh, {},
                           std::move(title), std::move(explanation));
  f.evidence.push_back(nvml_evidence(c));
  add_bus_evidence(c, f);
  add_module_evidence(c, f);
  if (module) {
    f.actions.push_back(
        "Inside a container: start it with the NVIDIA container toolkit (`docker run --gpus "
        "all`, the nvidia runtime) so the driver libraries are mounted in");
  }
  f.actions.push_back(
      "Install the NVIDIA driver for this kernel (Debian: `apt install nvidia-driver "
      "firmware-misc-nonfree`, or the vendor's packages), then reboot and check `nvidia-smi`");
  f.actions.push_back(
      "If the driver is installed in an unusual place, point cardiac at the library with "
      "`--nvml-lib PATH`");
  c.out.push_back(std::move(f));
}

void driver_not_loaded(const Context& c) {
  bool no_gpu = c.host != nullptr && c.host->pci && c.bus.empty();
  std::vector<std::string> other_drivers;
  for (const auto* d : c.bus) {
    if (d->driver && *d->driver != "nvidia") other_drivers.push_back(*d->driver);
  }
  Finding f = make_finding(
      "driver.not_loaded", Category::kDriver, no_gpu ? Severity::kInfo : Severity::kCritical,
      Confidence::kHigh, {},
      no_gpu ? "The NVIDIA driver is installed but not loaded, and there is no NVIDIA GPU"
             : "The NVIDIA kernel driver is not loaded",
      no_gpu ? "The library is there but the kernel module is not: normal on a machine without "
               "an NVIDIA GPU."
             : "The NVML library is installed but the nvidia kernel module is not loaded, so no "
               "GPU can be used. Usual causes: the module was not built for the running kernel "
               "(a kernel upgrade without DKMS), Secure Boot refused the unsigned module, or "
               "nouveau took the GPU first.");
  f.evidence.push_back(nvml_evidence(c));
  add_module_evidence(c, f);
  add_bus_evidence(c, f);
  if (no_gpu) {
    f.actions = {"Nothing to do unless this machine should have a GPU"};
    c.out.push_back(std::move(f));
    return;
  }
  f.actions = {
      "Load it and read why it fails: `sudo modprobe nvidia`, then `dmesg | grep -iE "
      "'nvrm|nvidia'`",
      "If the module is missing for this kernel (`modinfo nvidia` fails): rebuild it with "
      "`sudo dkms autoinstall` (check `dkms status`) or reinstall the driver for `uname -r`",
      "If Secure Boot is on (`mokutil --sb-state`), enrol the module signing key or sign the "
      "module",
      "Make sure nouveau is blacklisted (`lsmod | grep nouveau` shows nothing), then reboot",
  };
  if (!other_drivers.empty()) {
    f.actions.insert(f.actions.begin(),
                     fmt::format("The GPU is bound to {}: blacklist it (`/etc/modprobe.d/"
                                 "blacklist-nouveau.conf`), update the initramfs and reboot",
                                 other_drivers.front()));
  }
  c.out.push_back(std::move(f));
}

void version_mismatch(const Context& c, const std::string& library, const std::string& module) {
  Finding f = make_finding(
      "driver.version_mismatch", Category::kDriver, Severity::kCritical, Confidence::kHigh, {},
      library.empty() || module.empty()
          ? "The NVIDIA library and kernel module versions differ"
          : fmt::format("NVIDIA library {} does not match the loaded kernel module {}", library,
                        module),
      "The driver was upgraded (or partly installed) without a reboot: the new user-space "
      "library refuses to talk to the old kernel module still loaded, so nvidia-smi, CUDA and "
      "NVML all fail until the matching module is loaded.");
  if (c.snap != nullptr && !c.snap->available) f.evidence.push_back(nvml_evidence(c));
  f.evidence.push_back(
      evidence("reading",
               fmt::format("library {}, kernel module {}", library.empty() ? "unknown" : library,
                           module.empty() ? "unknown" : module),
               std::nullopt, "/proc/driver/nvidia/version"));
  f.actions = {
      "Reboot the machine so that the kernel module matching the installed library loads",
      "Without a reboot: stop every GPU user (jobs, nvidia-persistenced, DCGM, containers, the "
      "display manager), then `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo "
      "modprobe nvidia`",
      "Hold the driver packages (`apt-mark hold`) so an unattended upgrade cannot do this again "
      "under running jobs",
  };
  c.out.push_back(std::move(f));
}

void nvml_unavailable(const Context& c) {
  const std::string& kind = c.snap->error_kind;
  std::string module =
      c.host != nullptr ? c.host->system.nvidia_driver_version.value_or("") : std::string();
  if (kind == "library_not_found") return nvml_missing(c);
  if (kind == "driver_not_loaded") return driver_not_loaded(c);
  if (kind == "version_mismatch") return version_mismatch(c, library_version(c), module);
  Finding f;
  if (kind == "no_permission") {
    f = make_finding(
        "driver.no_permission", Category::kDriver, Severity::kWarning, Confidence::kHigh, {},
        "No permission to use the NVIDIA driver",
        "The driver is there but this user cannot open /dev/nvidiactl and /dev/nvidia*, so the "
        "GPUs were not examined. This says nothing about the GPUs' health.");
    f.actions = {"Run `cardiac doctor` as root (sudo)",
                 "Or give the user access to the devices: `ls -l /dev/nvidia*` shows the group",
                 "In a container, pass the devices in (`--gpus all`)"};
  } else if (kind == "unresponsive") {
    f = make_finding(
        "driver.nvml_hung", Category::kDriver, Severity::kCritical, Confidence::kHigh, {},
        "The NVIDIA driver does not answer: NVML initialisation hung",
        "cardiac's NVML worker did not finish initialising before its deadline. Anything else "
        "that touches the driver (nvidia-smi, CUDA jobs, monitoring agents) hangs the same way "
        "and ends up in uninterruptible sleep (D state).");
    f.actions = {
        "Drain the machine and reboot it; a wedged driver does not recover by itself, and the "
        "stuck processes cannot be killed (a BMC power cycle if the reboot hangs)",
        "Do not run nvidia-smi in a loop meanwhile: each call adds a stuck process",
        "After the reboot, read the kernel log from before it for Xid 79/119/120 or a GSP "
        "timeout (`cardiac doctor --since 24h`)",
    };
  } else if (kind == "library_unusable") {
    f = make_finding("driver.nvml_unusable", Category::kDriver,
                     c.bus.empty() ? Severity::kWarning : Severity::kCritical, Confidence::kHigh,
                     {}, "The NVML library cannot be loaded",
                     "A libnvidia-ml was named or found but could not be loaded or lacks the "
                     "functions cardiac needs.");
    f.actions = {"Check the path given with `--nvml-lib` (or `nvml.library` in the config)",
                 "Reinstall the driver's user-space libraries"};
  } else {
    f = make_finding(kind == "init_failed" ? "driver.nvml_init_failed" : "driver.nvml_failed",
                     Category::kDriver,
                     kind == "init_failed" ? Severity::kCritical : Severity::kWarning,
                     kind == "init_failed" ? Confidence::kMedium : Confidence::kLow, {},
                     "NVML could not be used", "NVML failed to start: " + c.snap->error);
    f.actions = {"Read the kernel log for NVRM errors (`dmesg | grep -i nvrm`, `cardiac doctor`)",
                 "Run `nvidia-smi`: if it fails the same way, reboot; if it works, rerun "
                 "`cardiac doctor`"};
  }
  f.evidence.push_back(nvml_evidence(c));
  add_module_evidence(c, f);
  add_bus_evidence(c, f);
  c.out.push_back(std::move(f));
}

// --- NVML works: per-GPU driver health.

// NVML answers but lists no GPU. With GPUs on the bus the hardware check reports each one
// missing; with none on the bus either, the GPUs are hidden from this view (the status
// verdict warns on the same state).
void zero_gpus(const Context& c) {
  if (c.snap->system.device_count > 0 || !c.snap->gpus.empty() || !c.bus.empty()) return;
  Finding f = make_finding(
      "driver.zero_gpus", Category::kDriver, Severity::kWarning, Confidence::kMedium, {},
      "The NVIDIA driver is loaded but reports no GPU",
      "NVML works but lists no GPU, and no NVIDIA GPU is visible on the PCI bus either: the "
      "GPUs are hidden from this machine's view (a container without its GPUs, GPUs unbound "
      "or handed to virtual machines) or the machine has none.");
  f.evidence.push_back(
      evidence("reading",
               fmt::format("NVML {} (driver {}) lists 0 GPUs", c.snap->system.nvml_version,
                           c.snap->system.driver_version),
               c.snap->taken_at));
  add_bus_evidence(c, f);
  f.actions = {
      "In a container, pass the GPUs in (`docker run --gpus all`, NVIDIA_VISIBLE_DEVICES)",
      "On the host, check that the cards are seen at all: `lspci -d 10de:`",
  };
  c.out.push_back(std::move(f));
}

std::vector<const host::DStateProcess*> nvidia_dstate(const host::HostSnapshot* h) {
  std::vector<const host::DStateProcess*> out;
  if (h == nullptr) return out;
  for (const auto& p : h->dstate_processes) {
    if (p.comm.starts_with("nvidia") || check_util::in_nvidia_driver(p.wchan.value_or(""))) {
      out.push_back(&p);
    }
  }
  return out;
}

Evidence process_evidence(const host::DStateProcess& p, std::optional<TimeNs> when) {
  return evidence("process",
                  fmt::format("pid {} {} state D wchan {} cmdline: {}", p.pid, p.comm,
                              p.wchan.value_or("?"), p.cmdline.empty() ? "-" : p.cmdline),
                  when, fmt::format("/proc/{}", p.pid));
}

void nvml_hung_gpus(const Context& c, const std::vector<check_util::GpuWindow>& windows,
                    const GpuMap& map) {
  for (const auto& w : windows) {
    const check_util::Sample* hung = nullptr;
    for (const auto& s : w.all) {
      if (s.reading->health == nvml::DeviceHealth::kUnresponsive) hung = &s;
    }
    if (!hung) continue;
    GpuRef g = check_util::gpu_ref(*hung->reading, map);
    std::string who = describe(g);
    Finding f = make_finding(
        "driver.nvml_hung", Category::kDriver, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("NVML calls on {} hang: the driver is not answering", who),
        fmt::format("cardiac's NVML worker gave up on this GPU when a call passed its deadline "
                    "({}). The driver is wedged for it: nvidia-smi will hang too, and every "
                    "process that touches the GPU ends up in uninterruptible sleep (D state) "
                    "and cannot be killed.",
                    hung->reading->health_detail));
    f.evidence.push_back(evidence("reading", hung->reading->health_detail, hung->time));
    for (const auto* p : nvidia_dstate(c.host)) {
      f.evidence.push_back(process_evidence(*p, c.host->taken_at));
    }
    f.actions = {
        "Drain the machine and reboot it: the stuck calls will not return, and a BMC power "
        "cycle is needed if the reboot itself hangs",
        fmt::format("If no process holds it, a reset may free it without a reboot: `sudo "
                    "nvidia-smi -r -i {}` (it may hang too)",
                    smi_target(g)),
        "Look for processes stuck in the driver: `ps -eo pid,stat,wchan:32,cmd | awk '$2 ~ /D/'`",
        "After the reboot, read the kernel log from before it for Xid 79/119/120 or a GSP "
        "timeout on this GPU",
    };
    c.out.push_back(std::move(f));
  }
}

void nvml_slow(const Context& c, const std::vector<check_util::GpuWindow>& windows,
               const GpuMap& map) {
  for (const auto& w : windows) {
    if (w.ok.empty()) continue;
    std::vector<std::int64_t> us;
    for (const auto& s : w.ok) us.push_back(s.reading->sample_duration_us);
    std::sort(us.begin(), us.end());
    std::int64_t median = us[us.size() / 2];
    if (median <= kSlowNvmlUs) continue;
    const auto& last = *w.ok.back().reading;
    GpuRef g = check_util::gpu_ref(last, map);
    bool no_persistence = last.persistence_mode && !*last.persistence_mode;
    Finding f = make_finding(
        "driver.nvml_slow", Category::kDriver, Severity::kWarning, Confidence::kMedium, g,
        fmt::format("NVML is slow on {} ({:.1f} s per read)", describe(g),
                    static_cast<double>(median) / 1e6),
        std::string("Reading this GPU took more than a second (median over the window), where "
                    "a healthy GPU answers in tens of milliseconds. ") +
            (no_persistence ? "Persistence mode is off, so the driver may be tearing the GPU "
                              "down and bringing it up again around each query."
                            : "A driver struggling with the GPU (recovering from errors, a "
                              "GSP firmware that answers late) is the usual cause."));
    f.evidence.push_back(evidence(
        "reading",
        fmt::format("NVML read time per sample: median {:.2f} s, max {:.2f} s over {} samples",
                    static_cast<double>(median) / 1e6, static_cast<double>(us.back()) / 1e6,
                    us.size()),
        w.ok.back().time));
    f.actions = {
        no_persistence ? "Turn persistence mode on: `sudo nvidia-smi -pm 1` (or enable "
                         "nvidia-persistenced)"
                       : "Check the kernel log for Xids or GSP timeouts on this GPU",
        "Rerun `cardiac doctor`; if reads keep getting slower, expect the GPU to hang: drain it",
    };
    c.out.push_back(std::move(f));
  }
}

// Consumer and workstation boards keep persistence off by design (a display driver runs them);
// on a datacenter board, persistence off means slow starts and lost settings.
bool datacenter_gpu(std::string_view name) {
  for (std::string_view consumer : {"GeForce", "TITAN", "Quadro", "RTX", "NVS"}) {
    if (name.find(consumer) != std::string_view::npos) return false;
  }
  return !name.empty();
}

void persistence_off(const Context& c, const std::vector<check_util::GpuWindow>& windows,
                     const GpuMap& map) {
  std::vector<GpuRef> off;
  for (const auto& w : windows) {
    if (w.ok.empty()) continue;
    const auto& r = *w.ok.back().reading;
    if (r.persistence_mode == false && datacenter_gpu(r.name)) {
      off.push_back(check_util::gpu_ref(r, map));
    }
  }
  if (off.empty()) return;
  std::vector<std::string> names;
  for (const auto& g : off) names.push_back(g.label());
  Finding f = make_finding(
      "driver.persistence_off", Category::kConfiguration, Severity::kWarning, Confidence::kHigh,
      off.size() == 1 ? off.front() : GpuRef{},
      fmt::format("Persistence mode is off on {}", fmt::join(names, ", ")),
      "Without persistence the driver tears each GPU down when its last user exits and "
      "brings it up again for the next one: every job and every nvidia-smi starts slowly, and "
      "settings such as application clocks and power limits are lost.");
  f.evidence.push_back(evidence("reading",
                                fmt::format("persistence mode off: {}", fmt::join(names, ", ")),
                                c.snap->taken_at));
  f.actions = {
      "Enable the persistence daemon: `sudo systemctl enable --now nvidia-persistenced`",
      "Or turn it on directly (lost at reboot): `sudo nvidia-smi -pm 1`",
  };
  c.out.push_back(std::move(f));
}

// --- Host processes stuck in the driver.

void dstate_nvidia(const Context& c, const GpuMap& map) {
  auto stuck = nvidia_dstate(c.host);
  if (stuck.empty()) return;
  // Stuck in every host sample = persistent (gpud waits for 5 checks in a row); in only some,
  // the driver was slow and may recover.
  std::size_t persistent = 0;
  for (const auto* p : stuck) {
    bool always =
        std::all_of(c.in.host_samples.begin(), c.in.host_samples.end(), [&](const auto& h) {
          return std::any_of(h.dstate_processes.begin(), h.dstate_processes.end(),
                             [&](const auto& q) { return q.pid == p->pid; });
        });
    persistent += always ? 1 : 0;
  }
  // The GPU the processes wait on, when exactly one GPU stopped answering.
  GpuRef g;
  unsigned unresponsive = 0;
  if (c.snap != nullptr) {
    for (const auto& r : c.snap->gpus) {
      if (r.health != nvml::DeviceHealth::kUnresponsive) continue;
      ++unresponsive;
      g = check_util::gpu_ref(r, map);
    }
  }
  if (unresponsive != 1) g = {};
  std::vector<std::string> names;
  for (const auto* p : stuck) names.push_back(fmt::format("{} ({})", p->comm, p->pid));
  bool all_persistent = persistent == stuck.size();
  Finding f = make_finding(
      "driver.dstate_nvidia", Category::kDriver,
      all_persistent ? Severity::kCritical : Severity::kWarning,
      all_persistent ? Confidence::kHigh : Confidence::kMedium, g,
      fmt::format(
          "{} stuck in the NVIDIA driver: {}",
          stuck.size() == 1 ? "A process is" : fmt::format("{} processes are", stuck.size()),
          fmt::join(names, ", ")),
      std::string(stuck.size() == 1
                      ? "This process is in uninterruptible sleep (D state) in the NVIDIA "
                        "driver, or is an NVIDIA tool stuck there. It cannot be killed, not "
                        "even with kill -9. "
                      : "These processes are in uninterruptible sleep (D state) in the NVIDIA "
                        "driver, or are NVIDIA tools stuck there. They cannot be killed, not "
                        "even with kill -9. ") +
          "This is the \"nvidia-smi hangs\" signature of a wedged driver. " +
          (all_persistent ? "Stuck for the whole window."
                          : "Some came out of it during the window: the driver may only be "
                            "slow."));
  for (const auto* p : stuck) f.evidence.push_back(process_evidence(*p, c.host->taken_at));
  f.actions = {
      "Drain the machine and reboot it (a BMC power cycle if the reboot hangs on the stuck "
      "processes): nothing else frees them",
      "Stop monitoring that calls nvidia-smi in a loop until then: each call adds a stuck "
      "process",
      "After the reboot, read the kernel log from before it for Xid 79/119/120, GSP timeouts "
      "or hung-task reports in nvidia (`cardiac doctor --since 24h`)",
  };
  c.out.push_back(std::move(f));
}

// --- GPU memory held by processes that are gone.

bool in_container(const DoctorInput& in) {
  return in.fs && (in.fs->exists("/.dockerenv") || in.fs->exists("/run/.containerenv"));
}

void orphaned_memory(const Context& c, const std::vector<check_util::GpuWindow>& windows,
                     const GpuMap& map) {
  bool container = in_container(c.in);
  for (const auto& w : windows) {
    if (w.ok.empty()) continue;
    const auto& r = *w.ok.back().reading;
    std::vector<const nvml::GpuProcess*> gone;
    std::uint64_t bytes = 0;
    for (const auto& p : r.processes) {
      if (p.pid == 0) continue;
      auto it = std::find_if(c.in.gpu_processes.begin(), c.in.gpu_processes.end(),
                             [&](const ProcessActivity& a) { return a.pid == p.pid; });
      bool missing = it != c.in.gpu_processes.end()
                         ? !it->exists
                         : c.in.fs && !c.in.fs->exists(fmt::format("/proc/{}", p.pid));
      if (!missing) continue;
      gone.push_back(&p);
      bytes += p.used_memory_bytes.value_or(0);
    }
    if (gone.empty()) continue;
    GpuRef g = check_util::gpu_ref(r, map);
    std::string who = describe(g);
    Finding f = make_finding(
        "driver.orphaned_gpu_memory", Category::kDriver, Severity::kWarning,
        container ? Confidence::kLow : Confidence::kMedium, g,
        fmt::format("{} of GPU memory on {} is held by process(es) that no longer exist",
                    format_bytes(bytes), who),
        std::string("NVML lists processes on this GPU that /proc does not have. The memory they "
                    "hold is not free for new jobs. A crashed job whose GPU context was never "
                    "torn down, or a child process still holding /dev/nvidia*, leaves this.") +
            (container ? " cardiac runs in a container, whose /proc does not show the host's "
                         "processes: check from the host before acting."
                       : ""));
    for (const auto* p : gone) {
      f.evidence.push_back(evidence(
          "process",
          fmt::format("pid {} ({}) holds {} on {}, no /proc/{}", p->pid,
                      p->type.empty() ? "compute" : p->type,
                      p->used_memory_bytes ? format_bytes(*p->used_memory_bytes) : "unknown memory",
                      who, p->pid),
          w.ok.back().time));
    }
    f.actions = {
        "Find what still holds the GPU: `sudo fuser -v /dev/nvidia*` (a zombie's parent, a "
        "leftover child, a container)",
        "Kill the holder; if nothing holds it, reset the GPU when idle: `sudo nvidia-smi -r -i " +
            smi_target(g) + "` (or reboot)",
        "If it keeps happening after crashes, look for Xid 43/45 in the kernel log and update the "
        "driver",
    };
    c.out.push_back(std::move(f));
  }
}

}  // namespace

void check_driver(const DoctorInput& in, std::vector<Finding>& out) {
  Context c{in, in.last_gpus(), in.last_host(), check_util::host_bus_gpus(in.last_host()), out};
  // D-state processes stuck in the driver are visible from /proc whatever NVML does.
  GpuMap map(in);
  auto windows = check_util::gpu_windows(in);
  dstate_nvidia(c, map);
  if (c.snap == nullptr) return;  // NVML not asked (offline)
  if (!c.snap->available) {
    nvml_unavailable(c);
    return;
  }
  std::string module = c.host != nullptr ? c.host->system.nvidia_driver_version.value_or("") : "";
  if (!module.empty() && !c.snap->system.driver_version.empty() &&
      module != c.snap->system.driver_version) {
    version_mismatch(c, c.snap->system.driver_version, module);
  }
  zero_gpus(c);
  nvml_hung_gpus(c, windows, map);
  nvml_slow(c, windows, map);
  persistence_off(c, windows, map);
  orphaned_memory(c, windows, map);
}

}  // namespace cardiac::doctor
