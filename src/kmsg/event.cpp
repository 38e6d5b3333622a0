// SPDX-License-Identifier: Apache-2.0
// Kernel-message classifier: hand-written string_view scanners, one per message family.
#include "kmsg/event.h"

#include <array>

#include "kmsg/record.h"
#include "kmsg/scan.h"
#include "nvml/pci.h"

namespace cardiac::kmsg {
namespace {

struct KindName {
  EventKind kind;
  std::string_view name;
};

constexpr KindName kKindNames[] = {
    {EventKind::kAer, "aer"},
    {EventKind::kFabricManager, "fabric_manager"},
    {EventKind::kFallenOffBus, "fallen_off_bus"},
    {EventKind::kGpuMap, "gpu_map"},
    {EventKind::kGspTimeout, "gsp_timeout"},
    {EventKind::kHungTask, "hung_task"},
    {EventKind::kIb, "ib"},
    {EventKind::kInitFailure, "init_failure"},
    {EventKind::kNvlink, "nvlink"},
    {EventKind::kResetRequired, "reset_required"},
    {EventKind::kSxid, "sxid"},
    {EventKind::kXid, "xid"},
};

}  // namespace

std::string_view event_kind_name(EventKind k) {
  for (const KindName& n : kKindNames) {
    if (n.kind == k) return n.name;
  }
  return "?";
}

std::optional<EventKind> parse_event_kind(std::string_view name) {
  for (const KindName& n : kKindNames) {
    if (n.name == name) return n.kind;
  }
  return std::nullopt;
}

namespace {

struct AerName {
  AerSeverity severity;
  std::string_view name;
};

constexpr AerName kAerNames[] = {
    {AerSeverity::kCorrected, "corrected"},
    {AerSeverity::kUncorrectedNonFatal, "uncorrected_non_fatal"},
    {AerSeverity::kUncorrectedFatal, "uncorrected_fatal"},
};

}  // namespace

std::string_view aer_severity_name(AerSeverity s) {
  for (const AerName& n : kAerNames) {
    if (n.severity == s) return n.name;
  }
  return "?";
}

std::optional<AerSeverity> parse_aer_severity(std::string_view name) {
  for (const AerName& n : kAerNames) {
    if (n.name == name) return n.severity;
  }
  return std::nullopt;
}

namespace {

using namespace detail;

bool contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

std::string_view trim_view(std::string_view s) {
  skip_spaces(s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_bus_shape(std::string_view s) {
  // hhhh..:hh:hh.h as printed by normalize_pci_bus_id for valid ids.
  auto c1 = s.find(':');
  auto c2 = s.rfind(':');
  auto dot = s.rfind('.');
  if (c1 < 4 || c1 > 8 || c2 != c1 + 3 || dot != c2 + 3 || s.size() != dot + 2) return false;
  for (char c : s) {
    if (!is_hex(c) && c != ':' && c != '.') return false;
  }
  // normalize_pci_bus_id leaves out-of-range ids unchanged; reject them here.
  const int dev = hex_value(s[c2 + 1]) * 16 + hex_value(s[c2 + 2]);
  return dev <= 0x1f && s[dot + 1] >= '0' && s[dot + 1] <= '7';
}

// Finds the first "dddd:bb:dd[.f]" in free text (e.g. "GPU 0000:09:00.0:" or "PCI:0000:9b:00").
std::string find_bus_id(std::string_view s) {
  for (std::size_t i = 0; i + 10 <= s.size(); ++i) {
    // Not the middle of a longer id; "PCI:" before the id is fine.
    if (i > 0 && (is_hex(s[i - 1]) || (s[i - 1] == ':' && i > 1 && is_hex(s[i - 2])))) continue;
    std::size_t j = i;
    while (j < s.size() && j - i < 8 && is_hex(s[j])) ++j;
    if (j - i < 4 || j + 6 > s.size() || s[j] != ':') continue;
    if (!is_hex(s[j + 1]) || !is_hex(s[j + 2]) || s[j + 3] != ':') continue;
    if (!is_hex(s[j + 4]) || !is_hex(s[j + 5])) continue;
    std::size_t end = j + 6;
    if (end + 1 < s.size() && s[end] == '.' && is_digit(s[end + 1])) end += 2;
    if (end < s.size() && is_hex(s[end])) continue;
    std::string id = normalize_kernel_bus_id(s.substr(i, end - i));
    if (!id.empty()) return id;
  }
  return {};
}

// Text after the last "NVRM: " and an optional "GPU <bdf>: " so messages read the same
// whichever driver generation printed them.
std::string nvrm_text(std::string_view m) {
  auto p = m.find("NVRM: ");
  if (p != std::string_view::npos) m.remove_prefix(p + 6);
  std::string_view t = m;
  if (eat(t, "GPU ")) {
    auto c = t.find(": ");
    if (c != std::string_view::npos && c <= 16 &&
        !normalize_kernel_bus_id(t.substr(0, c)).empty()) {
      m = t.substr(c + 2);
    }
  }
  return std::string(trim_view(m));
}

KernelEvent make(EventKind kind, std::string bus, std::string message) {
  KernelEvent e;
  e.kind = kind;
  e.pci_bus_id = std::move(bus);
  e.message = std::move(message);
  return e;
}

// "NVRM: Xid (PCI:0000:3b:00 GPU-I:05 GPU-CI:01): 79, pid=1234, name=python, text".
std::optional<KernelEvent> parse_xid(std::string_view m, std::size_t at) {
  std::string_view s = m.substr(at + 11);  // past "NVRM: Xid ("
  auto close = s.find(')');
  if (close == std::string_view::npos || close > 64) return std::nullopt;
  std::string_view inside = s.substr(0, close);
  s.remove_prefix(close + 1);
  KernelEvent e;
  e.kind = EventKind::kXid;
  bool first = true;
  while (!inside.empty()) {
    skip_spaces(inside);
    auto sp = inside.find(' ');
    std::string_view tok = inside.substr(0, sp);
    inside.remove_prefix(sp == std::string_view::npos ? inside.size() : sp);
    if (tok.empty()) break;
    if (first) {
      eat(tok, "PCI:");
      e.pci_bus_id = normalize_kernel_bus_id(tok);
      if (e.pci_bus_id.empty()) return std::nullopt;
      first = false;
    } else if (eat(tok, "GPU-I:")) {
      if (auto v = eat_uint(tok, 4); v && tok.empty()) e.gpu_instance = static_cast<int>(*v);
    } else if (eat(tok, "GPU-CI:")) {
      if (auto v = eat_uint(tok, 4); v && tok.empty()) e.compute_instance = static_cast<int>(*v);
    }
  }
  if (first || !eat(s, ":")) return std::nullopt;
  skip_spaces(s);
  auto xid = eat_uint(s, 5);
  if (!xid || (!s.empty() && s.front() != ',')) return std::nullopt;
  e.xid = static_cast<int>(*xid);
  eat(s, ",");
  skip_spaces(s);
  if (eat(s, "pid=")) {
    auto comma = s.find(',');
    std::string_view v = s.substr(0, comma);
    if (auto pid = eat_uint(v, 9); pid && v.empty()) e.pid = static_cast<int>(*pid);
    s.remove_prefix(comma == std::string_view::npos ? s.size() : comma + 1);
    skip_spaces(s);
  }
  if (eat(s, "name=")) {
    // comm may hold commas in theory; the driver always follows it with ", ".
    auto end = s.find(", ");
    std::string_view v = s.substr(0, end);
    if (v != "<unknown>") e.process = std::string(v);
    s.remove_prefix(end == std::string_view::npos ? s.size() : end + 2);
  }
  e.message = std::string(trim_view(s));
  return e;
}

// "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 46 ...".
std::optional<KernelEvent> parse_sxid(std::string_view m, std::size_t at) {
  std::string_view s = m.substr(at + 6);
  auto close = s.find(')');
  if (close == std::string_view::npos || close > 40) return std::nullopt;
  std::string_view inside = trim_view(s.substr(0, close));
  eat(inside, "PCI:");
  KernelEvent e;
  e.kind = EventKind::kSxid;
  e.pci_bus_id = normalize_kernel_bus_id(inside);
  if (e.pci_bus_id.empty()) return std::nullopt;
  s.remove_prefix(close + 1);
  if (!eat(s, ":")) return std::nullopt;
  skip_spaces(s);
  auto code = eat_uint(s, 6);
  if (!code || (!s.empty() && s.front() != ',')) return std::nullopt;
  e.xid = static_cast<int>(*code);
  eat(s, ",");
  skip_spaces(s);
  if (starts_with_ci(s, "non-fatal")) {
    e.severity = "non_fatal";
  } else if (starts_with_ci(s, "fatal")) {
    e.severity = "fatal";
  }
  e.message = std::string(trim_view(s));
  return e;
}

// "NVRM: GPU at PCI:0000:3b:00: GPU-2b7f1ab2-...".
std::optional<KernelEvent> parse_gpu_map(std::string_view m, std::size_t at) {
  std::string_view s = m.substr(at + 17);  // past "NVRM: GPU at PCI:"
  auto sep = s.find(": ");
  if (sep == std::string_view::npos || sep > 16) return std::nullopt;
  std::string bus = normalize_kernel_bus_id(s.substr(0, sep));
  s.remove_prefix(sep + 2);
  if (bus.empty() || !starts_with_ci(s, "GPU-")) return std::nullopt;
  std::size_t n = 4;
  while (n < s.size() && (is_hex(s[n]) || s[n] == '-')) ++n;
  if (n < 12) return std::nullopt;
  KernelEvent e = make(EventKind::kGpuMap, std::move(bus), {});
  e.uuid = std::string(s.substr(0, n));
  return e;
}

std::optional<AerSeverity> aer_severity(std::string_view phrase) {
  if (icontains(phrase, "non-fatal")) return AerSeverity::kUncorrectedNonFatal;
  if (icontains(phrase, "fatal")) return AerSeverity::kUncorrectedFatal;
  if (starts_with_ci(phrase, "correct")) return AerSeverity::kCorrected;
  return std::nullopt;
}

// "<driver> <bdf>: AER: <Severity> error [message] received[:| from] <bdf>" and
// "<driver> <bdf>: PCIe Bus Error: severity=<Severity>, type=..., ...".
std::optional<KernelEvent> parse_aer(std::string_view m) {
  std::size_t at = m.find(": AER: ");
  const bool bus_error = at == std::string_view::npos;
  if (bus_error) at = m.find(": PCIe Bus Error: severity=");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view head = m.substr(0, at);
  auto sp = head.rfind(' ');
  std::string device =
      normalize_kernel_bus_id(head.substr(sp == std::string_view::npos ? 0 : sp + 1));
  if (device.empty()) return std::nullopt;
  KernelEvent e;
  e.kind = EventKind::kAer;
  if (bus_error) {
    std::string_view s = m.substr(at + 27);
    auto comma = s.find(',');
    e.aer_severity = aer_severity(s.substr(0, comma));
    e.pci_bus_id = device;
    e.message = std::string(trim_view(m.substr(at + 2)));
  } else {
    std::string_view s = m.substr(at + 7);
    eat(s, "Multiple ");
    auto recv = s.find(" received");
    if (recv == std::string_view::npos || !icontains(s.substr(0, recv), "error")) {
      return std::nullopt;
    }
    e.aer_severity = aer_severity(s.substr(0, recv));
    std::string src = find_bus_id(s.substr(recv));
    e.reporter = device;
    e.pci_bus_id = src.empty() ? device : src;
    e.message = std::string(trim_view(s));
  }
  if (!e.aer_severity) return std::nullopt;
  return e;
}

// "INFO: task python:1234 blocked for more than 120 seconds."
std::optional<KernelEvent> parse_hung_task(std::string_view m, std::size_t at) {
  std::string_view s = m.substr(at + 11);
  auto blocked = s.find(" blocked for more than ");
  if (blocked == std::string_view::npos) return std::nullopt;
  std::string_view task = s.substr(0, blocked);
  auto colon = task.rfind(':');  // comm may itself contain ':' ("kworker/0:1")
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view pid_text = task.substr(colon + 1);
  auto pid = eat_uint(pid_text, 9);
  if (!pid || !pid_text.empty()) return std::nullopt;
  KernelEvent e = make(EventKind::kHungTask, {}, std::string(trim_view(s.substr(blocked + 1))));
  if (!e.message.empty() && e.message.back() == '.') e.message.pop_back();
  e.pid = static_cast<int>(*pid);
  e.process = std::string(task.substr(0, colon));
  return e;
}

// "mlx5_core 0000:5e:00.0: <text>" or "mlx5_core 0000:5e:00.0 ib0: <text>".
std::optional<KernelEvent> parse_mlx5(std::string_view m, std::size_t at) {
  static constexpr std::array<std::string_view, 9> kBad = {
      "error",  "fatal",    "fail",   "timeout",      "link down",
      "health", "syndrome", "assert", "unrecoverable"};
  std::string_view s = m.substr(at);
  auto sp = s.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  s.remove_prefix(sp + 1);
  std::string_view dev = s.substr(0, s.find(' '));
  if (!dev.empty() && dev.back() == ':') dev.remove_suffix(1);
  std::string bus = normalize_kernel_bus_id(dev);
  if (bus.empty()) return std::nullopt;
  bool bad = false;
  for (auto word : kBad) bad = bad || icontains(s, word);
  if (!bad) return std::nullopt;
  auto colon = s.find(": ");
  return make(EventKind::kIb, std::move(bus),
              std::string(trim_view(colon == std::string_view::npos ? s : s.substr(colon + 2))));
}

// Fabric Manager's log after its time stamp: "[ERROR] [tid 1008] detected NVSwitch fatal error
// 20034 on fid 0 on NVSwitch pci bus id 00000000:c4:00.0 physical id 3 port 42".
std::optional<KernelEvent> parse_fabric_manager(std::string_view m) {
  std::string_view s = m;
  std::string severity;
  if (eat(s, "[ERROR] ")) {
    severity = "error";
  } else if (eat(s, "[FATAL] ") || eat(s, "[CRITICAL] ")) {
    severity = "fatal";
  } else {
    return std::nullopt;
  }
  if (!eat(s, "[tid ")) return std::nullopt;
  auto close = s.find("] ");
  if (close == std::string_view::npos || close > 12) return std::nullopt;
  s.remove_prefix(close + 2);
  KernelEvent e = make(EventKind::kFabricManager, find_bus_id(s), std::string(trim_view(s)));
  e.severity = std::move(severity);
  for (std::string_view tag : {std::string_view("fatal error "), std::string_view("error ")}) {
    auto at = s.find(tag);
    if (at == std::string_view::npos) continue;
    std::string_view num = s.substr(at + tag.size());
    if (auto code = eat_uint(num, 6); code && (num.empty() || num.front() == ' ')) {
      e.xid = static_cast<int>(*code);
      if (tag == "fatal error " && (at < 4 || s.substr(at - 4, 4) != "non-")) e.severity = "fatal";
      break;
    }
  }
  return e;
}

std::optional<KernelEvent> classify_nvrm(std::string_view m, std::size_t at) {
  if (auto x = m.find("NVRM: Xid (", at); x != std::string_view::npos) return parse_xid(m, x);
  if (auto g = m.find("NVRM: GPU at PCI:", at); g != std::string_view::npos) {
    return parse_gpu_map(m, g);
  }
  std::string_view s = m.substr(at);
  if (contains(s, "RmInitAdapter failed") || contains(s, "rm_init_adapter failed") ||
      contains(s, "probe routine failed")) {
    return make(EventKind::kInitFailure, find_bus_id(s), nvrm_text(s));
  }
  if (contains(s, "GSP") && (icontains(s, "timeout") || contains(s, "Rate limiting GSP RPC"))) {
    return make(EventKind::kGspTimeout, find_bus_id(s), nvrm_text(s));
  }
  if (icontains(s, "reset required") || icontains(s, "requires reset") ||
      icontains(s, "requires a reset") || icontains(s, "needs to be reset")) {
    return make(EventKind::kResetRequired, find_bus_id(s), nvrm_text(s));
  }
  if (icontains(s, "nvlink") &&
      (icontains(s, "error") || icontains(s, "fatal") || icontains(s, "fail"))) {
    return make(EventKind::kNvlink, find_bus_id(s), nvrm_text(s));
  }
  return std::nullopt;
}

}  // namespace

std::string normalize_kernel_bus_id(std::string_view id) {
  id = trim_view(id);
  if (id.empty() || id.size() > 16) return {};
  std::string candidate(id);
  if (id.find('.') == std::string_view::npos) candidate += ".0";  // Xid form "0000:3b:00"
  std::string out = nvml::normalize_pci_bus_id(candidate);
  if (!is_bus_shape(out)) return {};
  return out;
}

std::optional<KernelEvent> classify(std::string_view m) {
  if (m.empty() || m.size() > kMaxMessageBytes) return std::nullopt;
  // Cheap first-byte filters keep the common (uninteresting) line to a few memchr calls.
  if (auto p = m.find("NVRM: "); p != std::string_view::npos) {
    if (auto e = classify_nvrm(m, p)) return e;
  }
  if (icontains(m, "fallen off the bus")) {
    return make(EventKind::kFallenOffBus, find_bus_id(m), nvrm_text(m));
  }
  if (auto p = m.find("SXid ("); p != std::string_view::npos) return parse_sxid(m, p);
  if (contains(m, "AER: ") || contains(m, "PCIe Bus Error: ")) return parse_aer(m);
  if (auto p = m.find("INFO: task "); p != std::string_view::npos) return parse_hung_task(m, p);
  if (auto p = m.find("mlx5_"); p != std::string_view::npos) return parse_mlx5(m, p);
  if (m.front() == '[') return parse_fabric_manager(m);
  if (auto p = m.find("nvidia-nvlink"); p != std::string_view::npos) {
    std::string_view s = m.substr(p);
    if (icontains(s, "error") || icontains(s, "fatal") || icontains(s, "fail")) {
      return make(EventKind::kNvlink, find_bus_id(s), std::string(trim_view(s)));
    }
  }
  return std::nullopt;
}

std::optional<KernelEvent> classify_line(std::string_view line, int year_hint,
                                         std::optional<std::int64_t> boot_time_ns) {
  auto parsed = parse_log_line(line, year_hint);
  if (!parsed) return std::nullopt;
  return classify_parsed(*parsed, line, boot_time_ns);
}

std::optional<KernelEvent> classify_parsed(const LogLine& parsed, std::string_view line,
                                           std::optional<std::int64_t> boot_time_ns) {
  auto e = classify(parsed.message);
  if (!e) return std::nullopt;
  e->monotonic_us = parsed.monotonic_us;
  e->time_ns = parsed.time_ns;
  if (!e->time_ns && e->monotonic_us && boot_time_ns) {
    e->time_ns = wall_from_monotonic(*boot_time_ns, *e->monotonic_us);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  e->raw = std::string(line);
  return e;
}

}  // namespace cardiac::kmsg
