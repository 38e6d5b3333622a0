// SPDX-License-Identifier: Apache-2.0
// GpuReading <-> the worker's one-line form.
#include "nvml/gpu_wire.h"

#include <charconv>
#include <cstdint>
#include <type_traits>

#include "core/format.h"
#include "nvml/gpu_json.h"

namespace cardiac::nvml {
namespace {

constexpr char kAbsent = '-';
constexpr std::string_view kEmpty = "%";
constexpr char kHex[] = "0123456789ABCDEF";

void put_string(std::string& out, std::string_view s) {
  if (s.empty()) {
    out += kEmpty;
    return;
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c <= ' ' || c == '%' || c >= 0x7f || (i == 0 && c == kAbsent)) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
}

template <class T>
void put_number(std::string& out, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    out += v ? '1' : '0';
  } else {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, r.ptr);
  }
}

template <class T>
void put(std::string& out, const std::optional<T>& v) {
  out += ' ';
  if (v) {
    put_number(out, *v);
  } else {
    out += kAbsent;
  }
}

template <class T>
void put(std::string& out, const T& v) {
  out += ' ';
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    put_string(out, v);
  } else {
    put_number(out, v);
  }
}

// Reads the tokens of one line in order; the first failure sticks and names its token.
class Tokens {
 public:
  explicit Tokens(std::string_view line) : rest_(line) {}

  [[nodiscard]] bool ok() const { return error_.empty(); }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] bool at_end() const { return done_; }

  template <class T>
  void number(const char* what, T& out) {
    std::string_view t = next(what);
    if (!ok()) return;
    if constexpr (std::is_same_v<T, bool>) {
      if (t == "0" || t == "1") {
        out = t == "1";
        return;
      }
    } else {
      auto r = std::from_chars(t.data(), t.data() + t.size(), out);
      if (r.ec == std::errc() && r.ptr == t.data() + t.size()) return;
    }
    fail_at(what, t);
  }

  template <class T>
  void number(const char* what, std::optional<T>& out) {
    if (peek_absent()) {
      out.reset();
      next(what);
      return;
    }
    T v{};
    number(what, v);
    if (ok()) out = v;
  }

  void string(const char* what, std::string& out) {
    std::string_view t = next(what);
    if (!ok()) return;
    out.clear();
    if (t == kEmpty) return;
    out.reserve(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] != '%') {
        out += t[i];
        continue;
      }
      int hi = i + 2 < t.size() ? hex(t[i + 1]) : -1;
      int lo = i + 2 < t.size() ? hex(t[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        fail_at(what, t);
        return;
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }

  // A list length, bounded so that a corrupt line cannot ask for a huge allocation.
  std::size_t count(const char* what) {
    std::size_t n = 0;
    number(what, n);
    if (ok() && n > rest_.size()) fail_at(what, "a length longer than the line");
    return ok() ? n : 0;
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }

  [[nodiscard]] bool peek_absent() const {
    return ok() && !done_ && rest_.size() >= 1 && rest_[0] == kAbsent &&
           (rest_.size() == 1 || rest_[1] == ' ');
  }

  std::string_view next(const char* what) {
    if (!ok()) return {};
    if (done_) {
      error_ = fmt::format("GPU reading line ends before {}", what);
      return {};
    }
    auto space = rest_.find(' ');
    std::string_view t = rest_.substr(0, space);
    if (space == std::string_view::npos) {
      done_ = true;
      rest_ = {};
    } else {
      rest_.remove_prefix(space + 1);
    }
    return t;
  }

  void fail_at(const char* what, std::string_view token) {
    if (ok()) error_ = fmt::format("bad {} in a GPU reading line: \"{}\"", what, token);
  }

  std::string_view rest_;
  bool done_ = false;
  std::string error_;
};

// FNV-1a over the names, each followed by a blank.
constexpr std::uint64_t fnv1a(std::uint64_t h, std::string_view text) {
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  h ^= static_cast<unsigned char>(' ');
  return h * 1099511628211ULL;
}

