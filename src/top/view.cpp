// SPDX-License-Identifier: Apache-2.0
#include "top/view.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "core/strings.h"

namespace cardiac::top {
namespace {

constexpr SortKey kGpuKeys[] = {{"gpu", false}, {"util", true},  {"mem", true},
                                {"temp", true}, {"power", true}, {"verdict", true}};
constexpr SortKey kProcessKeys[] = {{"memory", true}, {"gpu", false}, {"pid", false},
                                    {"user", false},  {"job", false}, {"name", false}};
constexpr SortKey kAlertKeys[] = {
    {"severity", true}, {"since", true}, {"rule", false}, {"gpu", false}};
constexpr SortKey kJobKeys[] = {
    {"state", false}, {"id", false}, {"user", false}, {"gpus", true}, {"priority", true}};

std::size_t index_of(View v) {
  return static_cast<std::size_t>(v);
}

void step_sort(ViewState& s, int delta) {
  auto keys = sort_keys(s.view);
  SortState& st = s.sort[index_of(s.view)];
  const auto n = static_cast<int>(keys.size());
  st.key = static_cast<std::size_t>(((static_cast<int>(st.key) + delta) % n + n) % n);
  st.descending = keys[st.key].descending;
}

void move_selection(ViewState& s, long delta) {
  std::size_t& sel = s.selected[index_of(s.view)];
  if (delta < 0) {
    const auto back = static_cast<std::size_t>(-delta);
    sel = sel > back ? sel - back : 0;
  } else {
    sel += static_cast<std::size_t>(delta);  // clamp_selection() bounds it by the rows
  }
}

// Removes the last UTF-8 character of `s`.
void pop_char(std::string& s) {
  while (!s.empty()) {
    const auto b = static_cast<unsigned char>(s.back());
    s.pop_back();
    if ((b & 0xC0) != 0x80) break;
  }
}

void append_code_point(std::string& s, int cp) {
  const auto c = static_cast<unsigned>(cp);
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
}

Action edit_filter(ViewState& s, int key) {
  if (key == kKeyEnter || key == '\n' || key == '\r') {
    s.filter = std::string(trim(s.draft));
    s.editing = false;
    s.selected = {};
  } else if (key == kKeyEscape) {
    s.editing = false;
  } else if (key == kKeyBackspace || key == 127 || key == 8) {
    pop_char(s.draft);
  } else if (key == 21) {  // Ctrl-U, as in a shell
    s.draft.clear();
  } else if (key >= 0x20 && key < 0x110000 && key != 0x7F) {
    if (s.draft.size() < 64) append_code_point(s.draft, key);
  } else {
    return Action::kNone;
  }
  return Action::kRedraw;
}

bool contains(std::string_view haystack, const std::string& needle_lower) {
  return to_lower(haystack).find(needle_lower) != std::string::npos;
}

bool has_gpu(const Filter& f, unsigned gpu) {
  return std::find(f.gpus.begin(), f.gpus.end(), gpu) != f.gpus.end();
}

int verdict_rank(std::string_view v) {
  return v == "FAIL" ? 2 : v == "WARN" ? 1 : v == "OK" ? 0 : -1;
}
int severity_rank(std::string_view s) {
  return s == "critical" ? 2 : s == "warning" ? 1 : s == "info" ? 0 : -1;
}
int state_rank(std::string_view s) {
  return s == "running" ? 0 : s == "cancelling" ? 1 : s == "pending" ? 2 : s == "held" ? 3 : 4;
}

// -1, 0 or 1; a missing value sorts after every present one in either direction.
template <class T>
int compare_opt(const std::optional<T>& a, const std::optional<T>& b, bool descending) {
  if (!a || !b) return a ? -1 : b ? 1 : 0;
  if (*a == *b) return 0;
  const bool less = *a < *b;
  return (less != descending) ? -1 : 1;
}

template <class Row, class Cmp>
void sort_rows(std::vector<const Row*>& rows, Cmp cmp) {
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const Row* a, const Row* b) { return cmp(*a, *b) < 0; });
}

}  // namespace

std::span<const SortKey> sort_keys(View v) {
  switch (v) {
    case View::kGpus:
      return kGpuKeys;
    case View::kProcesses:
      return kProcessKeys;
    case View::kAlerts:
      return kAlertKeys;
    case View::kQueue:
      return kJobKeys;
  }
  return kGpuKeys;
}

