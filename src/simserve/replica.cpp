// SPDX-License-Identifier: Apache-2.0
#include "simserve/replica.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/format.h"

namespace cardiac::simserve::detail {
namespace {

constexpr std::size_t kMaxSamples = std::size_t{1} << 20;
constexpr double kForever = std::numeric_limits<double>::infinity();

}  // namespace

Replica::Replica(Shared& s) : s_(s), c_(s.config) {
  waiting_q_.resize(c_.classes.size());
  joined_.resize(c_.classes.size());
  capacity_ = paged() ? c_.kv_tokens / c_.block_tokens : c_.kv_tokens;
  key_count_.assign(static_cast<std::size_t>(c_.block_tokens), 0);
}

std::int64_t Replica::real_cache(std::uint32_t id) const {
  const Live& l = s_.live[id];
  if (l.state == State::kPadding) return l.kept;
  return l.target + (steps_ - l.join_step);
}

std::size_t Replica::key(std::int64_t cache) const {
  std::int64_t k = (cache - steps_) % c_.block_tokens;
  if (k < 0) k += c_.block_tokens;
  return static_cast<std::size_t>(k);
}

// A row whose cache is c before a step writes token c + 1 and needs a new block when c is a
// multiple of the block size; (cache - steps) mod block stays fixed while a row decodes, so the
// rows are counted by it and the next n steps' blocks are a sum over block-size keys.
std::int64_t Replica::need(std::int64_t n) const {
  if (n <= 0) return 0;
  const std::int64_t bt = c_.block_tokens;
  std::int64_t total = 0;
  for (std::int64_t k = 0; k < bt; ++k) {
    const std::int64_t rows = key_count_[static_cast<std::size_t>(k)];
    if (rows == 0) continue;
    const std::int64_t m = (k + steps_) % bt;  // these rows' cache length mod block
    const std::int64_t first = (bt - m) % bt;  // the step at which they take a block
    if (n > first) total += rows * ((n - 1 - first) / bt + 1);
  }
  return total;
}

std::int64_t Replica::block_limit(std::int64_t n) const {
  const std::int64_t free = capacity_ - allocated_;
  if (need(n) <= free) return n;
  std::int64_t lo = 0;  // need(lo) fits
  std::int64_t hi = n;  // need(hi) does not
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (need(mid) <= free ? lo : hi) = mid;
  }
  return lo;
}

void Replica::emit(double x) {
  queue_area += static_cast<double>(waiting_) * (x - last_change_);
  last_change_ = x;
  while (next_sample_ < kMaxSamples && static_cast<double>(next_sample_) * s_.interval < x) {
    if (s_.samples.size() <= next_sample_) s_.samples.resize(next_sample_ * 2 + 16, 0);
    s_.samples[next_sample_++] += waiting_;
  }
}

void Replica::finish_samples(double end) {
  emit(end);
  // The sample at exactly `end` (when it falls there) sees the final state.
  if (next_sample_ < kMaxSamples && static_cast<double>(next_sample_) * s_.interval <= end) {
    if (s_.samples.size() <= next_sample_) s_.samples.resize(next_sample_ + 1, 0);
    s_.samples[next_sample_++] += waiting_;
  }
}

void Replica::enqueue(std::uint32_t id, double t) {
  emit(t);
  Live& l = s_.live[id];
  l.state = State::kWaiting;
  l.queued_at = t;
  l.target = s_.requests[id].prompt;
  waiting_q_[s_.requests[id].cls].push_back(id);
  ++waiting_;
}

void Replica::leave_queue(std::uint32_t id) {
  emit(now_);
  --waiting_;
  Live& l = s_.live[id];
  l.wait += now_ - l.queued_at;
  if (l.admitted < 0) l.admitted = now_;
}

void Replica::requeue(std::uint32_t id) {
  emit(now_);
  Live& l = s_.live[id];
  l.state = State::kWaiting;
  l.queued_at = now_;
  waiting_q_[s_.requests[id].cls].push_front(id);
  ++waiting_;
}

void Replica::note_peak() {
  const std::int64_t tokens = paged() ? allocated_ * c_.block_tokens : allocated_;
  peak_alloc_tokens = std::max(peak_alloc_tokens, tokens);
}

