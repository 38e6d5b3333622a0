// SPDX-License-Identifier: Apache-2.0
#include "simserve/roofline.h"

#include <algorithm>
#include <cmath>

namespace cardiac::simserve {
namespace {

// sum_{k=a}^{b-1} (x + y k)
double linear_sum(double x, double y, std::int64_t a, std::int64_t b) {
  if (b <= a) return 0;
  const auto n = static_cast<double>(b - a);
  return n * x + y * n * static_cast<double>(a + b - 1) / 2;
}

}  // namespace

double CostModel::step(double tokens, double pairs, double kv_tokens) const {
  const double compute = (flops_per_token * tokens + flops_per_pair * pairs) / peak_flops;
  const double memory = (weight_bytes + kv_bytes_per_token * kv_tokens) / bandwidth;
  return std::max(compute, memory);
}

double CostModel::decode(double batch, double context) const {
  return step(batch, context + batch, context + batch);
}

// Step k has context c + k·b: both roofline terms are linear in k, so the sum of their maximum
// splits at the one k where they cross, into two arithmetic series: O(1) for any span.
double CostModel::decode_span(double batch, double context, std::int64_t n) const {
  if (n <= 0) return 0;
  const double p = (flops_per_token * batch + flops_per_pair * (context + batch)) / peak_flops;
  const double q = flops_per_pair * batch / peak_flops;
  const double r = (weight_bytes + kv_bytes_per_token * (context + batch)) / bandwidth;
  const double s = kv_bytes_per_token * batch / bandwidth;
  // compute - memory = (p - r) + (q - s) k
  const double d0 = p - r;
  const double dk = q - s;
  std::int64_t split = 0;  // steps [0, split) on one side, [split, n) on the other
  bool compute_first = false;
  if (dk == 0) {
    split = n;
    compute_first = d0 >= 0;
  } else {
    const double cross = -d0 / dk;  // where the two terms are equal
    const double c = std::clamp(std::ceil(cross), 0.0, static_cast<double>(n));
    split = static_cast<std::int64_t>(c);
    compute_first = dk < 0;  // compute leads before the crossing when it grows more slowly
  }
  const double first = compute_first ? linear_sum(p, q, 0, split) : linear_sum(r, s, 0, split);
  const double second = compute_first ? linear_sum(r, s, split, n) : linear_sum(p, q, split, n);
  return first + second;
}

std::int64_t CostModel::steps_to_reach(double batch, double context, double dt,
                                       std::int64_t max) const {
  if (max <= 1 || decode(batch, context) >= dt) return std::min<std::int64_t>(max, 1);
  if (decode_span(batch, context, max) < dt) return max;
  // Exponential then binary search: the span grows with n.
  std::int64_t lo = 1;  // span(lo) < dt
  std::int64_t hi = 2;
  while (hi < max && decode_span(batch, context, hi) < dt) {
    lo = hi;
    hi = std::min(max, hi * 2);
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (decode_span(batch, context, mid) < dt ? lo : hi) = mid;
  }
  return hi;
}

CostModel make_cost_model(const plan::ModelSpec& m, plan::DType weights, plan::DType kv,
                          const plan::GpuPerf& gpu, int tp, const Efficiency& eff) {
  CostModel c;
  c.weight_bytes = static_cast<double>(plan::parameter_count(m)) * plan::dtype_bytes(weights);
  c.kv_bytes_per_token = plan::kv_bytes_per_token(m, kv);
  c.flops_per_token = 2.0 * static_cast<double>(plan::active_parameter_count(m));
  // QK^T and AV: 2 FLOPs per multiply-add over the query/key and the value widths.
  const double qk = m.mla() ? m.qk_nope_dim + m.rope_dim : m.head_dim;
  const double v = m.mla() ? m.v_head_dim : m.head_dim;
  c.flops_per_pair = 2.0 * m.layers * m.heads * (qk + v);
  c.peak_flops = gpu.bf16_flops * tp * eff.compute;
  c.bandwidth = gpu.hbm_bytes_per_s * tp * eff.bandwidth;
  return c;
}

}  // namespace cardiac::simserve
