// SPDX-License-Identifier: Apache-2.0
// Validation of scenario objects against the keys the fake understands.
#include "schema.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string_view>

#include "codes.h"

namespace fake {
namespace {

enum class Kind { kString, kU32, kU64, kBool, kState, kReturns, kProcesses, kNvlinks, kIgnored };

struct Key {
  std::string_view name;
  Kind kind;
};

constexpr unsigned long long kU32Max = std::numeric_limits<std::uint32_t>::max();
constexpr unsigned long long kU64Max = std::numeric_limits<std::uint64_t>::max();

constexpr std::array kDeviceKeys{
    Key{"name", Kind::kString},
    Key{"uuid", Kind::kString},
    Key{"serial", Kind::kString},
    Key{"vbios_version", Kind::kString},
    Key{"pci_bus_id", Kind::kString},
    Key{"pci_device_id", Kind::kU32},
    Key{"pci_subsystem_id", Kind::kU32},
    Key{"minor_number", Kind::kU32},
    Key{"persistence_mode", Kind::kBool},
    Key{"mig_mode", Kind::kBool},
    Key{"utilization_gpu", Kind::kU32},
    Key{"utilization_memory", Kind::kU32},
    Key{"memory_total", Kind::kU64},
    Key{"memory_used", Kind::kU64},
    Key{"memory_free", Kind::kU64},
    Key{"memory_reserved", Kind::kU64},
    Key{"temperature", Kind::kU32},
    Key{"temperature_slowdown", Kind::kU32},
    Key{"temperature_shutdown", Kind::kU32},
    Key{"temperature_memory_max", Kind::kU32},
    Key{"temperature_gpu_max", Kind::kU32},
    Key{"fan_speed", Kind::kU32},
    Key{"power_usage_mw", Kind::kU32},
    Key{"power_limit_mw", Kind::kU32},
    Key{"power_default_limit_mw", Kind::kU32},
    Key{"energy_mj", Kind::kU64},
    Key{"clock_sm_mhz", Kind::kU32},
    Key{"clock_mem_mhz", Kind::kU32},
    Key{"clock_graphics_mhz", Kind::kU32},
    Key{"clock_sm_max_mhz", Kind::kU32},
    Key{"clock_mem_max_mhz", Kind::kU32},
    Key{"app_clock_graphics_mhz", Kind::kU32},
    Key{"app_clock_memory_mhz", Kind::kU32},
    Key{"default_app_clock_graphics_mhz", Kind::kU32},
    Key{"default_app_clock_memory_mhz", Kind::kU32},
    Key{"clock_event_reasons", Kind::kU64},
    Key{"pstate", Kind::kU32},
    Key{"ecc_enabled", Kind::kBool},
    Key{"ecc_pending_enabled", Kind::kBool},
    Key{"ecc_volatile_corrected", Kind::kU64},
    Key{"ecc_volatile_uncorrected", Kind::kU64},
    Key{"ecc_aggregate_corrected", Kind::kU64},
    Key{"ecc_aggregate_uncorrected", Kind::kU64},
    Key{"retired_pages_sbe", Kind::kU32},
    Key{"retired_pages_dbe", Kind::kU32},
    Key{"retired_pages_pending", Kind::kBool},
    Key{"remapped_rows_corrected", Kind::kU32},
    Key{"remapped_rows_uncorrected", Kind::kU32},
    Key{"remapped_rows_pending", Kind::kBool},
    Key{"remapped_rows_failure", Kind::kBool},
    Key{"recovery_action", Kind::kU32},
    Key{"pcie_gen_current", Kind::kU32},
    Key{"pcie_gen_max", Kind::kU32},
    Key{"pcie_width_current", Kind::kU32},
    Key{"pcie_width_max", Kind::kU32},
    Key{"pcie_replay_counter", Kind::kU32},
    Key{"pcie_tx_kb_per_s", Kind::kU32},
    Key{"pcie_rx_kb_per_s", Kind::kU32},
    Key{"processes", Kind::kProcesses},
    Key{"nvlinks", Kind::kNvlinks},
    Key{"supported_event_types", Kind::kU64},
    Key{"state", Kind::kState},
    Key{"returns", Kind::kReturns},
    Key{"comment", Kind::kIgnored},
};

constexpr std::array kSystemKeys{
    Key{"description", Kind::kIgnored},     Key{"comment", Kind::kIgnored},
    Key{"driver_version", Kind::kString},   Key{"nvml_version", Kind::kString},
    Key{"cuda_driver_version", Kind::kU32}, Key{"init_return", Kind::kReturns},
    Key{"returns", Kind::kReturns},
};

std::string at(const std::string& where, std::string_view key) {
  return where.empty() ? std::string(key) : where + "." + std::string(key);
}

void expect_object(const Json& v, const std::string& where) {
  if (!v.is_object())
    throw SchemaError((where.empty() ? "the document" : where) + ": expected an object");
}

void validate_returns(Json& returns, const std::string& where, bool allow_null) {
  expect_object(returns, where);
  for (auto& [fn, code] : returns.items()) {
    if (code.is_null() && allow_null) continue;
    code = parse_code(code, at(where, fn));
  }
}

void validate_processes(const Json& list, const std::string& where) {
  if (!list.is_array()) throw SchemaError(where + ": expected an array of processes");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const Json& p = list[i];
    expect_object(p, w);
    if (!p.contains("pid")) throw SchemaError(w + ": missing \"pid\"");
    for (const auto& [key, value] : p.items()) {
      if (key == "pid") {
        parse_uint(value, at(w, key), kU32Max);
      } else if (key == "used_memory_bytes") {
        parse_uint(value, at(w, key), kU64Max);
      } else if (key == "growth_since") {
        parse_seconds(value, at(w, key));
      } else if (key == "used_memory_growth_bytes_per_s") {
        if (!value.is_number() || value.get<double>() < 0) {
          throw SchemaError(at(w, key) + ": expected a non-negative number of bytes per second");
        }
      } else if (key == "type") {
        if (value != "compute" && value != "graphics" && value != "compute+graphics") {
          throw SchemaError(at(w, key) +
                            ": expected \"compute\", \"graphics\" or "
                            "\"compute+graphics\"");
        }
      } else if (key != "comment") {
        throw SchemaError(at(w, key) + ": unknown process key");
      }
    }
  }
}

void validate_nvlinks(const Json& list, const std::string& where) {
  if (!list.is_array()) throw SchemaError(where + ": expected an array of links");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const Json& l = list[i];
    expect_object(l, w);
    if (!l.contains("link")) throw SchemaError(w + ": missing \"link\"");
    for (const auto& [key, value] : l.items()) {
      if (key == "link") {
        parse_uint(value, at(w, key), 63);
      } else if (key == "active") {
        if (!value.is_boolean()) throw SchemaError(at(w, key) + ": expected true or false");
      } else if (key == "version") {
        parse_uint(value, at(w, key), kU32Max);
      } else if (key == "replay_errors" || key == "recovery_errors" || key == "crc_flit_errors" ||
                 key == "crc_data_errors") {
        parse_uint(value, at(w, key), kU64Max);
      } else if (key == "remote_pci_bus_id") {
        unsigned domain = 0, bus = 0, dev = 0, fn = 0;
        if (!value.is_string() || std::sscanf(value.get<std::string>().c_str(), "%x:%x:%x.%x",
                                              &domain, &bus, &dev, &fn) != 4) {
          throw SchemaError(at(w, key) + ": expected \"DDDDDDDD:BB:DD.F\" (hex)");
        }
      } else if (key != "comment") {
        throw SchemaError(at(w, key) + ": unknown nvlink key");
      }
    }
  }
}