void Replica::join(std::uint32_t id, std::int32_t cache) {
  Live& l = s_.live[id];
  const Request& r = s_.requests[id];
  l.join_step = steps_;
  l.cache_at_join = cache;
  l.state = State::kDecoding;
  l.pos = static_cast<std::uint32_t>(rows_list_.size());
  rows_list_.push_back(id);
  ++rows_;
  cache_ += cache;
  ++live_rows_;
  live_cache_ += l.target;
  if (paged()) {
    ++key_count_[key(cache)];
    joined_[r.cls].push_back({id, l.gen});
  }
  due_.push({steps_ + (r.output - l.done), id, l.gen});
}

void Replica::remove_row(std::uint32_t id) {
  Live& l = s_.live[id];
  const std::int64_t rc = row_cache(l);
  const std::uint32_t last = rows_list_.back();
  rows_list_[l.pos] = last;
  s_.live[last].pos = l.pos;
  rows_list_.pop_back();
  --rows_;
  cache_ -= rc;
  if (paged()) --key_count_[key(rc)];
  allocated_ -= cost(rc);
  if (l.state == State::kDecoding) --live_rows_;
  live_cache_ -= real_cache(id);
}

// Every output token's slot a step computes is counted: a padding row's are waste.
void Replica::account(double dt, std::int64_t n, std::int64_t grow) {
  busy += dt;
  const auto nd = static_cast<double>(n);
  used_area += dt * (static_cast<double>(live_cache_ + prefill_tokens_) +
                     static_cast<double>(live_rows_) * nd / 2);
  const double alloc = paged() ? (static_cast<double>(allocated_) + static_cast<double>(grow) / 2) *
                                     static_cast<double>(c_.block_tokens)
                               : static_cast<double>(allocated_);
  alloc_area += dt * alloc;
  slots += static_cast<double>(rows_) * nd;
  row_steps += static_cast<double>(rows_) * nd;
  decode_steps += n;
  useful += static_cast<double>(live_rows_) * nd;
}

void Replica::finish(std::uint32_t id) {
  Live& l = s_.live[id];
  const Request& r = s_.requests[id];
  l.finish = now_;
  if (is_static()) {
    // The row stays in the batch as padding until the longest ends.
    l.kept = static_cast<std::int32_t>(real_cache(id));
    l.done = r.output;
    l.state = State::kPadding;
    --live_rows_;
    --batch_unfinished_;
    return;
  }
  remove_row(id);
  l.done = r.output;
  l.state = State::kDone;
}

void Replica::finish_due() {
  while (!due_.empty() && due_.top().step <= steps_) {
    const Due d = due_.top();
    due_.pop();
    const Live& l = s_.live[d.id];
    if (l.gen != d.gen || l.state != State::kDecoding) continue;
    finish(d.id);
  }
  if (is_static() && rows_ > 0 && batch_unfinished_ == 0) end_batch();
}

// Recompute preemption (vLLM's default): the newest row of the lowest class gives its blocks
// back and waits again at the head of its class, to prefill its prompt and what it produced.
bool Replica::preempt() {
  for (std::size_t cls = joined_.size(); cls-- > 0;) {
    auto& stack = joined_[cls];
    while (!stack.empty()) {
      const Entry e = stack.back();
      stack.pop_back();
      Live& l = s_.live[e.id];
      if (l.gen != e.gen || (l.state != State::kDecoding && l.state != State::kPadding)) continue;
      const bool padding = l.state == State::kPadding;
      const auto produced = static_cast<std::int32_t>(steps_ - l.join_step);
      remove_row(e.id);
      ++l.gen;
      if (padding) {  // its answer is complete: the batch only drops its padding
        l.state = State::kDone;
        return true;
      }
      l.done += produced;
      l.target = s_.requests[e.id].prompt + l.done;
      ++preemptions;
      if (is_static()) --batch_unfinished_;
      requeue(e.id);
      return true;
    }
  }
  return false;
}

void Replica::make_room() {
  if (!paged()) return;
  while (rows_ > 0 && need(1) > capacity_ - allocated_) {
    if (!preempt()) break;
  }
  if (is_static() && rows_ > 0 && batch_unfinished_ == 0) end_batch();
}

