// SPDX-License-Identifier: Apache-2.0
// JSON and CSV of the failure statistics.
#include "failstats/file_format.h"

#include <cmath>
#include <cstdint>

#include "core/format.h"
#include "core/time.h"

namespace cardiac::failstats {
namespace {

using nlohmann::json;

json number(double v) {
  return std::isfinite(v) ? json(v) : json();
}

// The times are written only when all `n` are known: a file read without them (they are
// optional), or merged with one, has fewer, and the reader refuses a list that is not `n` long.
json repair_json(const RepairSums& r) {
  json j = {{"n", r.n},
            {"sum_hours", r.sum_hours},
            {"sum_log_hours", r.sum_log},
            {"sum_log2_hours", r.sum_log2}};
  if (r.hours.size() == r.n) j["hours"] = r.hours;
  return j;
}

json counts_json(const ClassCounts& c) {
  json out = json::object();
  for (FaultClass fc : kFaultClasses) {
    if (auto k = c[static_cast<std::size_t>(fc)]; k > 0) out[std::string(class_name(fc))] = k;
  }
  return out;
}

json rate_json(const RateFigures& r) {
  return {{"count", r.count},
          {"gpu_days", r.gpu_days},
          {"per_1000_gpu_days", number(r.per_1000)},
          {"per_1000_gpu_days_ci95", {number(r.per_1000_low), number(r.per_1000_high)}},
          {"mtbi_hours", number(r.mtbi_hours)},
          {"mtbi_hours_ci95", {number(r.mtbi_low), number(r.mtbi_high)}}};
}

json repair_figures_json(const RepairFigures& f) {
  return {{"n", f.n},
          {"mttr_mean_hours", number(f.mean_hours)},
          {"mttr_median_hours", number(f.median_hours)},
          {"mttr_p90_hours", number(f.p90_hours)},
          {"lognormal_mu", number(f.mu)},
          {"lognormal_sigma", number(f.sigma)}};
}

json row_json(const Row& r) {
  json j = rate_json(r.rate);
  j["repair"] = repair_figures_json(r.repair);
  return j;
}

// Reading: every accessor names the field it was asked for.
class Reader {
 public:
  explicit Reader(std::string_view where) : where_(where) {}

  [[nodiscard]] Error bad(const std::string& field, std::string_view what) const {
    return Error::parse(std::string(what), std::string(where_) + ": " + field);
  }

  Result<const json*> member(const json& parent, const std::string& path, const char* key,
                             bool required = true) const {
    const std::string field = path.empty() ? key : path + "." + key;
    if (!parent.is_object()) return fail(bad(path, "expected an object"));
    auto it = parent.find(key);
    if (it == parent.end()) {
      if (!required) return static_cast<const json*>(nullptr);
      return fail(bad(field, "missing"));
    }
    return &*it;
  }

  Result<std::uint64_t> count(const json& v, const std::string& field) const {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
      return static_cast<std::uint64_t>(v.get<std::int64_t>());
    }
    return fail(bad(field, "expected a whole number >= 0"));
  }

  Result<double> real(const json& v, const std::string& field, bool non_negative = true) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) ||
        (non_negative && v.get<double>() < 0)) {
      return fail(
          bad(field, non_negative ? "expected a finite number >= 0" : "expected a finite number"));
    }
    return v.get<double>();
  }

  Result<std::uint64_t> count_at(const json& parent, const std::string& path,
                                 const char* key) const {
    auto v = member(parent, path, key);
    if (!v) return fail(v.error());
    return count(**v, path + "." + key);
  }

  Result<double> real_at(const json& parent, const std::string& path, const char* key,
                         bool non_negative = true) const {
    auto v = member(parent, path, key);
    if (!v) return fail(v.error());
    return real(**v, path + "." + key, non_negative);
  }

  Result<RepairSums> repair(const json& v, const std::string& path) const {
    RepairSums r;
    auto n = count_at(v, path, "n");
    auto sum = real_at(v, path, "sum_hours");
    auto sum_log = real_at(v, path, "sum_log_hours", false);
    auto sum_log2 = real_at(v, path, "sum_log2_hours");
    if (!n) return fail(n.error());
    if (!sum) return fail(sum.error());
    if (!sum_log) return fail(sum_log.error());
    if (!sum_log2) return fail(sum_log2.error());
    r.n = *n;
    r.sum_hours = *sum;
    r.sum_log = *sum_log;
    r.sum_log2 = *sum_log2;
    auto hours = member(v, path, "hours", false);
    if (!hours) return fail(hours.error());
    if (*hours != nullptr) {
      if (!(*hours)->is_array()) return fail(bad(path + ".hours", "expected an array"));
      for (std::size_t i = 0; i < (*hours)->size(); ++i) {
        auto h = real((**hours)[i], fmt::format("{}.hours[{}]", path, i));
        if (!h) return fail(h.error());
        r.hours.push_back(*h);
      }
      if (r.hours.size() != r.n) {
        return fail(
            bad(path + ".hours", fmt::format("holds {} times but n is {}", r.hours.size(), r.n)));
      }
    }
    return r;
  }

  Result<ClassCounts> counts(const json& v, const std::string& field) const {
    if (!v.is_object()) return fail(bad(field, "expected an object of class: count"));
    ClassCounts out{};
    for (const auto& [name, k] : v.items()) {
      auto c = class_from_name(name);
      const std::string at = fmt::format("{}.{}", field, name);
      if (!c) return fail(bad(at, "unknown fault class (docs/stats.md)"));
      auto n = count(k, at);
      if (!n) return fail(n.error());
      out[static_cast<std::size_t>(*c)] = *n;
    }
    return out;
  }

 private:
  std::string_view where_;
};

