// SPDX-License-Identifier: Apache-2.0
// Scenario loading (JSON, or TOML converted to the same JSON tree) and timeline application.
#include "scenario.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "schema.h"

namespace fake {
namespace {

struct ParseError {
  std::string message;
};

Json to_json(const toml::node& node) {
  if (const auto* table = node.as_table()) {
    Json out = Json::object();
    for (const auto& [key, value] : *table) out[std::string(key.str())] = to_json(value);
    return out;
  }
  if (const auto* array = node.as_array()) {
    Json out = Json::array();
    for (const auto& value : *array) out.push_back(to_json(value));
    return out;
  }
  if (const auto* v = node.as_string()) return v->get();
  if (const auto* v = node.as_integer()) return v->get();
  if (const auto* v = node.as_floating_point()) return v->get();
  if (const auto* v = node.as_boolean()) return v->get();
  // Dates and times have no meaning in a scenario; keeping their text lets validation name them.
  std::ostringstream text;
  node.visit([&](const auto& n) { text << n; });
  return text.str();
}

std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

Json parse_text(const std::string& path, const std::string& text) {
  const bool is_toml = path.size() >= 5 && path.compare(path.size() - 5, 5, ".toml") == 0;
  if (is_toml) {
    try {
      return to_json(toml::parse(text, path));
    } catch (const toml::parse_error& e) {
      const auto& begin = e.source().begin;
      throw ParseError{path + ":" + std::to_string(begin.line) + ":" +
                       std::to_string(begin.column) +
                       ": TOML syntax error: " + std::string(e.description())};
    }
  }
  try {
    return Json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const Json::parse_error& e) {
    // e.byte counts from 1 and points just past the offending character.
    auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string what = e.what();
    if (auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    throw ParseError{path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": JSON syntax error: " + what};
  }
}

std::optional<unsigned> device_ref(const Json& entry, const std::string& where, std::size_t count) {
  if (!entry.contains("device")) return std::nullopt;
  const auto index = parse_uint(entry["device"], where + ".device", 1u << 20);
  if (index >= count) {
    throw SchemaError(where + ".device: no device " + std::to_string(index) +
                      " (the scenario has " + std::to_string(count) + ")");
  }
  return static_cast<unsigned>(index);
}

void check_keys(const Json& entry, const std::string& where,
                std::initializer_list<std::string_view> allowed) {
  if (!entry.is_object()) throw SchemaError(where + ": expected an object");
  for (const auto& [key, value] : entry.items()) {
    if (key != "comment" && std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      throw SchemaError(where + "." + key + ": unknown key");
    }
  }
}

TimelineEntry parse_timeline_entry(Json entry, const std::string& w, std::size_t count) {
  check_keys(entry, w, {"at", "device", "set", "unset", "set_system"});
  TimelineEntry t;
  t.at = parse_seconds(entry.value("at", Json()), w + ".at");
  t.device = device_ref(entry, w, count);
  if (entry.contains("set")) {
    t.set = entry["set"];
    validate_device(t.set, w + ".set", /*allow_null=*/true);
  }
  if (entry.contains("unset")) {
    if (!entry["unset"].is_array()) throw SchemaError(w + ".unset: expected an array of keys");
    for (const auto& key : entry["unset"]) {
      Json probe = {{key.is_string() ? key.get<std::string>() : std::string("?"), nullptr}};
      validate_device(probe, w + ".unset", /*allow_null=*/true);
      t.unset.push_back(key.get<std::string>());
    }
  }
  if (entry.contains("set_system")) {
    t.set_system = entry["set_system"];
    validate_system(t.set_system, w + ".set_system", /*allow_null=*/true);
  }
  return t;
}

unsigned long long event_type(const Json& v, const std::string& where) {
  if (v.is_number_integer()) return parse_uint(v, where, ~0ull);
  static const std::pair<std::string_view, unsigned long long> kTypes[] = {
      {"sbe", 0x1}, {"dbe", 0x2}, {"pstate", 0x4}, {"xid", 0x8}, {"clock", 0x10}};
  for (const auto& [name, bit] : kTypes) {
    if (v.is_string() && v.get<std::string>() == name) return bit;
  }
  throw SchemaError(where + ": expected \"xid\", \"dbe\", \"sbe\", \"pstate\", \"clock\" or a bit");
}

Event parse_event(const Json& entry, const std::string& w, std::size_t count) {
  check_keys(entry, w, {"at", "device", "type", "data"});
  Event e;
  e.at = parse_seconds(entry.value("at", Json()), w + ".at");
  auto device = device_ref(entry, w, count);
  if (!device) throw SchemaError(w + ": missing \"device\"");
  e.device = *device;
  e.type = event_type(entry.value("type", Json()), w + ".type");
  if (entry.contains("data")) e.data = parse_uint(entry["data"], w + ".data", ~0ull);
  return e;
}

Hang parse_hang(const Json& entry, const std::string& w, std::size_t count) {
  check_keys(entry, w, {"function", "device", "seconds", "after", "until"});
  Hang h;
  if (!entry.contains("function") || !entry["function"].is_string()) {
    throw SchemaError(w + ".function: expected an exported NVML function name");
  }
  h.function = entry["function"].get<std::string>();
  h.device = device_ref(entry, w, count);
  h.seconds = parse_seconds(entry.value("seconds", Json()), w + ".seconds");
  if (entry.contains("after")) h.after = parse_seconds(entry["after"], w + ".after");
  if (entry.contains("until")) h.until = parse_seconds(entry["until"], w + ".until");
  return h;
}

template <class T, class F>
std::vector<T> parse_list(const Json& doc, const char* key, F parse) {
  std::vector<T> out;
  if (!doc.contains(key)) return out;
  if (!doc[key].is_array()) throw SchemaError(std::string(key) + ": expected an array");
  for (std::size_t i = 0; i < doc[key].size(); ++i) {
    out.push_back(parse(doc[key][i], std::string(key) + "[" + std::to_string(i) + "]"));
  }
  std::stable_sort(out.begin(), out.end(), [](const T& a, const T& b) { return a.at < b.at; });
  return out;
}

Scenario build(Json doc, const std::string& path) {
  if (!doc.is_object()) throw SchemaError("the document must be an object");
  Scenario s;
  s.path = path;
  for (auto& [key, value] : doc.items()) {
    if (key != "devices" && key != "timeline" && key != "events" && key != "hangs") {
      s.system[key] = value;
    }
  }
  validate_system(s.system, "", /*allow_null=*/false);
  if (doc.contains("devices")) {
    if (!doc["devices"].is_array()) throw SchemaError("devices: expected an array");
    if (doc["devices"].size() > kMaxDevices) {
      throw SchemaError("devices: at most " + std::to_string(kMaxDevices) + " devices");
    }
    for (std::size_t i = 0; i < doc["devices"].size(); ++i) {
      Json device = doc["devices"][i];
      validate_device(device, "devices[" + std::to_string(i) + "]", /*allow_null=*/false);
      s.devices.push_back(std::move(device));
    }
  }
  const std::size_t n = s.devices.size();
  s.timeline = parse_list<TimelineEntry>(doc, "timeline", [n](const Json& e, const std::string& w) {
    return parse_timeline_entry(e, w, n);
  });
  s.events = parse_list<Event>(
      doc, "events", [n](const Json& e, const std::string& w) { return parse_event(e, w, n); });
  if (doc.contains("hangs")) {
    if (!doc["hangs"].is_array()) throw SchemaError("hangs: expected an array");
    for (std::size_t i = 0; i < doc["hangs"].size(); ++i) {
      s.hangs.push_back(parse_hang(doc["hangs"][i], "hangs[" + std::to_string(i) + "]", n));
    }
  }
  return s;
}

void merge(Json& target, const Json& patch) {
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else if (key == "returns" && target.contains(key)) {
      merge(target[key], value);  // so one entry can add a code without repeating the others
    } else {
      target[key] = value;
    }
  }
}

}  // namespace

LoadResult load_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {std::nullopt, path + ": cannot open the scenario file"};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return {std::nullopt, path + ": cannot read the scenario file"};
  try {
    return {build(parse_text(path, buffer.str()), path), ""};
  } catch (const ParseError& e) {
    return {std::nullopt, e.message};
  } catch (const SchemaError& e) {
    return {std::nullopt, path + ": " + e.what()};
  } catch (const Json::exception& e) {
    return {std::nullopt, path + ": " + e.what()};
  }
}

