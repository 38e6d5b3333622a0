// SPDX-License-Identifier: Apache-2.0
#include "simserve/workload.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::simserve {
namespace {

// Uniform in (0, 1]: the top 53 bits, shifted away from 0 so that log() stays finite.
double unit(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
}

// Box-Muller, one value per call (the second is dropped to keep the stream simple).
double normal(std::mt19937_64& rng) {
  const double u = unit(rng);
  const double v = unit(rng);
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

std::int32_t draw(const LengthDist& d, std::mt19937_64& rng) {
  switch (d.kind) {
    case LengthDist::Kind::kFixed:
      return static_cast<std::int32_t>(d.a);
    case LengthDist::Kind::kUniform: {
      const auto span = static_cast<std::uint64_t>(d.b - d.a + 1);
      return static_cast<std::int32_t>(d.a + static_cast<double>(rng() % span));
    }
    case LengthDist::Kind::kLognormal: {
      // E[X] = exp(mu + sigma^2 / 2) = mean.
      const double mu = std::log(d.a) - d.sigma * d.sigma / 2;
      const double x = std::exp(mu + d.sigma * normal(rng));
      return static_cast<std::int32_t>(std::clamp(std::round(x), 1.0, d.b));
    }
  }
  return 1;
}

std::uint8_t pick_class(const std::vector<ServiceClass>& classes, double total,
                        std::mt19937_64& rng) {
  if (classes.size() <= 1) return 0;
  double u = (unit(rng) - 0x1.0p-53) * total;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (u < classes[i].share) return static_cast<std::uint8_t>(i);
    u -= classes[i].share;
  }
  return static_cast<std::uint8_t>(classes.size() - 1);
}

double share_total(const std::vector<ServiceClass>& classes) {
  double total = 0;
  for (const auto& c : classes) total += c.share;
  return total;
}

// A whole token count in [1, 2^31).
std::optional<std::int32_t> parse_tokens(std::string_view s) {
  auto v = parse_i64(trim(s));
  if (!v || *v < 1 || *v > std::numeric_limits<std::int32_t>::max()) return std::nullopt;
  return static_cast<std::int32_t>(*v);
}

}  // namespace

std::int64_t LengthDist::max() const {
  switch (kind) {
    case Kind::kFixed:
      return static_cast<std::int64_t>(a);
    case Kind::kUniform:
    case Kind::kLognormal:
      return static_cast<std::int64_t>(b);
  }
  return 0;
}

std::string LengthDist::describe() const {
  switch (kind) {
    case Kind::kFixed:
      return fmt::format("fixed {:g}", a);
    case Kind::kUniform:
      return fmt::format("uniform {:g}-{:g}", a, b);
    case Kind::kLognormal:
      return fmt::format("lognormal mean {:g} max {:g} sigma {:g}", a, b, sigma);
  }
  return {};
}

Result<LengthDist> parse_length(std::string_view text, std::string_view flag) {
  const std::string where = fmt::format("{} '{}'", flag, text);
  auto bad = [&](std::string why) { return fail(Error::invalid(std::move(why), where)); };
  const auto parts = split(text, ':');
  std::vector<double> n;
  for (std::size_t i = parts.size() == 1 ? 0 : 1; i < parts.size(); ++i) {
    auto v = parse_double(trim(parts[i]));
    if (!v || !std::isfinite(*v)) return bad(fmt::format("'{}' is not a number", parts[i]));
    n.push_back(*v);
  }
  const std::string kind = parts.size() == 1 ? "fixed" : to_lower(trim(parts[0]));
  LengthDist d;
  auto whole = [](double v) { return v >= 1 && v < 2147483647 && v == std::floor(v); };
  if (kind == "fixed") {
    if (n.size() != 1 || !whole(n[0])) return bad("expected fixed:N with N a whole number >= 1");
    d.a = n[0];
  } else if (kind == "uniform") {
    if (n.size() != 2 || !whole(n[0]) || !whole(n[1]) || n[1] < n[0]) {
      return bad("expected uniform:LO:HI, whole numbers with 1 <= LO <= HI");
    }
    d.kind = LengthDist::Kind::kUniform;
    d.a = n[0];
    d.b = n[1];
  } else if (kind == "lognormal") {
    if (n.size() < 2 || n.size() > 3 || !(n[0] >= 1) || !whole(n[1]) || n[1] < n[0] ||
        (n.size() == 3 && !(n[2] > 0 && n[2] <= 4))) {
      return bad("expected lognormal:MEAN:MAX[:SIGMA] with 1 <= MEAN <= MAX and 0 < SIGMA <= 4");
    }
    d.kind = LengthDist::Kind::kLognormal;
    d.a = n[0];
    d.b = n[1];
    if (n.size() == 3) d.sigma = n[2];
  } else {
    return bad("expected N, fixed:N, uniform:LO:HI or lognormal:MEAN:MAX[:SIGMA]");
  }
  return d;
}

