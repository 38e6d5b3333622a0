// SPDX-License-Identifier: Apache-2.0
// Kernel lines that are no event of their own but belong to one: AER detail lines, hung-task
// call traces, the board serial after a GPU's UUID line and multi-line driver prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cardiac::kmsg {

// "pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)".
struct AerDetail {
  std::string device;  // the port or device that printed it, normalised ("0000:00:02.0")
  int bit = -1;        // the bit in the AER status register
  std::string name;    // "Surprise Down Error"
  bool first = false;  // "(First)": the error the hardware logged first
};

// Returns nullopt for any other line. Never throws except std::bad_alloc.
std::optional<AerDetail> parse_aer_detail(std::string_view message);

// The device a "<driver> <bus id>: text" message names ("nvidia 0000:02:00.0: …" →
// "0000:02:00.0"); empty when the message does not start that way.
std::string line_device(std::string_view message);

// Whether a message is part of a hung-task report or oops dump: the "Tainted:" and "task:"
// lines, "Call Trace:", <TASK> markers, register lines and stack frames ("? schedule+0x2c/0x90
// [nvidia]", or the old "[<ffffffff8123>] schedule+0x29/0x70" form).
bool is_trace_line(std::string_view message);

// Whether a stack frame runs inside the NVIDIA modules: a "[nvidia…]" module tag or a symbol
// the driver's open parts export (nv_, nvidia_, os_, rm_, _nv, uvm_).
bool is_nvidia_frame(std::string_view message);

// "NVRM: GPU Board Serial Number: 1321021034567" → "1321021034567"; nullopt otherwise or when
// the driver printed no number.
std::optional<std::string> parse_board_serial(std::string_view message);

// "NVRM: The NVIDIA GPU 0000:3b:00.0" — the first line of the driver's multi-line probe
// messages (fallen off the bus, unsupported GPU) → the normalised bus id; empty otherwise.
std::string multiline_nvrm_gpu(std::string_view message);

// Joins a multi-line print into one line for classification: parts separated by one space,
// a repeated "NVRM: " at the start of later parts dropped. Text without '\n' comes back as is.
std::string join_multiline(std::string_view text);

}  // namespace cardiac::kmsg
