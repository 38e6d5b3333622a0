// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the fake NVML tests: the library opened by path, sessions, temp scenarios.
#pragma once

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "nvml/types.h"

namespace fake_test {

using cardiac::nvml::ReturnCode;

// One pointer per symbols.def field, resolved newest name first like the production loader.
struct Api {
#define CARDIAC_NVML_FN(field, required, type) \
  using field##_fn = type;                     \
  field##_fn* field = nullptr;
#define CARDIAC_NVML_SYM(field, symbol)
#include "nvml/symbols.def"
#undef CARDIAC_NVML_FN
#undef CARDIAC_NVML_SYM
};

// The fake, opened once per process by path (RTLD_LOCAL, as production does).
class Fake {
 public:
  static Fake& get() {
    static Fake fake;
    return fake;
  }
  void* handle() const { return handle_; }
  const Api& api() const { return api_; }
  template <class Fn>
  Fn* sym(const char* name) const {
    return reinterpret_cast<Fn*>(dlsym(handle_, name));  // NOLINT: dlsym ABI
  }
  unsigned long long calls(const char* function) const {
    return sym<unsigned long long(const char*)>("cardiacFakeNvmlCallCount")(function);
  }
  void reset_counts() const { sym<void()>("cardiacFakeNvmlResetCounts")(); }

 private:
  Fake() {
    handle_ = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
#define CARDIAC_NVML_FN(field, required, type)
#define CARDIAC_NVML_SYM(field, symbol) \
  if (!api_.field) api_.field = sym<Api::field##_fn>(#symbol);
#include "nvml/symbols.def"
#undef CARDIAC_NVML_FN
#undef CARDIAC_NVML_SYM
  }
  void* handle_ = nullptr;
  Api api_;
};

inline const Api& api() {
  return Fake::get().api();
}

inline std::string scenario(const std::string& name) {
  return std::string(FAKE_NVML_SCENARIOS_DIR) + "/" + name;
}

inline double unix_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// nvmlInit with a scenario (and optionally a scenario time t, through the epoch variable);
// shuts down on destruction so the next test reloads from scratch.
class Session {
 public:
  explicit Session(const std::string& path, std::optional<double> t = std::nullopt) {
    setenv("CARDIAC_FAKE_NVML_SCENARIO", path.c_str(), 1);
    if (t) {
      setenv("CARDIAC_FAKE_NVML_EPOCH", std::to_string(unix_now() - *t).c_str(), 1);
    } else {
      unsetenv("CARDIAC_FAKE_NVML_EPOCH");
    }
    rc_ = api().init();
  }
  ~Session() {
    if (rc_ == ReturnCode::kSuccess) api().shutdown();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  nvmlReturn_t rc() const { return rc_; }
  nvmlDevice_t device(unsigned index) const {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(api().handle_by_index(index, &d), ReturnCode::kSuccess) << "device " << index;
    return d;
  }

 private:
  nvmlReturn_t rc_ = ReturnCode::kUnknown;
};

// A scenario file in a private temp directory, removed with it.
class TempScenario {
 public:
  explicit TempScenario(const std::string& text, const std::string& suffix = ".json") {
    char dir[] = "/tmp/fake-nvml-test-XXXXXX";
    if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    path_ = dir_ + "/scenario" + suffix;
    write(text);
  }
  ~TempScenario() { std::filesystem::remove_all(dir_); }
  TempScenario(const TempScenario&) = delete;
  TempScenario& operator=(const TempScenario&) = delete;
  const std::string& path() const { return path_; }
  // Replaces the file atomically (a new inode), as a test changing state mid-run should.
  void write(const std::string& text) const {
    const std::string tmp = path_ + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path_);
  }

 private:
  std::string dir_;
  std::string path_;
};

}  // namespace fake_test