Result<ServiceClass> parse_class(std::string_view text) {
  const std::string where = fmt::format("--class '{}'", text);
  const auto parts = split(text, ':');
  ServiceClass c;
  c.name = std::string(trim(parts[0]));
  if (c.name.empty() || parts.size() < 2) {
    return fail(Error::invalid("expected NAME:SHARE[:ttft=500ms][:tpot=50ms]", where));
  }
  auto share = parse_double(trim(parts[1]));
  if (!share || !(*share > 0) || !std::isfinite(*share)) {
    return fail(
        Error::invalid(fmt::format("share '{}' must be a positive number", parts[1]), where));
  }
  c.share = *share;
  for (std::size_t i = 2; i < parts.size(); ++i) {
    const auto kv = split(parts[i], '=');
    const std::string key = kv.empty() ? "" : to_lower(trim(kv[0]));
    std::optional<std::int64_t> ns;
    if (kv.size() == 2) ns = parse_duration_ns(trim(kv[1]));
    if ((key != "ttft" && key != "tpot") || !ns || *ns <= 0) {
      return fail(Error::invalid(
          fmt::format("'{}': expected ttft=DURATION or tpot=DURATION (e.g. ttft=500ms)", parts[i]),
          where));
    }
    (key == "ttft" ? c.ttft_s : c.tpot_s) = static_cast<double>(*ns) / 1e9;
  }
  return c;
}

std::vector<Request> generate(const PoissonWorkload& w, const std::vector<ServiceClass>& classes) {
  std::mt19937_64 rng(w.seed);
  const double total = share_total(classes);
  std::vector<Request> out;
  out.reserve(w.requests);
  double t = 0;
  for (std::uint64_t i = 0; i < w.requests; ++i) {
    t += -std::log(unit(rng)) / w.rate;
    Request r;
    r.arrival = t;
    r.prompt = draw(w.prompt, rng);
    r.output = draw(w.output, rng);
    r.cls = pick_class(classes, total, rng);
    out.push_back(r);
  }
  return out;
}

Result<std::vector<Request>> parse_trace(std::string_view text, const std::string& file,
                                         const std::vector<ServiceClass>& classes,
                                         std::uint64_t seed) {
  static constexpr const char* kFields[] = {"arrival", "prompt_tokens", "output_tokens", "class"};
  std::mt19937_64 rng(seed);
  const double total = share_total(classes);
  std::vector<Request> out;
  std::size_t line_no = 0;
  bool first = true;
  for (std::string_view line : split_lines(text)) {
    ++line_no;
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    const auto fields = split(line, ',');
    auto bad = [&](std::size_t field, std::string why) {
      return fail(Error::parse(
          std::move(why),
          fmt::format("{}:{}:{}", file, line_no, kFields[std::min<std::size_t>(field, 3)])));
    };
    if (first) {
      first = false;
      const char c = trim(fields[0]).empty() ? 'x' : trim(fields[0]).front();
      if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.')) continue;  // a header
    }
    if (fields.size() < 3 || fields.size() > 4) {
      return bad(fields.size() < 3 ? fields.size() : 3,
                 fmt::format("expected 3 or 4 comma-separated fields "
                             "(arrival,prompt_tokens,output_tokens[,class]), got {}",
                             fields.size()));
    }
    Request r;
    auto arrival = parse_double(trim(fields[0]));
    if (!arrival || !std::isfinite(*arrival) || *arrival < 0) {
      return bad(0, fmt::format("'{}' is not a time in seconds >= 0", trim(fields[0])));
    }
    r.arrival = *arrival;
    auto prompt = parse_tokens(fields[1]);
    if (!prompt)
      return bad(1, fmt::format("'{}' is not a whole number of tokens >= 1", trim(fields[1])));
    r.prompt = *prompt;
    auto output = parse_tokens(fields[2]);
    if (!output)
      return bad(2, fmt::format("'{}' is not a whole number of tokens >= 1", trim(fields[2])));
    r.output = *output;
    if (fields.size() == 4) {
      const std::string_view name = trim(fields[3]);
      auto it =
          std::ranges::find_if(classes, [&](const ServiceClass& c) { return c.name == name; });
      if (it == classes.end()) {
        std::vector<std::string> names;
        for (const auto& c : classes) names.push_back(c.name);
        return bad(3, fmt::format("unknown class '{}' (known: {})", name, fmt::join(names, ", ")));
      }
      r.cls = static_cast<std::uint8_t>(it - classes.begin());
    } else {
      r.cls = pick_class(classes, total, rng);
    }
    out.push_back(r);
  }
  if (out.empty()) return fail(Error::parse("no requests in the trace", file));
  std::ranges::stable_sort(out, {}, &Request::arrival);
  return out;
}

Result<std::vector<Request>> load_trace(const std::string& path,
                                        const std::vector<ServiceClass>& classes,
                                        std::uint64_t seed) {
  std::ifstream in(path);
  if (!in) return fail(Error::io(path, errno));
  std::stringstream s;
  s << in.rdbuf();
  return parse_trace(s.str(), path, classes, seed);
}

}  // namespace cardiac::simserve
