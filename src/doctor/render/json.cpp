// SPDX-License-Identifier: Apache-2.0
// The "cardiac.doctor/v1" JSON form of a report; docs/doctor.md is the contract.
#include <cmath>

#include "core/time.h"
#include "doctor/render/render.h"
#include "netproc/json.h"

namespace cardiac::doctor {
namespace {

using nlohmann::json;

constexpr std::size_t kTalkersInJson = 10;  // the top talkers in the report's `traffic`

// Kernel logs can hold any byte and dump() throws on invalid UTF-8, so every string is made
// valid on the way in.
json str(const std::string& s) {
  return detail::valid_utf8(s);
}

// The contract says absent is null: an empty string is never written as "".
json str_or_null(const std::string& s) {
  return s.empty() ? json(nullptr) : str(s);
}

json str_array(const std::vector<std::string>& v) {
  json a = json::array();
  for (const auto& s : v) a.push_back(str(s));
  return a;
}

template <class T>
json opt_or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json time_or_null(const std::optional<TimeNs>& t) {
  return t ? json(format_iso8601(*t)) : json(nullptr);
}

// NaN and infinities are not JSON numbers; a sensor that produced one has no value.
json number_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

// Bus ids are compared as strings by consumers, so every id leaves here in one form. A value
// that is not a bus id at all is passed through rather than dropped: it is still evidence.
json bus_id(const std::string& id) {
  if (id.empty()) return nullptr;
  std::string n = kmsg::normalize_kernel_bus_id(id);
  return n.empty() ? str(id) : json(n);
}

json gpu_json(const GpuRef& g) {
  return json{{"index", opt_or_null(g.index)},
              {"pci_bus_id", bus_id(g.pci_bus_id)},
              {"uuid", str_or_null(g.uuid)},
              {"serial", str_or_null(g.serial)},
              {"name", str_or_null(g.name)}};
}

json evidence_json(const Evidence& e) {
  json series = json::array();
  for (const auto& [t, v] : e.series)
    series.push_back(json::array({format_iso8601(t), number_or_null(v)}));
  return json{{"kind", str(e.kind)},
              {"text", str(e.text)},
              {"time", time_or_null(e.time)},
              {"source", str_or_null(e.source)},
              {"metric", str_or_null(e.metric)},
              {"unit", str_or_null(e.unit)},
              {"threshold", e.threshold ? number_or_null(*e.threshold) : json(nullptr)},
              {"series", std::move(series)}};
}

json cross_check_json(const std::optional<CrossCheckPlan>& plan) {
  if (!plan) return nullptr;
  json outcomes = json::array();
  for (const auto& o : plan->outcomes) {
    outcomes.push_back(json{{"observation", str(o.observation)}, {"meaning", str(o.meaning)}});
  }
  return json{{"steps", str_array(plan->steps)},
              {"outcomes", std::move(outcomes)},
              {"physical_checks", str_array(plan->physical_checks)},
              {"environment", str_or_null(plan->environment)}};
}

json sources_json(const Sources& s) {
  return json{{"live", s.live},
              {"root", str(s.root)},
              {"kmsg", str_or_null(s.kmsg)},
              {"db", str_or_null(s.db)},
              {"window_s", static_cast<double>(s.window) / static_cast<double>(kNsPerSec)},
              {"gpu_samples", s.gpu_samples},
              {"host_samples", s.host_samples},
              {"skipped", str_array(s.skipped)},
              {"probes", str_array(s.probes)}};
}

json summary_json(const Report& r) {
  auto c = detail::count_severities(r);
  json by_category = json::object();
  for (Category cat : {Category::kHardware, Category::kDriver, Category::kResources,
                       Category::kNetwork, Category::kConfiguration, Category::kSecurity}) {
    by_category[std::string(category_name(cat))] = 0;
  }
  for (const auto& f : r.findings) {
    by_category[std::string(category_name(f.category))] =
        by_category[std::string(category_name(f.category))].get<unsigned>() + 1;
  }
  return json{{"worst", severity_name(r.worst())},
              {"findings", r.findings.size()},
              {"problems", c.warning + c.critical},
              {"by_severity", {{"info", c.info}, {"warning", c.warning}, {"critical", c.critical}}},
              {"by_category", std::move(by_category)},
              {"events", r.events.size()}};
}

}  // namespace

nlohmann::json finding_to_json(const Finding& f) {
  json evidence = json::array();
  for (const auto& e : f.evidence) evidence.push_back(evidence_json(e));
  json j{{"id", str(f.id)},
         {"category", category_name(f.category)},
         {"severity", severity_name(f.severity)},
         {"confidence", confidence_name(f.confidence)},
         {"gpu", f.gpu.empty() ? json(nullptr) : gpu_json(f.gpu)},
         {"title", str(f.title)},
         {"explanation", str(f.explanation)},
         {"evidence", std::move(evidence)},
         {"actions", str_array(f.actions)},
         {"cross_check", cross_check_json(f.cross_check)},
         {"runbook", f.runbook.empty() ? json(nullptr) : json(str(f.runbook))}};
  // Only where a job runs on the GPU, so that reports of machines without jobs keep their form.
  if (!f.jobs.empty()) {
    json jobs = json::array();
    for (const auto& job : f.jobs) jobs.push_back({{"source", job.source}, {"id", job.id}});
    j["jobs"] = std::move(jobs);
  }
  return j;
}

nlohmann::json event_to_json(const kmsg::KernelEvent& e) {
  // The SXid number shares the xid field in the model; for any other kind a stray value would
  // read as an Xid, so it is not written.
  bool numbered = e.kind == kmsg::EventKind::kXid || e.kind == kmsg::EventKind::kSxid;
  std::string bus = kmsg::normalize_kernel_bus_id(e.pci_bus_id);
  return json{{"kind", kmsg::event_kind_name(e.kind)},
              {"xid", numbered ? opt_or_null(e.xid) : json(nullptr)},
              {"pci_bus_id", str_or_null(bus)},
              {"pid", opt_or_null(e.pid)},
              {"process", str_or_null(e.process)},
              {"message", str_or_null(e.message)},
              {"time", time_or_null(e.time_ns)},
              {"monotonic_us", opt_or_null(e.monotonic_us)},
              {"severity", e.aer_severity ? json(kmsg::aer_severity_name(*e.aer_severity))
                                          : str_or_null(e.severity)},
              {"reporter", bus_id(e.reporter)},
              {"uuid", str_or_null(e.uuid)},
              {"serial", str_or_null(e.serial)},
              {"gpu_instance", opt_or_null(e.gpu_instance)},
              {"compute_instance", opt_or_null(e.compute_instance)},
              {"raw", str_or_null(e.raw)}};
}

nlohmann::json to_json(const Report& r) {
  json gpus = json::array();
  for (const auto& g : r.gpus) gpus.push_back(gpu_json(g));
  json findings = json::array();
  for (const auto& f : r.findings) findings.push_back(finding_to_json(f));
  json events = json::array();
  for (const auto& e : r.events) events.push_back(event_to_json(e));
  return json{
      {"schema", kDoctorSchema},
      {"generated_at",
       time_or_null(r.generated_at == 0 ? std::nullopt : std::optional<TimeNs>(r.generated_at))},
      {"hostname", str_or_null(r.hostname)},
      {"sources", sources_json(r.sources)},
      {"summary", summary_json(r)},
      {"gpus", std::move(gpus)},
      {"findings", std::move(findings)},
      {"events", std::move(events)},
      {"traffic", r.traffic ? netproc::to_json(*r.traffic, kTalkersInJson) : json(nullptr)}};
}

}  // namespace cardiac::doctor