std::string cell(double v) {
  return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string();
}

// Quotes a CSV field when it holds a separator, a quote or a line break.
std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

nlohmann::json to_json(const FailureStats& s) {
  json classes = json::object();
  json derived_classes = json::object();
  for (FaultClass c : kFaultClasses) {
    const auto i = static_cast<std::size_t>(c);
    classes[std::string(class_name(c))] = {{"count", s.counts[i]},
                                           {"repair", repair_json(s.repairs[i])}};
  }
  for (const Row& r : rows(s, By::kClass)) derived_classes[r.key] = row_json(r);
  json nodes = json::array();
  for (const NodeStats& n : s.nodes) {
    nodes.push_back({{"node", n.node},
                     {"gpus", n.gpus},
                     {"gpu_days", n.gpu_days},
                     {"counts", counts_json(n.counts)},
                     {"repair", repair_json(n.repair)}});
  }
  json gpus = json::array();
  for (const GpuStats& g : s.gpu_list) {
    gpus.push_back({{"gpu", g.gpu},
                    {"node", g.node},
                    {"gpu_days", g.gpu_days},
                    {"counts", counts_json(g.counts)},
                    {"repair", repair_json(g.repair)}});
  }
  const Lemons lemons = estimate_lemons(s);
  return {{"format", kFormat},
          {"sources", s.sources},
          {"window",
           {{"start", format_iso8601(s.window_start)},
            {"end", format_iso8601(s.window_end)},
            {"start_ns", s.window_start},
            {"end_ns", s.window_end}}},
          {"exposure", {{"gpu_days", s.gpu_days}, {"gpus", s.gpus}, {"nodes", s.nodes.size()}}},
          {"open_incidents", s.open},
          {"classes", classes},
          {"nodes", nodes},
          {"gpus", gpus},
          {"derived",
           {{"overall", row_json(overall(s))},
            {"classes", derived_classes},
            {"lemons",
             {{"fraction", lemons.fraction},
              {"factor", lemons.factor},
              {"nodes", lemons.nodes},
              {"share", lemons.share},
              {"dispersion_p", lemons.dispersion_p},
              {"likelihood_ratio", lemons.likelihood_ratio}}}}}};
}

