// SPDX-License-Identifier: Apache-2.0
// Parses a whole kernel log into events, their context lines and the boots it spans. One pass,
// no std::regex, no allocation for lines that are not ours: a big syslog must stay cheap.
// Where the text comes from (files, compression, /dev/kmsg, journalctl): kernel_log_source.cpp.
#include "doctor/kernel_log.h"

#include <algorithm>

#include "core/format.h"
#include "core/time.h"
#include "core/units.h"
#include "kmsg/context.h"
#include "kmsg/record.h"

namespace cardiac::doctor {
namespace {

constexpr std::int64_t kBackwardsUs = 1'000'000;  // a clock that goes back further rebooted
constexpr int kOpenerMaxRecords = 4;              // lines a split driver print may span
constexpr std::size_t kMaxTraceLines = 96;
constexpr std::size_t kMaxAerLines = 16;

bool digit(char c) {
  return c >= '0' && c <= '9';
}

// A syslog ("Mar  5 22:23:56 ") or ISO ("2024-03-05T22:23:56") stamp: a log line, even when
// it comes from user space and so is no kernel message.
bool has_log_stamp(std::string_view s) {
  if (s.size() >= 16 && s[3] == ' ' && s[6] == ' ' && s[9] == ':' && s[12] == ':' && s[15] == ' ' &&
      digit(s[5]) && digit(s[7]) && digit(s[8])) {
    return true;
  }
  return s.size() >= 19 && digit(s[0]) && digit(s[3]) && s[4] == '-' && s[7] == '-' &&
         s[10] == 'T' && s[13] == ':' && s[16] == ':';
}

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string join(const std::vector<std::string_view>& parts, std::string_view sep,
                 std::size_t from = 0) {
  std::string out;
  for (std::size_t i = from; i < parts.size(); ++i) {
    if (i > from) out.append(sep);
    out.append(parts[i]);
  }
  return out;
}

std::string_view after_nvrm(std::string_view s) {
  auto p = s.find("NVRM: ");
  return trim_view(p == std::string_view::npos ? s : s.substr(p + 6));
}

// Splits `text` on `sep` into views (empty parts dropped).
void split_into(std::string_view text, std::string_view sep, std::vector<std::string_view>& out) {
  while (!text.empty()) {
    auto p = text.find(sep);
    std::string_view part = text.substr(0, p);
    if (!trim_view(part).empty()) out.push_back(part);
    if (p == std::string_view::npos) break;
    text.remove_prefix(p + sep.size());
  }
}

class Parser {
 public:
  explicit Parser(const KernelLogOptions& o) : o_(o) {}

  void feed(std::string_view line) {
    ++line_no_;
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
    if (trim_view(line).empty()) return;
    ++log_.lines;
    if (line.size() > kmsg::kMaxMessageBytes) {
      // No kernel prints a line this long: binary data or a broken export. Counted and named
      // rather than dropped without a word.
      flush();
      if (log_.long_lines++ == 0) log_.first_long_line = line_no_;
      return;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      // A /dev/kmsg record's " KEY=value" dictionary lines carry nothing for us.
      if (have_ && origin_ == Origin::kKmsg) {
        ++log_.log_lines;
        return;
      }
      // dmesg and journalctl indent the later lines of a multi-line print. They look like a
      // log line only when their first line did: any text has lines that start with a blank.
      if (have_ && origin_ == Origin::kText) {
        auto p = kmsg::parse_log_line(line, o_.year_hint);
        if (p && p->format == kmsg::LineFormat::kPlain) {
          if (head_is_log_) ++log_.log_lines;
          parts_.push_back(trim_view(line));
          raws_.push_back(line);
          return;
        }
      }
    }
    flush();
    if (line.substr(0, 3) == "-- ") {  // journalctl's own markers between boots
      ++log_.log_lines;
      if (line.find("Reboot") != std::string_view::npos || line.substr(0, 8) == "-- Boot ") {
        new_boot(std::nullopt);
      }
      return;
    }
    if (line.front() == '{') {
      start_json(line);
      return;
    }
    auto p = kmsg::parse_log_line(line, o_.year_hint);
    if (!p) {
      if (has_log_stamp(line)) ++log_.log_lines;  // another program's syslog line
      return;
    }
    // A line with no prefix at all (dmesg -t) counts only when it is a kernel message we know.
    head_is_log_ = p->format != kmsg::LineFormat::kPlain || kmsg::classify(p->message);
    if (head_is_log_) ++log_.log_lines;
    if (p->format == kmsg::LineFormat::kKmsg && p->facility != 0) return;  // user space
    parts_.clear();
    raws_.assign(1, line);
    mono_ = p->monotonic_us;
    time_ = p->time_ns;
    have_ = true;
    origin_ = Origin::kText;
    if (p->format == kmsg::LineFormat::kKmsg) {
      origin_ = Origin::kKmsg;
      if (p->message.find('\\') != std::string_view::npos) {
        owned_ = kmsg::unescape_kmsg(p->message);
        split_into(owned_, "\n", parts_);
      }
    } else if ((p->format == kmsg::LineFormat::kSyslog || p->format == kmsg::LineFormat::kIso) &&
               p->message.find("#012") != std::string_view::npos) {
      split_into(p->message, "#012", parts_);  // rsyslog writes a print's newlines as #012
    }
    if (parts_.empty()) parts_.push_back(p->message);
  }

