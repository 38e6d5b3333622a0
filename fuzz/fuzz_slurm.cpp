// SPDX-License-Identifier: Apache-2.0
// Fuzz target for what cardiac reads from Slurm (src/slurm/nodes.cpp): `scontrol show node
// --oneliner` and `show job --oneliner` output, scontrol's times, and the GPU lists of
// SLURM_JOB_GPUS / CUDA_VISIBLE_DEVICES. The first byte picks the parser; the rest is its
// input. Every drain decision is made from these, so none may crash, hang or read past the
// text, and a parsed node always has a name.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "check.h"
#include "slurm/nodes.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text = cardiac::fuzz::as_text(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      if (auto nodes = cardiac::slurm::parse_show_node(text)) {
        for (const auto& n : *nodes) CARDIAC_FUZZ_CHECK(!n.name.empty());
      }
      break;
    case 1:
      (void)cardiac::slurm::parse_show_job(text);
      break;
    case 2:
      (void)cardiac::slurm::parse_slurm_time(text);
      break;
    default:
      (void)cardiac::slurm::parse_gpu_list(text);
      break;
  }
  return 0;
}