Action handle_key(ViewState& s, int key) {
  if (s.editing) return edit_filter(s, key);
  if (key == 'q' || key == 'Q') return Action::kQuit;
  if (s.help) {
    s.help = false;
    return Action::kRedraw;
  }
  switch (key) {
    case 'h':
    case '?':
      s.help = true;
      break;
    case '\t':
      s.view = static_cast<View>((index_of(s.view) + 1) % kViewCount);
      break;
    case kKeyBackTab:
      s.view = static_cast<View>((index_of(s.view) + kViewCount - 1) % kViewCount);
      break;
    case '1':
    case '2':
    case '3':
    case '4':
      s.view = static_cast<View>(key - '1');
      break;
    case 's':
    case kKeyRight:
      step_sort(s, 1);
      break;
    case kKeyLeft:
      step_sort(s, -1);
      break;
    case 'S':
    case 'r':
      s.sort[index_of(s.view)].descending = !s.sort[index_of(s.view)].descending;
      break;
    case kKeyUp:
    case 'k':
      move_selection(s, -1);
      break;
    case kKeyDown:
    case 'j':
      move_selection(s, 1);
      break;
    case kKeyPageUp:
      move_selection(s, -10);
      break;
    case kKeyPageDown:
      move_selection(s, 10);
      break;
    case kKeyHome:
      s.selected[index_of(s.view)] = 0;
      break;
    case kKeyEnd:
      s.selected[index_of(s.view)] = static_cast<std::size_t>(-1) / 2;
      break;
    case '/':
      s.editing = true;
      s.draft = s.filter;
      break;
    case kKeyEscape:
      if (s.filter.empty()) return Action::kNone;
      s.filter.clear();
      s.selected = {};
      break;
    default:
      return Action::kNone;
  }
  return Action::kRedraw;
}

Filter parse_filter(std::string_view text) {
  Filter f;
  text = trim(text);
  if (text.empty()) return f;
  std::vector<unsigned> gpus;
  bool all_numbers = true;
  for (auto part : split(text, ',')) {
    auto n = parse_u64(trim(part));
    if (!n || *n >= 1024) {
      all_numbers = false;
      break;
    }
    gpus.push_back(static_cast<unsigned>(*n));
  }
  if (all_numbers) {
    f.gpus = std::move(gpus);
  } else {
    f.text = to_lower(text);
  }
  return f;
}

bool matches(const Filter& f, const ProcessInfo& p) {
  if (f.empty()) return true;
  if (!f.gpus.empty()) return has_gpu(f, p.gpu);
  return contains(p.name, f.text) || contains(p.user, f.text) || contains(p.job, f.text);
}

bool matches(const Filter& f, const GpuInfo& g) {
  if (f.empty()) return true;
  if (!f.gpus.empty()) return has_gpu(f, g.index);
  return std::any_of(g.processes.begin(), g.processes.end(),
                     [&](const ProcessInfo& p) { return matches(f, p); });
}

bool matches(const Filter& f, const AlertInfo& a) {
  if (f.empty()) return true;
  if (!f.gpus.empty()) return a.gpu && has_gpu(f, *a.gpu);
  return contains(a.rule, f.text) || contains(a.description, f.text);
}

bool matches(const Filter& f, const JobInfo& j) {
  if (f.empty()) return true;
  if (!f.gpus.empty()) {
    return std::any_of(j.gpu_indices.begin(), j.gpu_indices.end(),
                       [&](unsigned g) { return has_gpu(f, g); });
  }
  return contains(j.user, f.text) || contains(j.name, f.text);
}

std::vector<const GpuInfo*> gpu_rows(const Snapshot& s, const ViewState& v) {
  const Filter f = parse_filter(v.filter);
  std::vector<const GpuInfo*> rows;
  for (const auto& g : s.gpus) {
    if (matches(f, g)) rows.push_back(&g);
  }
  const SortState st = v.sort[index_of(View::kGpus)];
  const std::string_view key = sort_keys(View::kGpus)[st.key].name;
  const bool d = st.descending;
  sort_rows(rows, [&](const GpuInfo& a, const GpuInfo& b) {
    int c = 0;
    if (key == "util") c = compare_opt(a.util, b.util, d);
    if (key == "mem") c = compare_opt(a.mem_used, b.mem_used, d);
    if (key == "temp") c = compare_opt(a.temp, b.temp, d);
    if (key == "power") c = compare_opt(a.power, b.power, d);
    if (key == "verdict") {
      c = compare_opt(std::optional(verdict_rank(a.verdict)),
                      std::optional(verdict_rank(b.verdict)), d);
    }
    if (c == 0) {
      c = key == "gpu" ? compare_opt(std::optional(a.index), std::optional(b.index), d)
                       : compare_opt(std::optional(a.index), std::optional(b.index), false);
    }
    return c;
  });
  return rows;
}