  KernelLog finish() {
    flush();
    std::size_t b = 0;
    for (std::size_t i = 0; i < log_.events.size(); ++i) {
      while (b < log_.boots.size() && log_.boots[b].first_event <= i) ++b;
      auto& e = log_.events[i];
      if (e.time_ns || !e.monotonic_us) continue;
      std::optional<TimeNs> base = seg_time_[b];
      if (!base && b == log_.boots.size()) base = o_.boot_time_ns;
      if (base) e.time_ns = kmsg::wall_from_monotonic(*base, *e.monotonic_us);
    }
    for (std::size_t k = 0; k < log_.boots.size(); ++k) {
      if (!log_.boots[k].time) log_.boots[k].time = seg_time_[k + 1];
    }
    return std::move(log_);
  }

 private:
  enum class Origin { kText, kKmsg, kJson };
  enum class Ctx { kNone, kAer, kTrace };

  void start_json(std::string_view line) {
    auto j = kmsg::parse_journal_json(line);
    if (j) ++log_.log_lines;
    if (!j || !j->kernel) return;
    if (!j->boot_id.empty()) {
      if (!boot_id_.empty() && j->boot_id != boot_id_) new_boot(std::nullopt);
      boot_id_ = j->boot_id;
    }
    owned_ = std::move(j->message);
    parts_.clear();
    split_into(owned_, "\n", parts_);
    if (parts_.empty()) return;
    // The journal line itself is mostly metadata; the kernel's text is the evidence.
    raws_.assign(1, trim_view(owned_));
    mono_ = j->monotonic_us;
    time_ = j->time_ns;
    origin_ = Origin::kJson;
    have_ = true;
  }

  void new_boot(std::optional<TimeNs> time) {
    if (!log_.boots.empty() && log_.boots.back().first_event == log_.events.size()) {
      if (time && !seg_time_.back()) seg_time_.back() = time;  // same boot, seen twice
      return;
    }
    log_.boots.push_back(Boot{log_.events.size(), time});
    seg_time_.push_back(time);
    last_mono_.reset();
  }

  void flush() {
    if (!have_) return;
    have_ = false;
    std::string_view head = parts_.front();
    if (head.substr(0, 14) == "Linux version ") {
      std::optional<TimeNs> t = time_;
      if (t && mono_) t = kmsg::boot_from_stamps(*t, *mono_);
      new_boot(t);
    } else if (mono_ && last_mono_ && *mono_ + kBackwardsUs < *last_mono_) {
      new_boot(std::nullopt);
    }
    if (mono_) last_mono_ = mono_;
    if (time_ && mono_ && !seg_time_.back()) {
      seg_time_.back() = kmsg::boot_from_stamps(*time_, *mono_);
    }

    auto e = kmsg::classify(head);
    bool joined = false;
    if (!e && parts_.size() > 1) {
      e = kmsg::classify(kmsg::join_multiline(join(parts_, "\n")));
      joined = e.has_value();
    }
    if (e) {
      add_event(std::move(*e), joined);
      return;
    }
    ++records_since_event_;
    take_as_context(head);
  }

  void add_event(kmsg::KernelEvent e, bool joined) {
    std::string raw = join(raws_, "\n");
    if (e.kind == kmsg::EventKind::kFallenOffBus && e.pci_bus_id.empty() && !opener_bus_.empty()) {
      // The driver's probe message came as separate lines: the first one named the GPU.
      e.pci_bus_id = opener_bus_;
      e.message = opener_text_ + " " + e.message;
      std::string lines;
      for (const auto& r : opener_raw_) lines += r + "\n";
      raw = lines + raw;
      log_.recognised_lines += opener_raw_.size();
    }
    opener_bus_.clear();
    e.time_ns = time_;
    e.monotonic_us = mono_;
    e.raw = std::move(raw);
    if (e.kind == kmsg::EventKind::kAer && e.reporter.empty() && last_aer_ &&
        records_since_event_ <= 2 && *last_aer_ + 1 == log_.events.size()) {
      // "AER: … error received: <dev>" then "<dev>: PCIe Bus Error: …": the first line named
      // the port that reported it.
      // When the source could not be found the port prints it, hence either bus id.
      const auto& prev = log_.events[*last_aer_];
      if (prev.pci_bus_id == e.pci_bus_id || prev.reporter == e.pci_bus_id) {
        e.reporter = prev.reporter;
      }
    }
    const std::size_t index = log_.events.size();
    log_.recognised_lines += raws_.size();
    records_since_event_ = 0;
    ctx_ = Ctx::kNone;
    ctx_slot_.reset();
    ctx_event_ = index;
    if (e.kind == kmsg::EventKind::kAer) {
      ctx_ = Ctx::kAer;
      aer_device_ = e.pci_bus_id;
      aer_reporter_ = e.reporter;
      last_aer_ = index;
    } else if (e.kind == kmsg::EventKind::kHungTask) {
      ctx_ = Ctx::kTrace;
    }
    log_.events.push_back(std::move(e));
    if (!joined && parts_.size() > 1) {
      const auto& lines = origin_ == Origin::kText ? raws_ : parts_;
      for (std::size_t i = 1; i < lines.size(); ++i) append_context(lines[i]);
    }
  }

