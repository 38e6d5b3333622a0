// SPDX-License-Identifier: Apache-2.0
// The compact one-line form of a GpuReading that the GPU worker sends its parent once per GPU
// per sample. JSON (gpu_json.h) stays the form people and files see; this one exists because
// building, printing and parsing a JSON tree of every reading was most of what a sample cost the
// worker and the sampler (about 3.5 kB of keys and values per GPU, every second).
//
// The line is tokens separated by single spaces, in a fixed order: the header fields, every
// CARDIAC_GPU_FIELD in gpu_fields.def order, then the processes, the NVLinks and the call errors,
// each list preceded by its length. An absent optional is "-", a bool 0 or 1, a string
// percent-encoded (bytes up to space, '%', '-' as the first byte and bytes from 0x7f up as %XX;
// the empty string as "%"). The order is the build's: the worker says its layout_id() in its
// greeting, and a parent of another build (an agent still running across an upgrade that
// restarts its worker from the new cardiac-nvml-worker) refuses it rather than misreading it.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "nvml/gpu.h"

namespace cardiac::nvml {

// The line's layout as 16 hex digits: a hash of every field's name in order and of the lists'
// shape. Two builds with the same fields in the same order agree.
[[nodiscard]] std::string_view wire_layout_id();

// Appends the reading's line, without a newline, to `out`.
void append_wire(const GpuReading& g, std::string& out);
// Errors say which token was wrong.
Result<GpuReading> gpu_reading_from_wire(std::string_view line);

}  // namespace cardiac::nvml
