// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the doctor's whole-log reader (doctor::parse_kernel_log): any mix of dmesg,
// syslog, ISO, /dev/kmsg, `journalctl -o json` lines, reboot markers and multi-line prints. The
// input size picks the options, so both "no year / no boot time" and "2024 / a boot time" run.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "doctor/kernel_log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cardiac;
  doctor::KernelLogOptions options;
  if (size % 2 == 1) {
    options.year_hint = 2024;
    options.boot_time_ns = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z
  }
  const doctor::KernelLog log = doctor::parse_kernel_log(fuzz::as_text(data, size), options);
  // kernel_log.h: the counters, boots and context lines refer to what was parsed.
  CARDIAC_FUZZ_CHECK(log.recognised_lines <= log.lines);
  for (const doctor::Boot& b : log.boots) CARDIAC_FUZZ_CHECK(b.first_event <= log.events.size());
  for (const auto& [index, lines] : log.context) {
    CARDIAC_FUZZ_CHECK(index < log.events.size());
    if (!lines.empty()) CARDIAC_FUZZ_CHECK(doctor::context_of(log.context, index) != nullptr);
    (void)doctor::trace_through_nvidia(lines);
  }
  for (const kmsg::KernelEvent& e : log.events) CARDIAC_FUZZ_CHECK(!e.kind.empty());
  return 0;
}
