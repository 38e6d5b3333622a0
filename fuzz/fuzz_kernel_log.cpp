// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the doctor's whole-log reader (doctor::parse_kernel_log): any mix of dmesg,
// syslog, ISO, /dev/kmsg, `journalctl -o json` lines, reboot markers and multi-line prints. The
// input size picks the options, so both "no year / no boot time" and "2024 / a boot time" run.
// The same bytes also go through every decompressor (rotated logs come as .gz, .xz, .zst), and
// what they decode is parsed in turn.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "doctor/decompress.h"
#include "doctor/kernel_log.h"

namespace {

constexpr std::size_t kMaxDecoded = 1 << 20;

void check_log(const cardiac::doctor::KernelLog& log) {
  using namespace cardiac;
  // kernel_log.h: the counters, boots and context lines refer to what was parsed.
  CARDIAC_FUZZ_CHECK(log.recognised_lines <= log.lines);
  CARDIAC_FUZZ_CHECK(log.log_lines + log.long_lines <= log.lines);
  CARDIAC_FUZZ_CHECK((log.long_lines == 0) == (log.first_long_line == 0));
  for (const doctor::Boot& b : log.boots) CARDIAC_FUZZ_CHECK(b.first_event <= log.events.size());
  for (const auto& [index, lines] : log.context) {
    CARDIAC_FUZZ_CHECK(index < log.events.size());
    if (!lines.empty()) CARDIAC_FUZZ_CHECK(doctor::context_of(log.context, index) != nullptr);
    (void)doctor::trace_through_nvidia(lines);
  }
  for (const kmsg::KernelEvent& e : log.events)
    CARDIAC_FUZZ_CHECK(kmsg::parse_event_kind(kmsg::event_kind_name(e.kind)) == e.kind);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cardiac;
  doctor::KernelLogOptions options;
  if (size % 2 == 1) {
    options.year_hint = 2024;
    options.boot_time_ns = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z
  }
  const std::string_view text = fuzz::as_text(data, size);
  check_log(doctor::parse_kernel_log(text, options));
  // decompress.h: never fails, never keeps more than asked; the magic bytes pick the decoder,
  // and without them the input size does.
  doctor::Compression c = doctor::detect_compression(text);
  if (c == doctor::Compression::kNone) {
    constexpr doctor::Compression kAll[] = {doctor::Compression::kGzip, doctor::Compression::kXz,
                                            doctor::Compression::kZstd};
    c = kAll[size % 3];
  }
  const doctor::Decompressed d = doctor::decompress(text, c, kMaxDecoded);
  CARDIAC_FUZZ_CHECK(d.text.size() <= kMaxDecoded);
  CARDIAC_FUZZ_CHECK(!d.cut || d.text.size() == kMaxDecoded);
  check_log(doctor::parse_kernel_log(d.text, options));
  return 0;
}
