// SPDX-License-Identifier: Apache-2.0
// Fuzz target for `cardiac plan`'s model input (src/plan/model.cpp): a Hugging Face config.json
// as anyone may have edited it. A config that parses and validates is then planned for serving
// on one 80 GB GPU and for its prompt-growth curve, so that extreme layer, head or vocabulary
// counts reach the arithmetic: no crash, no signed overflow (UBSan), and KV bytes per token
// that are a finite, non-negative number.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "check.h"
#include "plan/inference.h"
#include "plan/model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cardiac::plan;
  const std::string_view text = cardiac::fuzz::as_text(data, size);
  auto model = parse_hf_config(text, "config.json");
  if (!model || !validate(*model, "config.json")) return 0;
  const double kv = kv_bytes_per_token(*model, DType::kBf16);
  CARDIAC_FUZZ_CHECK(std::isfinite(kv) && kv >= 0);
  const GpuMemory gpu{"H100-80GB", 85'899'345'920ULL, 85'899'345'920ULL};
  InferenceOptions o;
  (void)plan_inference(*model, o, gpu);
  (void)growth_curve(*model, o, gpu);
  return 0;
}