std::vector<const ProcessInfo*> process_rows(const Snapshot& s, const ViewState& v) {
  const Filter f = parse_filter(v.filter);
  std::vector<const ProcessInfo*> rows;
  for (const auto& g : s.gpus) {
    for (const auto& p : g.processes) {
      if (matches(f, p)) rows.push_back(&p);
    }
  }
  const SortState st = v.sort[index_of(View::kProcesses)];
  const std::string_view key = sort_keys(View::kProcesses)[st.key].name;
  const bool d = st.descending;
  auto text = [](const std::string& t) { return t.empty() ? std::nullopt : std::optional(t); };
  sort_rows(rows, [&](const ProcessInfo& a, const ProcessInfo& b) {
    int c = 0;
    if (key == "memory") c = compare_opt(a.memory, b.memory, d);
    if (key == "gpu") c = compare_opt(std::optional(a.gpu), std::optional(b.gpu), d);
    if (key == "pid") c = compare_opt(std::optional(a.pid), std::optional(b.pid), d);
    if (key == "user") c = compare_opt(text(a.user), text(b.user), d);
    if (key == "job") c = compare_opt(text(a.job), text(b.job), d);
    if (key == "name") c = compare_opt(text(a.name), text(b.name), d);
    if (c == 0) c = compare_opt(std::optional(a.gpu), std::optional(b.gpu), false);
    if (c == 0) c = compare_opt(std::optional(a.pid), std::optional(b.pid), false);
    return c;
  });
  return rows;
}

std::vector<const AlertInfo*> alert_rows(const Snapshot& s, const ViewState& v) {
  std::vector<const AlertInfo*> rows;
  if (!s.alerts) return rows;
  const Filter f = parse_filter(v.filter);
  for (const auto& a : *s.alerts) {
    if (matches(f, a)) rows.push_back(&a);
  }
  const SortState st = v.sort[index_of(View::kAlerts)];
  const std::string_view key = sort_keys(View::kAlerts)[st.key].name;
  const bool d = st.descending;
  sort_rows(rows, [&](const AlertInfo& a, const AlertInfo& b) {
    int c = 0;
    if (key == "severity") {
      c = compare_opt(std::optional(severity_rank(a.severity)),
                      std::optional(severity_rank(b.severity)), d);
    }
    if (key == "since") c = compare_opt(std::optional(a.since), std::optional(b.since), d);
    if (key == "rule") c = compare_opt(std::optional(a.rule), std::optional(b.rule), d);
    if (key == "gpu") c = compare_opt(a.gpu, b.gpu, d);
    if (c == 0) c = compare_opt(std::optional(a.id), std::optional(b.id), false);
    return c;
  });
  return rows;
}

std::vector<const JobInfo*> job_rows(const Snapshot& s, const ViewState& v) {
  std::vector<const JobInfo*> rows;
  if (!s.jobs) return rows;
  const Filter f = parse_filter(v.filter);
  for (const auto& j : *s.jobs) {
    if (matches(f, j)) rows.push_back(&j);
  }
  const SortState st = v.sort[index_of(View::kQueue)];
  const std::string_view key = sort_keys(View::kQueue)[st.key].name;
  const bool d = st.descending;
  sort_rows(rows, [&](const JobInfo& a, const JobInfo& b) {
    int c = 0;
    if (key == "state")
      c = compare_opt(std::optional(state_rank(a.state)), std::optional(state_rank(b.state)), d);
    if (key == "id") c = compare_opt(std::optional(a.id), std::optional(b.id), d);
    if (key == "user") c = compare_opt(std::optional(a.user), std::optional(b.user), d);
    if (key == "gpus") c = compare_opt(std::optional(a.gpus), std::optional(b.gpus), d);
    if (key == "priority") c = compare_opt(std::optional(a.priority), std::optional(b.priority), d);
    if (c == 0) c = compare_opt(std::optional(a.id), std::optional(b.id), false);
    return c;
  });
  return rows;
}

std::size_t row_count(const Snapshot& s, const ViewState& v) {
  switch (v.view) {
    case View::kGpus:
      return gpu_rows(s, v).size();
    case View::kProcesses:
      return process_rows(s, v).size();
    case View::kAlerts:
      return alert_rows(s, v).size();
    case View::kQueue:
      return job_rows(s, v).size();
  }
  return 0;
}

void clamp_selection(ViewState& v, const Snapshot& s) {
  const View current = v.view;
  for (std::size_t i = 0; i < kViewCount; ++i) {
    v.view = static_cast<View>(i);
    const std::size_t n = row_count(s, v);
    v.selected[i] = n == 0 ? 0 : std::min(v.selected[i], n - 1);
  }
  v.view = current;
}

}  // namespace cardiac::top