  void append_context(std::string_view line) {
    if (!ctx_slot_) {
      log_.context.emplace_back(ctx_event_, std::vector<std::string>{});
      ctx_slot_ = log_.context.size() - 1;
    }
    log_.context[*ctx_slot_].second.emplace_back(line);
  }

  void take_raws_as_context() {
    for (auto r : raws_) append_context(r);
    log_.recognised_lines += raws_.size();
  }

  void take_as_context(std::string_view head) {
    if (records_since_event_ <= 3 && !log_.events.empty() &&
        log_.events.back().kind == kmsg::EventKind::kGpuMap && log_.events.back().serial.empty()) {
      if (auto serial = kmsg::parse_board_serial(head)) {
        log_.events.back().serial = *serial;
        log_.recognised_lines += raws_.size();
        return;
      }
    }
    if (head.find("NVRM: ") != std::string_view::npos) {
      if (std::string bus = kmsg::multiline_nvrm_gpu(head); !bus.empty()) {
        opener_bus_ = std::move(bus);
        opener_raw_.assign(raws_.begin(), raws_.end());
        opener_text_ = std::string(after_nvrm(head));
        opener_age_ = 0;
        return;
      }
      if (!opener_bus_.empty() && ++opener_age_ <= kOpenerMaxRecords) {
        for (auto r : raws_) opener_raw_.emplace_back(r);
        opener_text_ += " ";
        opener_text_ += after_nvrm(head);
        return;
      }
      opener_bus_.clear();
    } else if (!opener_bus_.empty() && ++opener_age_ > kOpenerMaxRecords) {
      opener_bus_.clear();  // its end never came: do not pin a later line on that GPU
    }
    std::size_t have = ctx_slot_ ? log_.context[*ctx_slot_].second.size() : 0;
    if (ctx_ == Ctx::kTrace && have < kMaxTraceLines && kmsg::is_trace_line(head)) {
      take_raws_as_context();
      return;
    }
    if (ctx_ == Ctx::kAer && have < kMaxAerLines) {
      std::string dev = kmsg::line_device(head);
      if (!dev.empty() && (dev == aer_device_ || dev == aer_reporter_ ||
                           head.find("AER") != std::string_view::npos)) {
        take_raws_as_context();
        return;
      }
    }
    ctx_ = Ctx::kNone;  // an unrelated line ends the event's detail
  }

  const KernelLogOptions& o_;
  KernelLog log_;
  std::size_t line_no_ = 0;  // physical lines fed, blank ones too

  // The record being assembled: its message parts (first = head) and its physical lines.
  bool have_ = false;
  bool head_is_log_ = false;  // its first line counted as a log line
  Origin origin_ = Origin::kText;
  std::optional<std::int64_t> mono_;
  std::optional<std::int64_t> time_;
  std::vector<std::string_view> parts_;
  std::vector<std::string_view> raws_;
  std::string owned_;  // decoded text of a /dev/kmsg or journal record

  // Boots: the wall time each boot segment started (segment 0 precedes the first boot seen).
  std::optional<std::int64_t> last_mono_;
  std::string boot_id_;
  std::vector<std::optional<TimeNs>> seg_time_{std::nullopt};

  // Where lines without an event of their own go.
  Ctx ctx_ = Ctx::kNone;
  std::size_t ctx_event_ = 0;
  std::optional<std::size_t> ctx_slot_;
  std::string aer_device_;
  std::string aer_reporter_;
  std::optional<std::size_t> last_aer_;
  std::size_t records_since_event_ = 0;

  // "NVRM: The NVIDIA GPU <bdf>" printed as separate records: held until the line that says
  // what happened to it.
  std::string opener_bus_;
  std::vector<std::string> opener_raw_;  // copies: a journal record's text is reused
  std::string opener_text_;
  int opener_age_ = 0;
};

}  // namespace

KernelLog parse_kernel_log(std::string_view text, const KernelLogOptions& o) {
  Parser p(o);
  while (!text.empty()) {
    auto nl = text.find('\n');
    p.feed(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return p.finish();
}

bool trace_through_nvidia(const std::vector<std::string>& lines) {
  return std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    auto p = kmsg::parse_log_line(l);  // context lines keep their time prefix
    return p && kmsg::is_nvidia_frame(p->message);
  });
}

const std::vector<std::string>* context_of(
    const std::vector<std::pair<std::size_t, std::vector<std::string>>>& context,
    std::size_t index) {
  auto it =
      std::find_if(context.begin(), context.end(), [&](const auto& c) { return c.first == index; });
  return it == context.end() ? nullptr : &it->second;
}

}  // namespace cardiac::doctor
