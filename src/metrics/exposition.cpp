// SPDX-License-Identifier: Apache-2.0
// Walks the metric registry over a status report and writes Prometheus text format 0.0.4.
#include "metrics/exposition.h"

#include <array>
#include <cmath>
#include <initializer_list>
#include <set>
#include <type_traits>
#include <vector>

#include "core/format.h"
#include "nvml/clock_events.h"
#include "nvml/pci.h"

// GCC before 13 warns about members left out of a designated initializer even when they
// have default member initializers (GCC bug 96868); the rows rely on those defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cardiac::metrics {
namespace {

// Appends `v` escaped as a label value: a run without \\, " or a newline goes in one piece.
void append_label_value(std::string& out, std::string_view v) {
  for (;;) {
    const auto special = v.find_first_of("\\\"\n");
    out.append(v.substr(0, special));
    if (special == std::string_view::npos) return;
    const char c = v[special];
    out += '\\';
    out += c == '\n' ? 'n' : c;
    v.remove_prefix(special + 1);
  }
}

// Appends a sample value as format_value() writes it, without a string of its own.
void append_value(std::string& out, double v) {
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  // Counters and byte sizes are integers: print them as such rather than as 8e+10, which
  // parses the same but reads worse. 2^53 bounds where a double still holds every integer.
  if (std::nearbyint(v) == v && std::fabs(v) < 9007199254740992.0) {
    fmt::format_int digits(static_cast<std::int64_t>(v));
    out.append(digits.data(), digits.size());
    return;
  }
  std::array<char, 32> buf{};  // the shortest round-trip form of a double is at most 24
  auto* end = fmt::format_to_n(buf.data(), buf.size(), "{}", v).out;
  out.append(buf.data(), end);
}

}  // namespace

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  append_label_value(out, v);
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (;;) {
    const auto special = v.find_first_of("\\\n");
    out.append(v.substr(0, special));
    if (special == std::string_view::npos) return out;
    out += '\\';
    out += v[special] == '\n' ? 'n' : '\\';
    v.remove_prefix(special + 1);
  }
}

std::string format_value(double v) {
  std::string out;
  append_value(out, v);
  return out;
}

std::string dcgm_bus_id(std::string_view bus_id) {
  std::string out;
  // dcgm-exporter shows NVML's legacy form: an 8-digit domain and upper-case hex.
  auto colon = bus_id.find(':');
  if (colon != std::string_view::npos && colon < 8 && bus_id.find(':', colon + 1) != bus_id.npos) {
    out.assign(8 - colon, '0');
  }
  for (char c : bus_id) out += (c >= 'a' && c <= 'f') ? static_cast<char>(c - 'a' + 'A') : c;
  return out;
}

namespace {

using Labels = std::vector<std::pair<std::string_view, std::string>>;

struct Family {
  std::string help;
  MetricType type = MetricType::kGauge;
  std::string lines;  // every series line of the family, each ending in '\n'
};

// Labels as they go between the braces, `k="v",k="v"`, values escaped and empty ones left out
// (an empty label value is the same as no label to Prometheus; leaving it out keeps the output
// short: a lost GPU may have no UUID). Made once per label set rather than once per series:
// a GPU's five labels appear on every one of its ~50 series.
std::string render_labels(const Labels& labels) {
  std::string out;
  for (const auto& [k, val] : labels) {
    if (val.empty()) continue;
    if (!out.empty()) out += ',';
    out += k;
    out += "=\"";
    out += escape_label_value(val);
    out += '"';
  }
  return out;
}

// A label written after a series' rendered set, its value escaped as it is written; an empty
// value is left out, as render_labels() does.
struct Extra {
  std::string_view key;
  std::string_view value;
};

// The series of each family, made into the text in name order at the end. A scrape of an
// 8-GPU node writes about 500 series: each goes straight into its family's text, with no
// string of its own for the value or the added labels.
using Families = std::map<std::string, Family, std::less<>>;

class Writer {
 public:
  // Writes into `families`, which may hold an earlier render's: their text is cleared and
  // their buffers kept (a family's name fixes its HELP and TYPE).
  explicit Writer(Families& families) : families_(families) {
    for (auto& [name, f] : families_) f.lines.clear();
  }

