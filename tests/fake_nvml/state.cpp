// SPDX-License-Identifier: Apache-2.0
// Process-wide state of the fake library: init reference count, the loaded scenario and its
// reloading, scenario time, call counts, hangs, and the prologue shared by every export.
#include "state.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "exports.h"

// Handles are pointers into a fixed array, so a handle stays valid for the process lifetime and
// its index is recoverable from the pointer alone.
struct nvmlDevice_st {
  unsigned index;
};

namespace fake {
namespace {

using cardiac::nvml::ReturnCode;
using std::chrono::steady_clock;

constexpr auto kReloadInterval = std::chrono::milliseconds(100);
constexpr auto kSleepSlice = std::chrono::milliseconds(50);

struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = -1;
  long long mtime_ns = 0;
  long long ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

struct Global {
  std::mutex mu;
  std::map<std::string, unsigned long long, std::less<>> counts;
  int refcount = 0;
  std::optional<Scenario> scenario;
  std::string path;
  FileStamp stamp;
  FileStamp bad_stamp;   // a rewrite that failed to load: reported once, not retried
  bool missing = false;  // the file vanished: reported once
  steady_clock::time_point last_check;
  double epoch = 0;
  std::optional<double> first_init;
  std::uint64_t generation = 0;
  std::uint64_t view_generation = ~0ull;
  std::size_t view_applied = 0;
  View view;
  std::set<int> waiters;  // eventfds of the calls blocked in wait_unlocked()
};

// Never destroyed: a worker thread may still call in while the process exits.
Global& global() {
  static auto* g = new Global;
  return *g;
}

std::array<nvmlDevice_st, kMaxDevices> make_slots() {
  std::array<nvmlDevice_st, kMaxDevices> slots{};
  for (unsigned i = 0; i < kMaxDevices; ++i) slots[i].index = i;
  return slots;
}
std::array<nvmlDevice_st, kMaxDevices> g_slots = make_slots();

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::optional<FileStamp> stat_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{st.st_dev, st.st_ino, st.st_size,
                   st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                   st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec};
}

void report(const std::string& message) {
  std::fprintf(stderr, "fake-nvml: %s\n", message.c_str());
}

// Re-reads the scenario when its file changed. A file that fails to load keeps the previous
// scenario in force, so a test that rewrites the file non-atomically sees no half-written state.
void reload_if_due(Global& g, bool force) {
  if (!g.scenario) return;
  const auto now = steady_clock::now();
  if (!force && now - g.last_check < kReloadInterval) return;
  g.last_check = now;
  auto stamp = stat_file(g.path);
  if (!stamp) {
    if (!g.missing) report(g.path + ": the scenario file vanished; keeping the last one");
    g.missing = true;
    return;
  }
  g.missing = false;
  if (*stamp == g.stamp || *stamp == g.bad_stamp) return;
  LoadResult loaded = load_scenario(g.path);
  if (!loaded.scenario) {
    report(loaded.error + " (keeping the previous scenario)");
    g.bad_stamp = *stamp;
    return;
  }
  g.scenario = std::move(loaded.scenario);
  g.stamp = *stamp;
  ++g.generation;
}

double scenario_time(const Global& g) {
  return wall_now() - g.epoch;
}

const View& current_view(Global& g) {
  const std::size_t applied = entries_due(*g.scenario, scenario_time(g));
  if (g.view_generation != g.generation || g.view_applied != applied) {
    g.view = make_view(*g.scenario, applied);
    g.view_generation = g.generation;
    g.view_applied = applied;
  }
  return g.view;
}

double hang_seconds(Global& g, std::string_view function, std::optional<unsigned> device) {
  if (!g.scenario) return 0;
  const double t = scenario_time(g);
  double seconds = 0;
  for (const Hang& h : g.scenario->hangs) {
    if (h.function != function && h.function != family_name(function)) continue;
    if (h.device && (!device || *h.device != *device)) continue;
    if (t < h.after || (h.until && t >= *h.until)) continue;
    seconds = std::max(seconds, h.seconds);
  }
  return seconds;
}

// Sleeps in short slices with the mutex released, re-reading the scenario between slices so a
// test can end the hang by rewriting the file; a plain nanosleep keeps SIGKILL effective.
void hang_for(Global& g, std::unique_lock<std::mutex>& lock, std::string_view function,
              std::optional<unsigned> device) {
  const double seconds = hang_seconds(g, function, device);
  if (seconds <= 0) return;
  const auto deadline = steady_clock::now() + std::chrono::duration_cast<steady_clock::duration>(
                                                  std::chrono::duration<double>(seconds));
  while (steady_clock::now() < deadline) {
    const auto left = deadline - steady_clock::now();
    lock.unlock();
    std::this_thread::sleep_for(std::min<steady_clock::duration>(left, kSleepSlice));
    lock.lock();
    reload_if_due(g, false);
    if (hang_seconds(g, function, device) <= 0) break;
  }
}

std::optional<double> parse_epoch(const char* text) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0') return std::nullopt;
  return value;
}

