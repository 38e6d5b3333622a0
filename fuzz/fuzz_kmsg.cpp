// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the kernel-log parsers: /dev/kmsg records, log-line prefixes, `journalctl -o
// json` lines, the GPU event classifier and the context-line helpers, on the whole input and on
// each of its lines.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "check.h"
#include "kmsg/context.h"
#include "kmsg/event.h"
#include "kmsg/record.h"

namespace {

using namespace cardiac;

// 2024-01-01T00:00:00Z: a plausible boot time, so that classify_parsed() turns monotonic
// stamps into wall time the way the readers do.
constexpr std::int64_t kBootTimeNs = 1'704'067'200'000'000'000;

void check_event(const kmsg::KernelEvent& e) {
  CARDIAC_FUZZ_CHECK(kmsg::parse_event_kind(kmsg::event_kind_name(e.kind)) == e.kind);
  // event.h: pci_bus_id is normalised ("0000:3b:00.0") or empty.
  if (!e.pci_bus_id.empty()) {
    CARDIAC_FUZZ_CHECK(kmsg::normalize_kernel_bus_id(e.pci_bus_id) == e.pci_bus_id);
  }
}

void fuzz_record(std::string_view text) {
  if (auto r = kmsg::parse_kmsg_record(text)) {
    // record.h: `message` views the input.
    CARDIAC_FUZZ_CHECK(fuzz::views_into(r->message, text));
    CARDIAC_FUZZ_CHECK(r->priority >= 0 && r->priority <= 7);
    if (auto e = kmsg::classify(r->message)) check_event(*e);
  }
}

// The helpers that attach detail lines to an event (context.h) and the escapes of /dev/kmsg.
void fuzz_context(std::string_view text) {
  (void)kmsg::parse_aer_detail(text);
  (void)kmsg::line_device(text);
  (void)kmsg::is_trace_line(text);
  (void)kmsg::is_nvidia_frame(text);
  (void)kmsg::parse_board_serial(text);
  (void)kmsg::multiline_nvrm_gpu(text);
  const std::string joined = kmsg::join_multiline(text);
  // context.h: text without '\n' comes back as is.
  if (text.find('\n') == std::string_view::npos) CARDIAC_FUZZ_CHECK(joined == text);
  // record.h: each "\xNN" escape becomes one byte; anything else is kept.
  CARDIAC_FUZZ_CHECK(kmsg::unescape_kmsg(text).size() <= text.size());
  if (auto j = kmsg::parse_journal_json(text)) {
    if (auto e = kmsg::classify(j->message)) check_event(*e);
  }
}

void fuzz_line(std::string_view line, int year_hint) {
  if (auto parsed = kmsg::parse_log_line(line, year_hint)) {
    // record.h: `message` views the input; lines with NUL bytes are rejected.
    CARDIAC_FUZZ_CHECK(fuzz::views_into(parsed->message, line));
    CARDIAC_FUZZ_CHECK(line.find('\0') == std::string_view::npos);
    if (auto e = kmsg::classify_parsed(*parsed, line, kBootTimeNs)) check_event(*e);
  }
  if (auto e = kmsg::classify_line(line, year_hint)) check_event(*e);
  if (auto e = kmsg::classify(line)) check_event(*e);
  const std::string id = kmsg::normalize_kernel_bus_id(line);
  if (!id.empty()) CARDIAC_FUZZ_CHECK(kmsg::normalize_kernel_bus_id(id) == id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  // The whole input: a /dev/kmsg record may hold continuation lines after its first '\n'.
  fuzz_record(text);
  fuzz_line(text, 0);
  fuzz_context(text);
  // Line by line, as the file and journal readers see a log; syslog prefixes without a year
  // take it from the hint, and 0 means "no wall time".
  const int year_hint = (size % 2 == 0) ? 2024 : 0;
  fuzz::for_each_line(text, [&](std::string_view line) {
    fuzz_record(line);
    fuzz_line(line, year_hint);
    fuzz_context(line);
  });
  return 0;
}