  // Adds one series with labels from render_labels() and `extra` after them; an absent or NaN
  // value adds nothing, so the family may end up empty. `help` is the HELP text, or a function
  // that makes it (called once, when the family is made).
  template <class Help, class Extras = std::initializer_list<Extra>>
  void add(std::string_view name, const Help& help, MetricType type, std::string_view labels,
           std::optional<double> raw, Scale scale, const Extras& extra = {}) {
    if (!raw) return;
    double v = scale.apply(*raw);
    if (std::isnan(v)) return;
    line(family(name, type, help), name, labels, extra, v);
  }

  // A histogram: cumulative _bucket series (le), then _sum and _count, under one family.
  void add_histogram(std::string_view name, std::string_view help, std::string_view base,
                     const std::vector<double>& bounds, const std::vector<std::uint64_t>& counts,
                     double sum) {
    Family& f = family(name, MetricType::kHistogram, help);
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      cumulative += counts[i];
      const std::string le = i < bounds.size() ? format_value(bounds[i]) : "+Inf";
      line(f, bucket, base, {Extra{"le", le}}, static_cast<double>(cumulative));
    }
    line(f, std::string(name) + "_sum", base, {}, sum);
    line(f, std::string(name) + "_count", base, {}, static_cast<double>(cumulative));
  }

  std::string str() const {
    std::size_t size = 0;
    for (const auto& [name, f] : families_)
      size += f.lines.size() + f.help.size() + 2 * name.size() + 32;
    std::string out;
    out.reserve(size);
    for (const auto& [name, f] : families_) {  // std::map: sorted by name
      if (f.lines.empty()) continue;
      out += "# HELP ";
      out += name;
      out += ' ';
      out += f.help;
      out += "\n# TYPE ";
      out += name;
      out += ' ';
      out += metric_type_name(f.type);
      out += '\n';
      out += f.lines;
    }
    return out;
  }

 private:
  // A family's text starts with room for a few lines; most families have one per GPU.
  static constexpr std::size_t kFamilyReserve = 512;

  template <class Help>
  Family& family(std::string_view name, MetricType type, const Help& help) {
    auto it = families_.find(name);
    if (it != families_.end()) return it->second;
    Family f;
    if constexpr (std::is_invocable_v<Help>) {
      f.help = escape_help(help());
    } else {
      f.help = escape_help(help);
    }
    f.type = type;
    f.lines.reserve(kFamilyReserve);
    return families_.emplace(std::string(name), std::move(f)).first->second;
  }

  template <class Extras>
  static void line(Family& f, std::string_view name, std::string_view labels, const Extras& extra,
                   double v) {
    std::string& out = f.lines;
    out += name;
    bool open = false;
    auto next = [&] {
      out += open ? ',' : '{';
      open = true;
    };
    if (!labels.empty()) {
      next();
      out += labels;
    }
    for (const Extra& e : extra) {
      if (e.value.empty()) continue;
      next();
      out += e.key;
      out += "=\"";
      append_label_value(out, e.value);
      out += '"';
    }
    if (open) out += '}';
    out += ' ';
    append_value(out, v);
    out += '\n';
  }
  static void line(Family& f, std::string_view name, std::string_view labels,
                   std::initializer_list<Extra> extra, double v) {
    line<std::initializer_list<Extra>>(f, name, labels, extra, v);
  }

  Families& families_;
};

struct GpuLabels {
  std::string native;  // rendered (render_labels)
  std::string dcgm;
};

