// SPDX-License-Identifier: Apache-2.0
// Scanners for the lines that belong to an event without being one (see context.h).
#include "kmsg/context.h"

#include <array>

#include "kmsg/event.h"
#include "kmsg/scan.h"

namespace cardiac::kmsg {
namespace {

using namespace detail;

std::string_view trim_both(std::string_view s) {
  skip_spaces(s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool is_symbol_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' ||
         c == '$';
}

// Consumes "0x<hex>"; false when absent.
bool eat_hex_number(std::string_view& s) {
  if (!eat(s, "0x")) return false;
  std::size_t n = 0;
  while (n < s.size() && is_hex(s[n])) ++n;
  if (n == 0) return false;
  s.remove_prefix(n);
  return true;
}

// The symbol of a stack frame ("? nv_wait+0x1c/0x40 [nvidia]" → "nv_wait"), or empty when the
// message is not a frame.
std::string_view frame_symbol(std::string_view s) {
  skip_spaces(s);
  eat(s, "? ");
  if (eat(s, "[<")) {  // pre-4.x kernels print the address first: "[<ffffffff81234>] sym+…"
    auto close = s.find(">]");
    if (close == std::string_view::npos || close > 20) return {};
    s.remove_prefix(close + 2);
    skip_spaces(s);
    eat(s, "? ");
  }
  std::size_t n = 0;
  while (n < s.size() && is_symbol_char(s[n])) ++n;
  if (n == 0) return {};
  std::string_view sym = s.substr(0, n);
  std::string_view t = s.substr(n);
  if (!eat(t, "+") || !eat_hex_number(t) || !eat(t, "/") || !eat_hex_number(t)) return {};
  t = trim_both(t);
  if (!t.empty() && (t.front() != '[' || t.back() != ']')) return {};
  return sym;
}

}  // namespace

std::string line_device(std::string_view message) {
  auto sp = message.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp > 32) return {};
  std::string_view rest = message.substr(sp + 1);
  auto colon = rest.find(": ");
  if (colon == std::string_view::npos) {
    if (!rest.empty() && rest.back() == ':') colon = rest.size() - 1;
  }
  if (colon == std::string_view::npos || colon < 7 || colon > 16) return {};
  return normalize_kernel_bus_id(rest.substr(0, colon));
}

std::optional<AerDetail> parse_aer_detail(std::string_view message) {
  std::string device = line_device(message);
  auto colon = message.find(": ");
  if (device.empty() || colon == std::string_view::npos) return std::nullopt;
  std::string_view s = message.substr(colon + 2);
  skip_spaces(s);
  if (!eat(s, "[")) return std::nullopt;
  skip_spaces(s);
  auto bit = eat_uint(s, 2);
  if (!bit || !eat(s, "]")) return std::nullopt;
  std::string_view name = trim_both(s);
  AerDetail d;
  d.device = std::move(device);
  d.bit = static_cast<int>(*bit);
  constexpr std::string_view kFirst = "(First)";
  if (name.size() >= kFirst.size() && name.substr(name.size() - kFirst.size()) == kFirst) {
    d.first = true;
    name = trim_both(name.substr(0, name.size() - kFirst.size()));
  }
  if (name.empty()) return std::nullopt;
  d.name = std::string(name);
  return d;
}

bool is_trace_line(std::string_view message) {
  static constexpr std::array<std::string_view, 24> kStarts = {
      "Tainted:",
      "Not tainted",
      "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\"",
      "task:",
      "Call Trace:",
      "<TASK>",
      "</TASK>",
      "<IRQ>",
      "</IRQ>",
      "RIP:",
      "RSP:",
      "RAX:",
      "RDX:",
      "RBP:",
      "R10:",
      "R13:",
      "Code:",
      "Hardware name:",
      "Workqueue:",
      "CPU:",
      "INFO: lockdep",
      "Showing all locks",
      "FS:",
      "CR2:"};
  std::string_view s = message;
  skip_spaces(s);
  if (s.empty()) return false;
  for (auto p : kStarts) {
    if (s.substr(0, p.size()) == p) return true;
  }
  return !frame_symbol(s).empty();
}

bool is_nvidia_frame(std::string_view message) {
  std::string_view sym = frame_symbol(message);
  if (sym.empty()) return false;
  if (message.find("[nvidia") != std::string_view::npos) return true;
  static constexpr std::array<std::string_view, 6> kPrefixes = {"nv_", "nvidia_", "os_",
                                                                "rm_", "_nv",     "uvm_"};
  for (auto p : kPrefixes) {
    if (sym.substr(0, p.size()) == p) return true;
  }
  return false;
}

std::optional<std::string> parse_board_serial(std::string_view message) {
  constexpr std::string_view kTag = "NVRM: GPU Board Serial Number:";
  auto at = message.find(kTag);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view v = trim_both(message.substr(at + kTag.size()));
  if (v.empty() || v.size() > 64) return std::nullopt;
  for (char c : v) {
    if (!is_symbol_char(c) && c != '-') return std::nullopt;
  }
  return std::string(v);
}

std::string multiline_nvrm_gpu(std::string_view message) {
  constexpr std::string_view kTag = "NVRM: The NVIDIA GPU ";
  auto at = message.find(kTag);
  if (at == std::string_view::npos) return {};
  std::string_view s = message.substr(at + kTag.size());
  return normalize_kernel_bus_id(s.substr(0, s.find_first_of(" \n")));
}

std::string join_multiline(std::string_view text) {
  if (text.find('\n') == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size());
  bool first = true;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view part = trim_both(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (part.empty()) continue;
    if (!first) {
      eat(part, "NVRM: ");
      out.push_back(' ');
    }
    out.append(part);
    first = false;
  }
  return out;
}

}  // namespace cardiac::kmsg