// Loads the scenario for a 0 → 1 init. Returns false (after one line on stderr) on failure.
bool load_for_init(Global& g) {
  const char* path = std::getenv("CARDIAC_FAKE_NVML_SCENARIO");
  if (!path || !*path) {
    report("CARDIAC_FAKE_NVML_SCENARIO is not set: point it at a scenario file (.json or .toml)");
    return false;
  }
  LoadResult loaded = load_scenario(path);
  if (!loaded.scenario) {
    report(loaded.error);
    return false;
  }
  if (!g.first_init) g.first_init = wall_now();
  g.epoch = *g.first_init;
  if (const char* epoch = std::getenv("CARDIAC_FAKE_NVML_EPOCH"); epoch && *epoch) {
    auto value = parse_epoch(epoch);
    if (!value) {
      report(std::string("CARDIAC_FAKE_NVML_EPOCH=\"") + epoch +
             "\" is not a number of unix seconds");
      return false;
    }
    g.epoch = *value;
  }
  g.path = path;
  g.stamp = stat_file(g.path).value_or(FileStamp{});
  g.bad_stamp = FileStamp{};
  g.missing = false;
  g.last_check = steady_clock::now();
  g.scenario = std::move(loaded.scenario);
  ++g.generation;
  return true;
}

}  // namespace

nvmlReturn_t init(const char* function) {
  Global& g = global();
  std::unique_lock lock(g.mu);
  ++g.counts[function];
  if (g.refcount == 0) {
    if (!load_for_init(g)) return ReturnCode::kUnknown;
  } else {
    reload_if_due(g, /*force=*/true);
  }
  hang_for(g, lock, function, std::nullopt);
  const View& view = current_view(g);
  int code = view.system.value("init_return", 0);
  if (code == ReturnCode::kSuccess) {
    code = lookup_return(view.system.value("returns", Json::object()), function).value_or(0);
  }
  if (code != ReturnCode::kSuccess) return code;
  ++g.refcount;
  return ReturnCode::kSuccess;
}

nvmlDevice_t handle_of(unsigned index) {
  return &g_slots.at(index);
}

nvmlReturn_t copy_string(const std::string& text, char* out, unsigned int length) {
  if (!out) return ReturnCode::kInvalidArgument;
  if (text.size() + 1 > length) return ReturnCode::kInsufficientSize;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return ReturnCode::kSuccess;
}

Call::Call(const char* function) : function_(function) {
  prologue(Target::kLibrary);
}

Call::Call(const char* function, nvmlDevice_t device) : function_(function) {
  const auto base = reinterpret_cast<std::uintptr_t>(g_slots.data());
  const auto p = reinterpret_cast<std::uintptr_t>(device);
  const bool in_array =
      p >= base && p < base + sizeof(g_slots) && (p - base) % sizeof(nvmlDevice_st) == 0;
  index_ = in_array ? static_cast<unsigned>((p - base) / sizeof(nvmlDevice_st)) : ~0u;
  has_device_ = true;
  prologue(Target::kDevice);
}

Call::Call(const char* function, unsigned index) : function_(function), index_(index) {
  has_device_ = true;
  prologue(Target::kIndex);
}

void Call::prologue(Target target) {
  Global& g = global();
  lock_ = std::unique_lock(g.mu);
  ++g.counts[function_];
  if (g.refcount == 0) {
    status_ = ReturnCode::kUninitialized;
    return;
  }
  // Tests rewrite the scenario and expect the next enumeration to see it without waiting.
  const std::string_view name(function_);
  reload_if_due(g,
                name.starts_with("nvmlDeviceGetHandle") || name.starts_with("nvmlDeviceGetCount"));
  if (has_device_ && index_ >= device_count()) {
    status_ = ReturnCode::kInvalidArgument;
    return;
  }
  hang_for(g, lock_, function_, has_device_ ? std::optional(index_) : std::nullopt);
  if (g.refcount == 0) {
    status_ = ReturnCode::kUninitialized;
    return;
  }
  if (has_device_ && index_ >= device_count()) {
    status_ = ReturnCode::kInvalidArgument;
    return;
  }
  // Looked up in place, not copied (Json::value() copies): this runs before every call the
  // worker makes, about a thousand a second with 8 GPUs, and its time counts in the agent's
  // benchmarks as the driver's.
  const View& v = view();
  static const Json kNone = Json::object();
  auto member = [](const Json& j, std::string_view key) -> const Json& {
    auto it = j.find(key);
    return it == j.end() ? kNone : *it;
  };
  if (auto code = lookup_return(member(v.system, "returns"), name); code && *code != 0) {
    status_ = *code;
    return;
  }
  if (!has_device_) return;
  const Json& dev = v.devices[index_];
  if (auto code = lookup_return(member(dev, "returns"), name); code && *code != 0) {
    status_ = *code;
    return;
  }
  if (target != Target::kDevice) return;
  const Json& state_json = member(dev, "state");
  const std::string_view state = state_json.is_string()
                                     ? std::string_view(state_json.get_ref<const std::string&>())
                                     : std::string_view("ok");
  if (state == "lost") status_ = ReturnCode::kGpuIsLost;
  if (state == "reset_required") status_ = ReturnCode::kResetRequired;
  if (state == "unknown_error") status_ = ReturnCode::kUnknown;
}

