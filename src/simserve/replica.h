// SPDX-License-Identifier: Apache-2.0
// One model replica's scheduler and its GPU time line (internal to the engine). Between two
// events it advances whole spans of decode steps: the next finish is the top of a heap keyed
// by decode step, the next block a sequence needs comes from a count of sequences by cache
// length modulo the block size (an invariant while they all grow by one token a step), and the
// span's time is a closed form (CostModel::decode_span).
#pragma once

#include <cstdint>
#include <deque>
#include <queue>
#include <string>
#include <vector>

#include "simserve/engine.h"

namespace cardiac::simserve::detail {

enum class State : std::uint8_t {
  kNone,
  kWaiting,
  kPrefilling,
  kDecoding,
  kPadding,
  kDone,
  kRejected
};

// A request's progress through the server.
struct Live {
  double queued_at = 0;
  double wait = 0;  // seconds waiting, all waits added
  double admitted = -1;
  double first_token = -1;
  double finish = -1;
  std::int64_t join_step = 0;  // the replica's decode step when it joined the batch
  std::int32_t done = 0;       // output tokens produced (as of join_step while decoding)
  std::int32_t target = 0;     // tokens to prefill: prompt + tokens already produced
  std::int32_t prefilled = 0;
  std::int32_t cache_at_join = 0;  // cache length at join_step (static: padded)
  std::int32_t kept = 0;           // static: real tokens a finished row leaves in its padding
  std::uint32_t gen = 0;           // bumped on preemption: heap and stack entries go stale
  std::uint32_t pos = 0;           // index in Replica::rows_list_ while in the batch
  State state = State::kNone;
};

// What the replicas share: the workload, the per-request state and the queue samples.
struct Shared {
  const EngineConfig& config;
  const std::vector<Request>& requests;
  std::vector<Live> live;
  std::int64_t reserve = 0;  // tokens reserved per request (reserved KV)
  double interval = 1;       // between queue samples
  std::vector<std::int64_t> samples;
  std::string broken;  // the first failed invariant check
};

class Replica {
 public:
  explicit Replica(Shared& s);

  void enqueue(std::uint32_t id, double t);
  // Makes every scheduling decision due before t; a span that starts before t may end after.
  // t = infinity runs the replica dry.
  void advance_until(double t);
  // Adds this replica's queue length to the samples up to `end` (the run's last event).
  void finish_samples(double end);

  [[nodiscard]] std::int64_t load() const {
    return waiting_ + static_cast<std::int64_t>(prefilling_.size()) + rows_;
  }

  // Totals for the report.
  double busy = 0;
  double used_area = 0;   // tokens held by requests × seconds
  double alloc_area = 0;  // tokens allocated × seconds
  double queue_area = 0;  // waiting requests × seconds
  double slots = 0, useful = 0;
  double row_steps = 0;  // decode rows × steps
  std::int64_t decode_steps = 0;
  std::int64_t peak_alloc_tokens = 0;
  std::int64_t steps_run = 0;
  std::int64_t preemptions = 0;

 private:
  struct Due {
    std::int64_t step;
    std::uint32_t id;
    std::uint32_t gen;
    bool operator>(const Due& o) const { return step != o.step ? step > o.step : id > o.id; }
  };
  struct Entry {
    std::uint32_t id;
    std::uint32_t gen;
  };

  [[nodiscard]] bool paged() const { return c_.policy.kv == KvMode::kPaged; }
  [[nodiscard]] bool is_static() const { return c_.policy.batching == Batching::kStatic; }
  [[nodiscard]] std::int64_t blocks(std::int64_t tokens) const {
    return (tokens + c_.block_tokens - 1) / c_.block_tokens;
  }
  [[nodiscard]] std::int64_t cost(std::int64_t tokens) const {
    return paged() ? blocks(tokens) : s_.reserve;
  }
  [[nodiscard]] std::int64_t row_cache(const Live& l) const {
    return l.cache_at_join + (steps_ - l.join_step);
  }
  [[nodiscard]] std::int64_t real_cache(std::uint32_t id) const;
  [[nodiscard]] std::size_t key(std::int64_t cache) const;
  // Blocks the decode rows need for their next n steps.
  [[nodiscard]] std::int64_t need(std::int64_t n) const;
  [[nodiscard]] std::int64_t block_limit(std::int64_t n) const;

  void emit(double x);
  void leave_queue(std::uint32_t id);
  void requeue(std::uint32_t id);
  void join(std::uint32_t id, std::int32_t cache);
  void remove_row(std::uint32_t id);
  void account(double dt, std::int64_t n, std::int64_t grow);
  void finish(std::uint32_t id);
  void end_prefill(std::uint32_t id);
  void finish_due();
  bool preempt();
  void make_room();
  void check();
  void note_peak();

  // continuous batching
  void admit();
  void prefill_step();
  void decode_span(double t);
  // static batching
  bool start_batch(double t);
  void end_batch();

  Shared& s_;
  const EngineConfig& c_;
  double now_ = 0;
  std::vector<std::deque<std::uint32_t>> waiting_q_;  // per class
  std::int64_t waiting_ = 0;
  double last_change_ = 0;
  std::size_t next_sample_ = 0;
  std::deque<std::uint32_t> prefilling_;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  std::vector<std::vector<Entry>> joined_;  // per class, in join order: preemption victims
  std::vector<std::uint32_t> rows_list_;
  std::int64_t steps_ = 0;           // decode iterations so far
  std::int64_t rows_ = 0;            // rows in the decode batch
  std::int64_t cache_ = 0;           // their cached tokens (static: padded)
  std::int64_t live_rows_ = 0;       // rows still generating (static: padding rows excluded)
  std::int64_t live_cache_ = 0;      // tokens requests hold (static: no padding)
  std::int64_t prefill_tokens_ = 0;  // prompt tokens of the requests in prefilling_
  std::int64_t allocated_ = 0;       // blocks (paged) or tokens (reserved)
  std::int64_t capacity_ = 0;
  std::vector<std::int64_t> key_count_;  // paged: rows by (cache - steps) mod block
  std::int64_t batch_unfinished_ = 0;    // static: rows still generating
};

}  // namespace cardiac::simserve::detail
