// SPDX-License-Identifier: Apache-2.0
// GpuReading <-> JSON.
#include "nvml/gpu_json.h"

#include "core/format.h"

namespace cardiac::nvml {
namespace {

template <class T>
void put(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <class T>
Status get(const nlohmann::json& j, const char* key, std::optional<T>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception& e) {
    return fail(Error::parse(fmt::format("bad value for \"{}\": {}", key, e.what())));
  }
  return {};
}

std::string get_string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<DeviceHealth> device_health_from_name(std::string_view name) {
  for (auto h : {DeviceHealth::kOk, DeviceHealth::kLost, DeviceHealth::kResetRequired,
                 DeviceHealth::kError, DeviceHealth::kUnresponsive, DeviceHealth::kNotSampled}) {
    if (device_health_name(h) == name) return h;
  }
  return fail(Error::parse(fmt::format("unknown device health \"{}\"", name)));
}

nlohmann::json to_json(const GpuReading& g) {
  nlohmann::json j;
  j["index"] = g.index;
  j["health"] = device_health_name(g.health);
  if (!g.health_detail.empty()) j["health_detail"] = g.health_detail;
  j["sampled_at_ns"] = g.sampled_at;
  j["sample_duration_us"] = g.sample_duration_us;
  if (!g.name.empty()) j["name"] = g.name;
  if (!g.uuid.empty()) j["uuid"] = g.uuid;
  if (!g.serial.empty()) j["serial"] = g.serial;
  if (!g.pci_bus_id.empty()) j["pci_bus_id"] = g.pci_bus_id;
  if (!g.vbios_version.empty()) j["vbios_version"] = g.vbios_version;
#define CARDIAC_GPU_FIELD(member, ...) put(j, #member, g.member);
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  if (g.processes_supported) {
    auto& procs = j["processes"] = nlohmann::json::array();
    for (const auto& p : g.processes) {
      nlohmann::json pj{{"pid", p.pid}, {"type", p.type}};
      put(pj, "used_memory_bytes", p.used_memory_bytes);
      if (!p.name.empty()) pj["name"] = p.name;
      if (!p.job.empty()) {
        pj["job"] = p.job;
        pj["job_source"] = p.job_source;
        pj["job_from"] = p.job_from;
      }
      if (!p.job_note.empty()) pj["job_note"] = p.job_note;
      procs.push_back(std::move(pj));
    }
  }
  if (!g.nvlinks.empty()) {
    auto& links = j["nvlinks"] = nlohmann::json::array();
    for (const auto& l : g.nvlinks) {
      nlohmann::json lj{{"link", l.link}, {"active", l.active}};
      put(lj, "version", l.version);
      put(lj, "replay_errors", l.replay_errors);
      put(lj, "recovery_errors", l.recovery_errors);
      put(lj, "crc_flit_errors", l.crc_flit_errors);
      put(lj, "crc_data_errors", l.crc_data_errors);
      if (!l.remote_pci_bus_id.empty()) lj["remote_pci_bus_id"] = l.remote_pci_bus_id;
      links.push_back(std::move(lj));
    }
  }
  if (!g.call_errors.empty()) j["call_errors"] = g.call_errors;
  return j;
}

nlohmann::json to_json(const NvmlSystem& s) {
  nlohmann::json j{{"library_path", s.library_path}, {"device_count", s.device_count}};
  if (!s.driver_version.empty()) j["driver_version"] = s.driver_version;
  if (!s.nvml_version.empty()) j["nvml_version"] = s.nvml_version;
  put(j, "cuda_driver_version", s.cuda_driver_version);
  return j;
}

Result<GpuReading> gpu_reading_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return fail(Error::parse("GPU reading is not a JSON object"));
  GpuReading g;
  try {
    g.index = j.at("index").get<unsigned>();
    auto health = device_health_from_name(j.value("health", "ok"));
    if (!health) return fail(health.error());
    g.health = *health;
    g.health_detail = get_string(j, "health_detail");
    g.sampled_at = j.value("sampled_at_ns", TimeNs{0});
    g.sample_duration_us = j.value("sample_duration_us", std::int64_t{0});
    g.name = get_string(j, "name");
    g.uuid = get_string(j, "uuid");
    g.serial = get_string(j, "serial");
    g.pci_bus_id = get_string(j, "pci_bus_id");
    g.vbios_version = get_string(j, "vbios_version");
#define CARDIAC_GPU_FIELD(member, ...) CARDIAC_TRY(get(j, #member, g.member));
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
    if (auto it = j.find("processes"); it != j.end() && it->is_array()) {
      g.processes_supported = true;
      for (const auto& pj : *it) {
        GpuProcess p;
        p.pid = pj.at("pid").get<std::uint32_t>();
        p.type = pj.value("type", "compute");
        p.name = pj.value("name", "");
        p.job = pj.value("job", "");
        p.job_source = pj.value("job_source", "");
        p.job_from = pj.value("job_from", "");
        p.job_note = pj.value("job_note", "");
        CARDIAC_TRY(get(pj, "used_memory_bytes", p.used_memory_bytes));
        g.processes.push_back(std::move(p));
      }
    }
    if (auto it = j.find("nvlinks"); it != j.end() && it->is_array()) {
      for (const auto& lj : *it) {
        NvLink l;
        l.link = lj.at("link").get<unsigned>();
        l.active = lj.value("active", false);
        CARDIAC_TRY(get(lj, "version", l.version));
        CARDIAC_TRY(get(lj, "replay_errors", l.replay_errors));
        CARDIAC_TRY(get(lj, "recovery_errors", l.recovery_errors));
        CARDIAC_TRY(get(lj, "crc_flit_errors", l.crc_flit_errors));
        CARDIAC_TRY(get(lj, "crc_data_errors", l.crc_data_errors));
        l.remote_pci_bus_id = get_string(lj, "remote_pci_bus_id");
        g.nvlinks.push_back(l);
      }
    }
    if (auto it = j.find("call_errors"); it != j.end() && it->is_object()) {
      g.call_errors = it->get<std::map<std::string, std::string>>();
    }
  } catch (const nlohmann::json::exception& e) {
    return fail(Error::parse(fmt::format("malformed GPU reading: {}", e.what())));
  }
  return g;
}

Result<NvmlSystem> nvml_system_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return fail(Error::parse("NVML system is not a JSON object"));
  NvmlSystem s;
  s.library_path = get_string(j, "library_path");
  s.driver_version = get_string(j, "driver_version");
  s.nvml_version = get_string(j, "nvml_version");
  CARDIAC_TRY(get(j, "cuda_driver_version", s.cuda_driver_version));
  std::optional<unsigned> count;
  CARDIAC_TRY(get(j, "device_count", count));
  s.device_count = count.value_or(0);
  return s;
}

}  // namespace cardiac::nvml