std::size_t entries_due(const Scenario& scenario, double t) {
  auto it = std::upper_bound(scenario.timeline.begin(), scenario.timeline.end(), t,
                             [](double value, const TimelineEntry& e) { return value < e.at; });
  return static_cast<std::size_t>(it - scenario.timeline.begin());
}

View make_view(const Scenario& scenario, std::size_t applied) {
  View view{scenario.system, scenario.devices};
  for (std::size_t i = 0; i < applied && i < scenario.timeline.size(); ++i) {
    const TimelineEntry& entry = scenario.timeline[i];
    merge(view.system, entry.set_system);
    for (std::size_t d = 0; d < view.devices.size(); ++d) {
      if (entry.device && *entry.device != d) continue;
      merge(view.devices[d], entry.set);
      for (const auto& key : entry.unset) view.devices[d].erase(key);
    }
  }
  return view;
}

std::string_view family_name(std::string_view function) {
  auto v = function.rfind("_v");
  if (v == std::string_view::npos || v + 2 == function.size()) return function;
  for (char c : function.substr(v + 2)) {
    if (c < '0' || c > '9') return function;
  }
  return function.substr(0, v);
}

std::optional<int> lookup_return(const Json& returns, std::string_view function) {
  if (!returns.is_object()) return std::nullopt;
  for (std::string_view name : {function, family_name(function)}) {
    auto it = returns.find(name);
    if (it != returns.end() && it->is_number_integer()) return it->get<int>();
  }
  return std::nullopt;
}

}  // namespace fake