GpuLabels gpu_labels(const health::GpuStatus& g, const health::StatusReport& r,
                     const ExpositionOptions& opt) {
  const auto& rd = g.reading;
  GpuLabels l;
  l.native = render_labels({{"gpu", std::to_string(rd.index)},
                            {"uuid", rd.uuid},
                            {"pci_bus_id", rd.pci_bus_id},
                            {"model", rd.name},
                            {"hostname", opt.hostname}});
  // dcgm-exporter's "device" is the /dev node: nvidia<minor>.
  unsigned minor = rd.minor_number.value_or(rd.index);
  l.dcgm = render_labels({{"gpu", std::to_string(rd.index)},
                          {"UUID", rd.uuid},
                          {"pci_bus_id", dcgm_bus_id(rd.pci_bus_id)},
                          {"device", fmt::format("nvidia{}", minor)},
                          {"modelName", rd.name},
                          {"Hostname", opt.hostname},
                          {"hostname", opt.hostname},
                          {"DCGM_FI_DRIVER_VERSION", r.nvml.system.driver_version}});
  return l;
}

std::string dcgm_help(const MetricDef& m) {
  return fmt::format("{} In {}; dcgm-exporter compatible name of {}.", m.help, m.dcgm.unit, m.name);
}

class Renderer {
 public:
  Renderer(const ExpositionInput& in, const ExpositionOptions& opt, Families& families)
      : in_(in), opt_(opt), w_(families) {
    host_ = render_labels({{"hostname", opt.hostname}});
    if (in.report) {
      for (const auto& g : in.report->gpus) {
        by_bus_[nvml::normalize_pci_bus_id(g.reading.pci_bus_id)] = labels_.size();
        labels_.push_back(gpu_labels(g, *in.report, opt));
      }
    }
  }

  std::string run() {
    for (const auto& m : metric_registry()) render(m);
    return w_.str();
  }

 private:
  // Native series, and the dcgm-exporter one when compat is on and the metric has one.
  void gpu_series(const MetricDef& m, std::size_t i, std::optional<double> raw) {
    w_.add(m.name, m.help, m.type, labels_[i].native, raw, m.scale);
    if (opt_.compat_dcgm && !m.dcgm.name.empty()) {
      w_.add(
          m.dcgm.name, [&] { return dcgm_help(m); }, m.dcgm.type, labels_[i].dcgm, raw,
          m.dcgm.scale);
    }
  }

  void render(const MetricDef& m) {
    const health::StatusReport* r = in_.report;
    switch (m.scope) {
      case Scope::kAgent:
        w_.add(m.name, m.help, m.type, host_, m.agent(in_.agent), m.scale);
        return;
      case Scope::kReport:
        if (r) w_.add(m.name, m.help, m.type, host_, m.report(*r), m.scale);
        return;
      case Scope::kFilesystem:
        if (!r) return;
        for (const auto& f : r->host.filesystems) {
          w_.add(m.name, m.help, m.type, host_, m.fs(f), m.scale,
                 {Extra{"mountpoint", f.mount_point}, Extra{"device", f.device},
                  Extra{"fstype", f.fs_type}});
        }
        return;
      case Scope::kNic:
        if (!r) return;
        for (const auto& n : r->host.nics) {
          w_.add(m.name, m.help, m.type, host_, m.nic(n), m.scale, {Extra{"interface", n.name}});
        }
        return;
      case Scope::kGpu:
        if (!r) return;
        for (std::size_t i = 0; i < r->gpus.size(); ++i) gpu_series(m, i, m.gpu(r->gpus[i]));
        return;
      case Scope::kClockEvent:
        if (r) clock_events(m, *r);
        return;
      case Scope::kLastXid:
        if (r && in_.xids_watched) last_xid(m, *r);
        return;
      case Scope::kXidCount:
        if (in_.xids_watched) xid_counts(m);
        return;
      case Scope::kGpuJob:
        if (r) gpu_jobs(m, *r);
        return;
      case Scope::kFaultCount:
        if (in_.xids_watched) fault_counts(m);
        return;
      case Scope::kQueue:
        if (in_.queue) w_.add(m.name, m.help, m.type, host_, m.queue(*in_.queue), m.scale);
        return;
      case Scope::kQueueState:
        if (!in_.queue) return;
        for (const auto& [state, n] : in_.queue->jobs_by_state) {
          w_.add(m.name, m.help, m.type, host_, n, m.scale, {Extra{"state", state}});
        }
        return;
      case Scope::kQueueUser:
        if (!in_.queue) return;
        for (const auto& [user, seconds] : in_.queue->user_gpu_seconds) {
          w_.add(m.name, m.help, m.type, host_, seconds, m.scale, {Extra{"user", user}});
        }
        return;
      case Scope::kQueueWait:
        if (in_.queue && !in_.queue->wait_counts.empty()) {
          w_.add_histogram(m.name, m.help, host_, in_.queue->wait_bounds, in_.queue->wait_counts,
                           in_.queue->wait_sum_seconds);
        }
        return;
      case Scope::kNodeConfig:
        if (in_.config) {
          Labels l{{"hostname", opt_.hostname}};
          for (const auto& [k, v] : in_.config->node) l.emplace_back(k, v);
          w_.add(m.name, m.help, m.type, render_labels(l), 1.0, m.scale);
        }
        return;
      case Scope::kGpuConfig:
        if (in_.config) gpu_config(m);
        return;
    }
  }