Result<FailureStats> from_json(const nlohmann::json& j, std::string_view where) {
  Reader rd(where);
  if (!j.is_object()) return fail(rd.bad("(top)", "expected a JSON object"));
  auto format = rd.member(j, "", "format");
  if (!format) return fail(format.error());
  if (!(*format)->is_string() || (*format)->get<std::string>() != kFormat) {
    return fail(
        rd.bad("format", fmt::format("expected \"{}\", found {}", kFormat, (*format)->dump())));
  }
  FailureStats s;
  auto window = rd.member(j, "", "window");
  if (!window) return fail(window.error());
  for (auto [key, out] : {std::pair{"start_ns", &s.window_start}, {"end_ns", &s.window_end}}) {
    auto v = rd.member(**window, "window", key);
    if (!v) return fail(v.error());
    if (!(*v)->is_number_integer()) {
      return fail(rd.bad(std::string("window.") + key, "expected nanoseconds since the epoch"));
    }
    *out = (*v)->get<std::int64_t>();
  }
  auto exposure = rd.member(j, "", "exposure");
  if (!exposure) return fail(exposure.error());
  auto gpu_days = rd.real_at(**exposure, "exposure", "gpu_days");
  if (!gpu_days) return fail(gpu_days.error());
  s.gpu_days = *gpu_days;
  auto gpus = rd.count_at(**exposure, "exposure", "gpus");
  if (!gpus) return fail(gpus.error());
  s.gpus = static_cast<unsigned>(*gpus);
  if (auto open = rd.member(j, "", "open_incidents", false); !open) {
    return fail(open.error());
  } else if (*open != nullptr) {
    auto n = rd.count(**open, "open_incidents");
    if (!n) return fail(n.error());
    s.open = *n;
  }
  if (auto sources = j.find("sources"); sources != j.end() && sources->is_array()) {
    for (const auto& src : *sources) {
      if (src.is_string()) s.sources.push_back(src.get<std::string>());
    }
  }
  auto classes = rd.member(j, "", "classes");
  if (!classes) return fail(classes.error());
  if (!(*classes)->is_object()) return fail(rd.bad("classes", "expected an object"));
  for (const auto& [name, v] : (*classes)->items()) {
    const std::string path = "classes." + name;
    auto c = class_from_name(name);
    if (!c) return fail(rd.bad(path, "unknown fault class (docs/stats.md)"));
    const auto i = static_cast<std::size_t>(*c);
    auto k = rd.count_at(v, path, "count");
    if (!k) return fail(k.error());
    s.counts[i] = *k;
    auto r = rd.member(v, path, "repair");
    if (!r) return fail(r.error());
    auto sums = rd.repair(**r, path + ".repair");
    if (!sums) return fail(sums.error());
    s.repairs[i] = std::move(*sums);
  }
  for (const char* list : {"nodes", "gpus"}) {
    auto items = rd.member(j, "", list);
    if (!items) return fail(items.error());
    if (!(*items)->is_array()) return fail(rd.bad(list, "expected an array"));
    for (std::size_t n = 0; n < (*items)->size(); ++n) {
      const json& v = (**items)[n];
      const std::string path = fmt::format("{}[{}]", list, n);
      const bool is_node = std::string_view(list) == "nodes";
      auto name = rd.member(v, path, is_node ? "node" : "gpu");
      if (!name) return fail(name.error());
      if (!(*name)->is_string()) {
        return fail(rd.bad(path + (is_node ? ".node" : ".gpu"), "expected a string"));
      }
      auto days = rd.real_at(v, path, "gpu_days");
      auto counts = rd.member(v, path, "counts");
      auto repair = rd.member(v, path, "repair");
      if (!days) return fail(days.error());
      if (!counts) return fail(counts.error());
      if (!repair) return fail(repair.error());
      auto c = rd.counts(**counts, path + ".counts");
      if (!c) return fail(c.error());
      auto r = rd.repair(**repair, path + ".repair");
      if (!r) return fail(r.error());
      if (is_node) {
        auto node_gpus = rd.count_at(v, path, "gpus");
        if (!node_gpus) return fail(node_gpus.error());
        s.nodes.push_back(NodeStats{(*name)->get<std::string>(), static_cast<unsigned>(*node_gpus),
                                    *days, *c, std::move(*r)});
      } else {
        auto node = rd.member(v, path, "node");
        if (!node) return fail(node.error());
        if (!(*node)->is_string()) return fail(rd.bad(path + ".node", "expected a string"));
        s.gpu_list.push_back(GpuStats{(*name)->get<std::string>(), (*node)->get<std::string>(),
                                      *days, *c, std::move(*r)});
      }
    }
  }
  std::sort(s.nodes.begin(), s.nodes.end(),
            [](const NodeStats& a, const NodeStats& b) { return a.node < b.node; });
  return s;
}

Result<FailureStats> parse_stats(std::string_view text, std::string_view where) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    return fail(Error::parse("not JSON (a cardiac.failure-stats/v1 file is)", std::string(where)));
  }
  return from_json(j, where);
}

std::string to_csv(const FailureStats& s, By by) {
  std::string out =
      "by,key,title,count,gpu_days,per_1000_gpu_days,per_1000_low,per_1000_high,mtbi_hours,"
      "mtbi_low_hours,mtbi_high_hours,repairs,mttr_mean_hours,mttr_median_hours,mttr_p90_hours,"
      "repair_lognormal_mu,repair_lognormal_sigma\n";
  const char* by_name = by == By::kClass ? "class" : by == By::kNode ? "node" : "gpu";
  auto line = [&](const char* kind, const Row& r) {
    const RateFigures& f = r.rate;
    const RepairFigures& p = r.repair;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", kind, quoted(r.key),
                       quoted(r.title), f.count, cell(f.gpu_days), cell(f.per_1000),
                       cell(f.per_1000_low), cell(f.per_1000_high), cell(f.mtbi_hours),
                       cell(f.mtbi_low), cell(f.mtbi_high), p.n, cell(p.mean_hours),
                       cell(p.median_hours), cell(p.p90_hours), cell(p.mu), cell(p.sigma));
  };
  for (const Row& r : rows(s, by)) line(by_name, r);
  line("all", overall(s));
  return out;
}

}  // namespace cardiac::failstats