const View& Call::view() {
  return current_view(global());
}

std::size_t Call::device_count() const {
  return global().scenario->devices.size();
}

const Scenario& Call::scenario() const {
  return *global().scenario;
}

double Call::now() const {
  return scenario_time(global());
}

namespace {

// Whether the events pending on an inotify descriptor include one for `name` (an overflow
// may have dropped it, so it counts as one).
bool names_file(int notify, const std::string& name) {
  alignas(inotify_event) std::array<char, 4096> buf{};
  bool seen = false;
  for (;;) {
    ssize_t n = ::read(notify, buf.data(), buf.size());
    if (n <= 0) return seen;
    for (ssize_t at = 0; at < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf.data() + at);
      if ((ev->mask & IN_Q_OVERFLOW) || (ev->len > 0 && name == ev->name)) seen = true;
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

// Polls `notify` (may be -1) and `wake` until the deadline, a change to `name`, or a wake-up.
void block_until(steady_clock::time_point deadline, int notify, int wake, const std::string& name) {
  for (;;) {
    const auto left = deadline - steady_clock::now();
    if (left <= steady_clock::duration::zero()) return;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    // Without inotify a rewrite is still seen within the reload interval.
    if (notify < 0) ms = std::min<long long>(ms, kReloadInterval.count());
    std::array<pollfd, 2> fds{{{wake, POLLIN, 0}, {notify, POLLIN, 0}}};
    int n =
        ::poll(fds.data(), notify < 0 ? 1 : 2, static_cast<int>(std::min<long long>(ms, INT_MAX)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (notify < 0 && n == 0) return;  // the reload interval: let the caller look again
      if (n < 0) return;
      continue;
    }
    if (fds[0].revents != 0) return;
    if (fds[1].revents != 0 && names_file(notify, name)) return;
  }
}

}  // namespace

bool Call::wait_unlocked(std::chrono::nanoseconds d) {
  Global& g = global();
  const auto deadline = steady_clock::now() + d;
  const auto slash = g.path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : g.path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? g.path : g.path.substr(slash + 1);
  // The directory, not the file: a test replaces the file by rename, which a watch on the old
  // inode would not see.
  int notify = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (notify >= 0 &&
      ::inotify_add_watch(notify, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
    ::close(notify);
    notify = -1;
  }
  int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake >= 0) g.waiters.insert(wake);
  // A rewrite between the caller's last look and the watch: taken now, not waited through.
  const std::uint64_t generation = g.generation;
  reload_if_due(g, /*force=*/true);
  if (g.generation == generation && g.refcount > 0) {
    lock_.unlock();
    if (wake >= 0) {
      block_until(deadline, notify, wake, name);
    } else {
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(d, kSleepSlice));
    }
    lock_.lock();
  }
  if (wake >= 0) {
    g.waiters.erase(wake);
    ::close(wake);
  }
  if (notify >= 0) ::close(notify);
  reload_if_due(g, /*force=*/true);
  return g.refcount > 0;
}

void Call::wake_waiters() {
  const std::uint64_t one = 1;
  for (int fd : global().waiters) {
    if (::write(fd, &one, sizeof(one)) < 0) continue;  // full counter: already awake
  }
}

void Call::drop_reference() {
  if (global().refcount > 0) --global().refcount;
  if (global().refcount == 0) wake_waiters();
}

nvmlReturn_t Call::get(const char* key, unsigned int* out) {
  if (!out) return ReturnCode::kInvalidArgument;
  auto it = device().find(key);
  if (it == device().end()) return ReturnCode::kNotSupported;
  *out = it->get<unsigned int>();
  return ReturnCode::kSuccess;
}

nvmlReturn_t Call::get(const char* key, unsigned long long* out) {
  if (!out) return ReturnCode::kInvalidArgument;
  auto it = device().find(key);
  if (it == device().end()) return ReturnCode::kNotSupported;
  *out = it->get<unsigned long long>();
  return ReturnCode::kSuccess;
}

nvmlReturn_t Call::get_bool(const char* key, unsigned int* out) {
  if (!out) return ReturnCode::kInvalidArgument;
  auto it = device().find(key);
  if (it == device().end()) return ReturnCode::kNotSupported;
  *out = it->get<bool>() ? cardiac::nvml::kEnabled : cardiac::nvml::kDisabled;
  return ReturnCode::kSuccess;
}

nvmlReturn_t Call::get_string(const char* key, char* out, unsigned int length) {
  auto it = device().find(key);
  if (it == device().end()) return ReturnCode::kNotSupported;
  return copy_string(it->get<std::string>(), out, length);
}

}  // namespace fake

extern "C" {

unsigned long long cardiacFakeNvmlCallCount(const char* function) {
  auto& g = fake::global();
  std::lock_guard lock(g.mu);
  auto it = g.counts.find(std::string_view(function ? function : ""));
  return it == g.counts.end() ? 0 : it->second;
}

void cardiacFakeNvmlResetCounts(void) {
  auto& g = fake::global();
  std::lock_guard lock(g.mu);
  g.counts.clear();
}

}  // extern "C"
