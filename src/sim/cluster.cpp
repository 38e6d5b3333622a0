// SPDX-License-Identifier: Apache-2.0
// The simulated cluster's shape from "2048x8", "1000x8:A100,200x4:T4" or "2048x8+256".
#include "core/format.h"

#include <charconv>
#include <optional>
#include <string>

#include "core/strings.h"
#include "sim/engine.h"

namespace cardiac::sim {
namespace {

std::optional<unsigned> to_unsigned(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

unsigned ClusterSpec::nodes() const {
  unsigned n = types.empty() ? 0 : spares;
  for (const NodeType& t : types) n += t.count;
  return n;
}

unsigned ClusterSpec::gpus() const {
  unsigned g = types.empty() ? 0 : spares * types.front().gpus_per_node;
  for (const NodeType& t : types) g += t.count * t.gpus_per_node;
  return g;
}

Result<ClusterSpec> parse_cluster(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Error::parse(fmt::format("cluster '{}': {}", text, why),
                             "expected NODESxGPUS[:MODEL][,…][+SPARES], e.g. 2048x8"));
  };
  ClusterSpec spec;
  std::string_view rest = text;
  if (auto plus = rest.rfind('+'); plus != std::string_view::npos) {
    auto spares = to_unsigned(rest.substr(plus + 1));
    if (!spares) return bad("spares after '+' must be a whole number");
    spec.spares = *spares;
    rest = rest.substr(0, plus);
  }
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    NodeType t;
    if (auto colon = part.find(':'); colon != std::string_view::npos) {
      t.model = std::string(part.substr(colon + 1));
      part = part.substr(0, colon);
    }
    auto x = part.find('x');
    if (x == std::string_view::npos) return bad(fmt::format("'{}' has no 'x'", part));
    auto nodes = to_unsigned(part.substr(0, x));
    auto gpus = to_unsigned(part.substr(x + 1));
    if (!nodes || *nodes == 0) {
      return bad(fmt::format("'{}': the node count must be a whole number >= 1", part));
    }
    if (!gpus || *gpus == 0 || *gpus > kMaxGpusPerNode) {
      return bad(fmt::format("'{}': GPUs per node must be from 1 to {}", part, kMaxGpusPerNode));
    }
    t.count = *nodes;
    t.gpus_per_node = *gpus;
    spec.types.push_back(std::move(t));
  }
  if (spec.types.empty()) return bad("no node types");
  if (static_cast<std::uint64_t>(spec.gpus()) > 10'000'000) return bad("more than 10 million GPUs");
  return spec;
}

}  // namespace cardiac::sim