template <std::size_t N>
void validate_keys(Json& obj, const std::array<Key, N>& keys, const std::string& where,
                   bool allow_null) {
  expect_object(obj, where);
  for (auto& [name, value] : obj.items()) {
    const Key* key = nullptr;
    for (const auto& k : keys) {
      if (k.name == name) key = &k;
    }
    const std::string w = at(where, name);
    if (!key) throw SchemaError(w + ": unknown key");
    if (value.is_null() && allow_null) continue;
    switch (key->kind) {
      case Kind::kString:
        if (!value.is_string()) throw SchemaError(w + ": expected a string");
        break;
      case Kind::kU32:
        parse_uint(value, w, kU32Max);
        break;
      case Kind::kU64:
        parse_uint(value, w, kU64Max);
        break;
      case Kind::kBool:
        if (!value.is_boolean()) throw SchemaError(w + ": expected true or false");
        break;
      case Kind::kState:
        if (value != "ok" && value != "lost" && value != "reset_required" &&
            value != "unknown_error") {
          throw SchemaError(w +
                            ": expected \"ok\", \"lost\", \"reset_required\" or "
                            "\"unknown_error\"");
        }
        break;
      case Kind::kReturns:
        if (name == "init_return") {
          value = parse_code(value, w);
        } else {
          validate_returns(value, w, allow_null);
        }
        break;
      case Kind::kProcesses:
        validate_processes(value, w);
        break;
      case Kind::kNvlinks:
        validate_nvlinks(value, w);
        break;
      case Kind::kIgnored:
        break;
    }
  }
}

}  // namespace

void validate_device(Json& device, const std::string& where, bool allow_null) {
  validate_keys(device, kDeviceKeys, where, allow_null);
  if (device.contains("pci_bus_id") && device["pci_bus_id"].is_string()) {
    unsigned domain = 0, bus = 0, dev = 0, fn = 0;
    const std::string id = device["pci_bus_id"].get<std::string>();
    if (std::sscanf(id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) {
      throw SchemaError(at(where, "pci_bus_id") + ": expected \"DDDDDDDD:BB:DD.F\" (hex)");
    }
  }
}

void validate_system(Json& system, const std::string& where, bool allow_null) {
  validate_keys(system, kSystemKeys, where, allow_null);
}

int parse_code(const Json& value, const std::string& where) {
  if (value.is_number_integer()) return value.get<int>();
  if (value.is_string()) {
    if (auto code = code_from_name(value.get<std::string>())) return *code;
    throw SchemaError(where + ": unknown NVML return code \"" + value.get<std::string>() +
                      "\" (use names like NOT_SUPPORTED, GPU_IS_LOST, or an integer)");
  }
  throw SchemaError(where + ": expected a return-code name or an integer");
}

double parse_seconds(const Json& value, const std::string& where) {
  if (!value.is_number() || value.get<double>() < 0) {
    throw SchemaError(where + ": expected a non-negative number of seconds");
  }
  return value.get<double>();
}

unsigned long long parse_uint(const Json& value, const std::string& where, unsigned long long max) {
  const bool ok =
      value.is_number_unsigned() || (value.is_number_integer() && value.get<long long>() >= 0);
  if (!ok || value.get<unsigned long long>() > max) {
    throw SchemaError(where + ": expected an integer from 0 to " + std::to_string(max));
  }
  return value.get<unsigned long long>();
}

}  // namespace fake