void Replica::admit() {
  std::int64_t pending = prefill_tokens_;
  // Paged: keep the blocks the running rows take next step free (or 1 %, as vLLM's
  // watermark), unless nothing runs.
  const std::int64_t reserve_blocks =
      paged() && rows_ + static_cast<std::int64_t>(prefilling_.size()) > 0
          ? std::max(need(1), capacity_ / 100)
          : 0;
  for (auto& q : waiting_q_) {
    while (!q.empty()) {
      if (rows_ + static_cast<std::int64_t>(prefilling_.size()) >= c_.max_batch) return;
      const std::uint32_t id = q.front();
      Live& l = s_.live[id];
      const std::int64_t c = cost(l.target);
      const bool empty = rows_ == 0 && prefilling_.empty();
      if (allocated_ + c + (empty ? 0 : reserve_blocks) > capacity_) return;
      if (!c_.chunked_prefill && !prefilling_.empty() && pending + l.target > c_.max_batched_tokens)
        return;
      q.pop_front();
      leave_queue(id);
      allocated_ += c;
      note_peak();
      l.state = State::kPrefilling;
      l.prefilled = 0;
      prefilling_.push_back(id);
      pending += l.target;
      prefill_tokens_ += l.target;
    }
  }
}

void Replica::end_prefill(std::uint32_t id) {
  Live& l = s_.live[id];
  const Request& r = s_.requests[id];
  prefill_tokens_ -= l.target;
  ++l.done;
  if (l.first_token < 0) l.first_token = now_;
  if (l.done >= r.output) {
    l.finish = now_;
    l.state = State::kDone;
    allocated_ -= cost(l.target);
    return;
  }
  join(id, l.target);
}

// Chunked: one step of every decode row plus up to the token budget of prompt tokens, oldest
// first (Sarathi-Serve, vLLM's chunked prefill). Plain: the admitted prompts in one step while
// the decode rows wait.
void Replica::prefill_step() {
  const bool chunked = c_.chunked_prefill;
  if (chunked) make_room();
  double tokens = 0;
  double pairs = 0;
  double kv = 0;
  std::int64_t budget =
      chunked ? c_.max_batched_tokens - rows_ : std::numeric_limits<std::int64_t>::max();
  for (std::uint32_t id : prefilling_) {
    if (budget <= 0) break;
    Live& l = s_.live[id];
    const std::int64_t n = std::min<std::int64_t>(l.target - l.prefilled, budget);
    const auto c0 = static_cast<double>(l.prefilled);
    const auto nd = static_cast<double>(n);
    tokens += nd;
    pairs += c0 * nd + nd * (nd + 1) / 2;
    kv += c0 + nd;
    budget -= n;
    l.prefilled += static_cast<std::int32_t>(n);
  }
  const std::int64_t n = chunked && rows_ > 0 ? 1 : 0;
  if (n > 0) {
    tokens += static_cast<double>(rows_);
    pairs += static_cast<double>(cache_ + rows_);
    kv += static_cast<double>(cache_ + rows_);
  }
  const double dt = s_.config.cost.step(tokens, pairs, kv);
  const std::int64_t grow = paged() ? need(n) : 0;
  account(dt, n, grow);
  ++steps_run;
  now_ += dt;
  if (n > 0) {
    allocated_ += grow;
    note_peak();
    cache_ += rows_;
    live_cache_ += live_rows_;
    ++steps_;
  }
  while (!prefilling_.empty()) {
    const std::uint32_t id = prefilling_.front();
    const Live& l = s_.live[id];
    if (l.prefilled < l.target) break;
    prefilling_.pop_front();
    end_prefill(id);
  }
  finish_due();
}

void Replica::decode_span(double t) {
  make_room();
  if (rows_ == 0) return;
  while (!due_.empty()) {
    const Due& d = due_.top();
    const Live& l = s_.live[d.id];
    if (l.gen == d.gen && l.state == State::kDecoding) break;
    due_.pop();
  }
  std::int64_t n = due_.empty() ? std::int64_t{1} << 40 : due_.top().step - steps_;
  if (c_.max_span > 0) n = std::min(n, c_.max_span);
  if (paged()) n = block_limit(n);
  // A span stops at the first step after t only when the next arrival could join.
  const bool room = !is_static() &&
                    rows_ + static_cast<std::int64_t>(prefilling_.size()) < c_.max_batch &&
                    capacity_ - allocated_ >= (paged() ? 1 : s_.reserve);
  const auto b = static_cast<double>(rows_);
  const auto ctx = static_cast<double>(cache_);
  if (room && std::isfinite(t)) n = s_.config.cost.steps_to_reach(b, ctx, t - now_, n);
  const double dt = s_.config.cost.decode_span(b, ctx, n);
  const std::int64_t grow = paged() ? need(n) : 0;
  account(dt, n, grow);
  steps_run += n;
  now_ += dt;
  allocated_ += grow;
  note_peak();
  cache_ += rows_ * n;
  live_cache_ += live_rows_ * n;
  steps_ += n;
  finish_due();
}