  // Labelled like the GPU's other series when the report has it (by index); before the first
  // sample, by index and host alone.
  void gpu_config(const MetricDef& m) {
    for (const auto& [index, facts] : in_.config->gpus) {
      std::string l = render_labels({{"gpu", std::to_string(index)}, {"hostname", opt_.hostname}});
      if (in_.report) {
        for (std::size_t i = 0; i < in_.report->gpus.size(); ++i) {
          if (in_.report->gpus[i].reading.index == index) l = labels_[i].native;
        }
      }
      std::vector<Extra> extra;
      for (const auto& [k, v] : facts) extra.push_back({k, v});
      w_.add(m.name, m.help, m.type, l, 1.0, m.scale, extra);
    }
  }

  void clock_events(const MetricDef& m, const health::StatusReport& r) {
    for (std::size_t i = 0; i < r.gpus.size(); ++i) {
      const auto& mask = r.gpus[i].reading.clock_event_reasons;
      if (!mask) continue;
      for (const auto& reason : nvml::clock_event_reasons()) {
        w_.add(m.name, m.help, m.type, labels_[i].native, (*mask & reason.bit) ? 1.0 : 0.0, m.scale,
               {Extra{"reason", reason.name}});
      }
    }
  }

  void last_xid(const MetricDef& m, const health::StatusReport& r) {
    std::map<std::string, int> by_bus;
    for (const auto& [bus, xid] : in_.last_xid) by_bus[nvml::normalize_pci_bus_id(bus)] = xid;
    for (std::size_t i = 0; i < r.gpus.size(); ++i) {
      const auto& rd = r.gpus[i].reading;
      std::optional<double> raw;
      if (auto it = by_bus.find(rd.pci_bus_id); it != by_bus.end() && !rd.pci_bus_id.empty()) {
        raw = it->second;
      } else if (rd.health == nvml::DeviceHealth::kOk) {
        raw = 0;  // watched and answering, no Xid seen: dcgm-exporter's 0 too
      }
      gpu_series(m, i, raw);
    }
  }