// The header, then the fields, then the lists; "lists-1" stands for the processes', NVLinks'
// and call errors' forms, to be bumped when one of them changes.
constexpr std::uint64_t kLayout = [] {
  std::uint64_t h = fnv1a(14695981039346656037ULL, "header-1");
#define CARDIAC_GPU_FIELD(member, ...) h = fnv1a(h, #member);
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  return fnv1a(h, "lists-1");
}();

}  // namespace

std::string_view wire_layout_id() {
  static const std::string kId = fmt::format("{:016x}", kLayout);
  return kId;
}

void append_wire(const GpuReading& g, std::string& out) {
  put_number(out, g.index);
  put(out, device_health_name(g.health));
  put(out, g.health_detail);
  put(out, g.sampled_at);
  put(out, g.sample_duration_us);
  put(out, g.name);
  put(out, g.uuid);
  put(out, g.serial);
  put(out, g.pci_bus_id);
  put(out, g.vbios_version);
#define CARDIAC_GPU_FIELD(member, ...) put(out, g.member);
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  put(out, g.processes_supported);
  put(out, g.processes.size());
  for (const auto& p : g.processes) {
    put(out, p.pid);
    put(out, p.type);
    put(out, p.used_memory_bytes);
    put(out, p.name);
  }
  put(out, g.nvlinks.size());
  for (const auto& l : g.nvlinks) {
    put(out, l.link);
    put(out, l.active);
    put(out, l.version);
    put(out, l.replay_errors);
    put(out, l.recovery_errors);
    put(out, l.crc_flit_errors);
    put(out, l.crc_data_errors);
    put(out, l.remote_pci_bus_id);
  }
  put(out, g.call_errors.size());
  for (const auto& [call, code] : g.call_errors) {
    put(out, call);
    put(out, code);
  }
}

Result<GpuReading> gpu_reading_from_wire(std::string_view line) {
  GpuReading g;
  Tokens t(line);
  t.number("index", g.index);
  std::string health;
  t.string("health", health);
  if (t.ok()) {
    auto h = device_health_from_name(health);
    if (!h) return fail(h.error());
    g.health = *h;
  }
  t.string("health_detail", g.health_detail);
  t.number("sampled_at_ns", g.sampled_at);
  t.number("sample_duration_us", g.sample_duration_us);
  t.string("name", g.name);
  t.string("uuid", g.uuid);
  t.string("serial", g.serial);
  t.string("pci_bus_id", g.pci_bus_id);
  t.string("vbios_version", g.vbios_version);
#define CARDIAC_GPU_FIELD(member, ...) t.number(#member, g.member);
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  t.number("processes_supported", g.processes_supported);
  g.processes.resize(t.count("process count"));
  for (auto& p : g.processes) {
    t.number("process pid", p.pid);
    t.string("process type", p.type);
    t.number("process used_memory_bytes", p.used_memory_bytes);
    t.string("process name", p.name);
  }
  g.nvlinks.resize(t.count("NVLink count"));
  for (auto& l : g.nvlinks) {
    t.number("NVLink link", l.link);
    t.number("NVLink active", l.active);
    t.number("NVLink version", l.version);
    t.number("NVLink replay_errors", l.replay_errors);
    t.number("NVLink recovery_errors", l.recovery_errors);
    t.number("NVLink crc_flit_errors", l.crc_flit_errors);
    t.number("NVLink crc_data_errors", l.crc_data_errors);
    t.string("NVLink remote_pci_bus_id", l.remote_pci_bus_id);
  }
  const std::size_t errors = t.count("call error count");
  for (std::size_t i = 0; i < errors && t.ok(); ++i) {
    std::string call;
    std::string code;
    t.string("call error function", call);
    t.string("call error code", code);
    g.call_errors.emplace(std::move(call), std::move(code));
  }
  if (t.ok() && !t.at_end()) return fail(Error::parse("GPU reading line has tokens left over"));
  if (!t.ok()) return fail(Error::parse(t.error()));
  return g;
}

}  // namespace cardiac::nvml
