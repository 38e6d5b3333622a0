// SPDX-License-Identifier: Apache-2.0
// Where a kernel log's text comes from: a file (plain or compressed, refused when binary),
// /dev/kmsg, or journalctl -k, each read bounded; kernel_log.h parses what they read. Real I/O
// and clock reads, hence in cardiac_doctor_live.
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"
#include "doctor/kernel_log.h"

namespace cardiac::doctor {

// Whether `bytes` is binary data rather than text: NULs scattered through it (more than 8
// runs of them), nothing but NULs, or more than 1 in 20 of its other bytes a control
// character no text carries. A syslog with a short run of NULs (a
// crash cut the file) stays text; an executable, a core or a database does not.
bool looks_binary(std::string_view bytes);

// Reads and parses a log file. A gzip, xz or zstd file (known by its magic bytes, whatever its
// name) is decompressed first; what a truncated or corrupt one held up to the damage is kept
// and `read_notes` says so. Binary content (looks_binary, after decompression) is not parsed:
// `binary` is set and no event comes from it. Logs over 256 MiB (decompressed) are read from their
// last 256 MiB (the newest lines matter most). Errors (missing, unreadable, a directory) name the
// path.
Result<KernelLog> read_kernel_log_file(const std::string& path, const KernelLogOptions& o = {});

// Where the live kernel log comes from; tests point these at stand-ins.
struct LiveKernelLogSources {
  std::string kmsg_path = "/dev/kmsg";
  std::string journalctl;  // the program; empty: "journalctl" looked up in PATH
  DurationNs journal_timeout = 15 * kNsPerSec;
};

// The current boot's kernel log: the whole /dev/kmsg buffer from its start without blocking,
// or, when /dev/kmsg cannot be opened (dmesg_restrict, containers), the output of
// `journalctl -k -b -o short-iso --no-pager`, cut at `journal_timeout` (what arrived by then is
// kept and the source says so). Fails with both reasons when neither can be read. When
// `o.boot_time_ns` is unset it is taken from `clock` (wall minus monotonic). The journal gets
// `journal_timeout` of real time (platform::io_deadline), whatever `clock` is.
Result<KernelLog> read_live_kernel_log(const Clock& clock, const KernelLogOptions& o = {},
                                       const LiveKernelLogSources& sources = {});

}  // namespace cardiac::doctor