// A static batch starts once it is full (max batch, or as many as the reserved cache holds)
// or its oldest request has waited the batch timeout; prompts are padded to the longest.
bool Replica::start_batch(double t) {
  if (waiting_ == 0) {
    if (std::isfinite(t)) now_ = t;
    return false;
  }
  std::int64_t cap = c_.max_batch;
  if (!paged()) cap = std::min(cap, capacity_ / s_.reserve);
  if (waiting_ < cap) {
    double oldest = kForever;
    for (const auto& q : waiting_q_) {
      if (!q.empty()) oldest = std::min(oldest, s_.live[q.front()].queued_at);
    }
    const double start = std::max(now_, oldest + c_.batch_timeout_s);
    if (start >= t) {
      if (std::isfinite(t)) now_ = t;
      return false;
    }
    now_ = start;
  }
  std::vector<std::uint32_t> rows;
  std::int64_t pad = 0;
  for (auto& q : waiting_q_) {
    while (!q.empty() && static_cast<std::int64_t>(rows.size()) < cap) {
      const std::uint32_t id = q.front();
      const std::int64_t len = std::max<std::int64_t>(pad, s_.live[id].target);
      const auto count = static_cast<std::int64_t>(rows.size()) + 1;
      if (count * (paged() ? blocks(len) : s_.reserve) > capacity_) break;
      q.pop_front();
      leave_queue(id);
      rows.push_back(id);
      pad = len;
    }
    if (static_cast<std::int64_t>(rows.size()) >= cap || !q.empty()) break;
  }
  if (rows.empty()) return false;  // cannot happen: one request always fits an empty cache
  const auto b = static_cast<std::int64_t>(rows.size());
  allocated_ = b * (paged() ? blocks(pad) : s_.reserve);
  note_peak();
  for (std::uint32_t id : rows) prefill_tokens_ += s_.live[id].target;
  const auto bd = static_cast<double>(b);
  const auto pd = static_cast<double>(pad);
  const double dt = s_.config.cost.step(bd * pd, bd * pd * (pd + 1) / 2, bd * pd);
  account(dt, 0, 0);
  slots += bd;  // every row's first token
  useful += bd;
  ++steps_run;
  now_ += dt;
  prefill_tokens_ = 0;
  for (std::uint32_t id : rows) {
    Live& l = s_.live[id];
    ++l.done;
    if (l.first_token < 0) l.first_token = now_;
    join(id, static_cast<std::int32_t>(pad));
  }
  batch_unfinished_ = b;
  finish_due();
  return true;
}

void Replica::end_batch() {
  for (std::uint32_t id : rows_list_) {
    Live& l = s_.live[id];
    if (l.state == State::kPadding) l.state = State::kDone;
  }
  rows_list_.clear();
  rows_ = cache_ = live_rows_ = live_cache_ = allocated_ = 0;
  std::ranges::fill(key_count_, 0);
  for (auto& j : joined_) j.clear();
  due_ = {};
  batch_unfinished_ = 0;
}

void Replica::check() {
  std::int64_t alloc = 0;
  std::int64_t cache = 0;
  std::int64_t held = 0;
  for (std::uint32_t id : rows_list_) {
    const std::int64_t rc = row_cache(s_.live[id]);
    cache += rc;
    alloc += cost(rc);
    held += real_cache(id);
  }
  for (std::uint32_t id : prefilling_) alloc += cost(s_.live[id].target);
  if (alloc != allocated_ || cache != cache_ || held != live_cache_ ||
      static_cast<std::int64_t>(rows_list_.size()) != rows_ || allocated_ > capacity_ ||
      allocated_ < 0) {
    s_.broken = fmt::format(
        "at {:.6f} s: allocated {} (counted {}), capacity {}, cache {} (counted {}), held {} "
        "(counted {}), rows {} (counted {})",
        now_, allocated_, alloc, capacity_, cache_, cache, live_cache_, held, rows_,
        rows_list_.size());
  }
}

void Replica::advance_until(double t) {
  while (now_ < t && s_.broken.empty()) {
    if (is_static()) {
      if (rows_ > 0) {
        decode_span(kForever);
      } else if (!start_batch(t)) {
        return;
      }
    } else {
      admit();
      if (!prefilling_.empty()) {
        prefill_step();
      } else if (rows_ > 0) {
        decode_span(t);
      } else {
        if (std::isfinite(t)) now_ = t;
        return;
      }
    }
    if (c_.check_invariants) check();
  }
}

}  // namespace cardiac::simserve::detail