  // One series per (GPU, job): a job with several processes on a GPU is one series, a GPU
  // shared by two jobs has two.
  void gpu_jobs(const MetricDef& m, const health::StatusReport& r) {
    for (std::size_t i = 0; i < r.gpus.size(); ++i) {
      std::set<std::pair<std::string, std::string>> jobs;  // (source, id)
      for (const auto& p : r.gpus[i].reading.processes) {
        if (!p.job.empty()) jobs.emplace(p.job_source, p.job);
      }
      // The queue's own allocation: a job of ours holds the GPU whatever /proc says.
      if (in_.queue) {
        if (auto held = in_.queue->gpu_jobs.find(r.gpus[i].reading.index);
            held != in_.queue->gpu_jobs.end()) {
          for (auto id : held->second) jobs.emplace("cardiac", std::to_string(id));
        }
      }
      for (const auto& [source, job] : jobs) {
        w_.add(m.name, m.help, m.type, labels_[i].native, 1.0, m.scale,
               {Extra{"job", job}, Extra{"source", source}});
      }
    }
  }

  // The labels of the report's GPU at `bus` (normalised), or the bus id and host for a GPU
  // that has since vanished; `scratch` holds the latter.
  std::string_view bus_labels(const std::string& bus, std::string& scratch) const {
    if (auto it = by_bus_.find(bus); it != by_bus_.end() && !bus.empty()) {
      return labels_[it->second].native;
    }
    scratch = render_labels({{"pci_bus_id", bus}, {"hostname", opt_.hostname}});
    return scratch;
  }

  void xid_counts(const MetricDef& m) {
    std::string scratch;
    for (const auto& [key, count] : in_.xid_counts) {
      const std::string bus = nvml::normalize_pci_bus_id(key.first);
      const fmt::format_int xid(key.second);
      w_.add(m.name, m.help, m.type, bus_labels(bus, scratch), static_cast<double>(count), m.scale,
             {Extra{"xid", {xid.data(), xid.size()}}});
    }
  }

  // Every GPU of the report starts at 0 for every GPU class, so that the first fault of a GPU
  // is an increase for Prometheus too (increase() over a series born at 1 reads 0).
  void fault_counts(const MetricDef& m) {
    std::map<std::pair<std::string, std::string_view>, std::uint64_t> counts;  // (bus, class)
    // While the kernel log cannot be read a 0 is a claim nobody checked: only counts NVML's
    // Xid events produced are shown, the rest is absent (unknown).
    const bool zeros = in_.agent.kmsg_up.value_or(1) != 0;
    if (zeros) {
      for (const auto& [bus, i] : by_bus_) {
        if (bus.empty()) continue;
        for (const auto& c : health::fault_classes()) {
          if (c.fault_class != health::FaultClass::kSxidFatal) counts[{bus, c.name}];
        }
      }
    }
    for (const auto& [key, count] : in_.fault_counts) {
      counts[{nvml::normalize_pci_bus_id(key.first), health::fault_class_name(key.second)}] +=
          count;
    }
    std::string scratch;
    for (const auto& [key, count] : counts) {
      if (count == 0 && !zeros) continue;
      w_.add(m.name, m.help, m.type, bus_labels(key.first, scratch), static_cast<double>(count),
             m.scale, {Extra{"class", key.second}});
    }
  }

  const ExpositionInput& in_;
  const ExpositionOptions& opt_;
  std::string host_;               // rendered
  std::vector<GpuLabels> labels_;  // per report GPU, same order
  // Normalised PCI bus id → position in the report (labels_).
  std::map<std::string, std::size_t, std::less<>> by_bus_;
  Writer w_;
};

}  // namespace

struct RenderScratch::State {
  Families families;
};

RenderScratch::RenderScratch() : s_(std::make_unique<State>()) {}
RenderScratch::~RenderScratch() = default;

std::string render_metrics(const ExpositionInput& in, const ExpositionOptions& opt) {
  Families families;
  return Renderer(in, opt, families).run();
}

std::string render_metrics(const ExpositionInput& in, const ExpositionOptions& opt,
                           RenderScratch& scratch) {
  return Renderer(in, opt, scratch.s_->families).run();
}

}  // namespace cardiac::metrics
