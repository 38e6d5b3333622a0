// SPDX-License-Identifier: Apache-2.0
// `cardiac plan --html`: one self-contained page with the per-GPU memory breakdown and the
// prompt-growth curve as an inline SVG bar chart.
#pragma once

#include <string>
#include <vector>

#include "plan/inference.h"

namespace cardiac::plan {

struct HtmlPlan {
  std::string title;    // "Llama-3.1-8B on 8 × NVIDIA H100 80GB HBM3"
  std::string verdict;  // the text output's last lines
  InferenceOptions options;
  InferenceMemory memory;
  std::vector<GrowthPoint> growth;
};

std::string render_html(const HtmlPlan& p);

}  // namespace cardiac::plan
