// SPDX-License-Identifier: Apache-2.0
// The requests a serving simulation replays: drawn from a Poisson process with length
// distributions, or read from a CSV trace; each belongs to a priority class.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cardiac::simserve {

struct Request {
  double arrival = 0;       // seconds from the start
  std::int32_t prompt = 0;  // tokens, >= 1
  std::int32_t output = 0;  // tokens generated, >= 1 (the first comes from the prefill)
  std::uint8_t cls = 0;     // index into the classes; 0 is admitted first
};

// fixed:N (or just N), uniform:LO:HI, lognormal:MEAN:MAX[:SIGMA] (sigma of the underlying
// normal, default 1; draws above MAX are clipped to it, so the mean comes out a little lower).
struct LengthDist {
  enum class Kind { kFixed, kUniform, kLognormal };
  Kind kind = Kind::kFixed;
  double a = 0;  // fixed: the length; uniform: low; lognormal: mean
  double b = 0;  // uniform: high; lognormal: max
  double sigma = 1;
  [[nodiscard]] std::int64_t max() const;
  [[nodiscard]] std::string describe() const;
};
Result<LengthDist> parse_length(std::string_view text, std::string_view flag);

// A priority class: NAME:SHARE[:ttft=DURATION][:tpot=DURATION]. Classes are listed highest
// priority first; SHARE is the fraction of generated requests (shares are normalised).
struct ServiceClass {
  std::string name;
  double share = 1;
  std::optional<double> ttft_s;  // SLO on time to first token
  std::optional<double> tpot_s;  // SLO on time per output token
};
Result<ServiceClass> parse_class(std::string_view text);

struct PoissonWorkload {
  double rate = 1;  // requests per second
  std::uint64_t requests = 1000;
  LengthDist prompt;
  LengthDist output;
  std::uint64_t seed = 1;
};
// Deterministic for a seed (own transforms over std::mt19937_64, not the library's
// distributions, whose output the standard leaves to the implementation).
std::vector<Request> generate(const PoissonWorkload& w, const std::vector<ServiceClass>& classes);

// CSV lines "arrival_seconds,prompt_tokens,output_tokens[,class]"; a first line that does not
// start with a number is a header; blank lines and lines starting with '#' are skipped. Without
// a class column, requests get classes by share (seeded). Sorted by arrival (stable). Errors
// name file:line:field.
Result<std::vector<Request>> parse_trace(std::string_view text, const std::string& file,
                                         const std::vector<ServiceClass>& classes,
                                         std::uint64_t seed);
Result<std::vector<Request>> load_trace(const std::string& path,
                                        const std::vector<ServiceClass>& classes,
                                        std::uint64_t seed);

}  // namespace cardiac::simserve
