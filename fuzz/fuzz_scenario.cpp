// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the fake NVML's scenario files (tests/fake_nvml/scenario.h): loading and
// validating JSON or TOML, then replaying the timeline. The first input byte picks the format
// ('t': TOML, anything else: JSON) and the rest is written to a file, since load_scenario()
// only reads paths; the file lives in a private directory under $TMPDIR.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "check.h"
#include "scenario.h"

namespace {

std::string g_dir;  // set once by LLVMFuzzerInitialize

void remove_dir() {
  for (const char* name : {"/scenario.json", "/scenario.toml"}) {
    (void)::unlink((g_dir + name).c_str());
  }
  (void)::rmdir(g_dir.c_str());
}

bool write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = true;
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n <= 0) {
      ok = false;
      break;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  ::close(fd);
  return ok;
}

// Some names a device's `returns` object may set, in exported and family form.
constexpr std::string_view kFunctions[] = {"nvmlInit_v2", "nvmlDeviceGetTemperature",
                                           "nvmlDeviceGetMemoryInfo_v2",
                                           "nvmlDeviceGetHandleByIndex_v2"};

void replay(const fake::Scenario& s) {
  for (double t : {0.0, 0.5, 1.0, 10.0, 1e9}) {
    const std::size_t due = fake::entries_due(s, t);
    CARDIAC_FUZZ_CHECK(due <= s.timeline.size());
    const fake::View view = fake::make_view(s, due);
    CARDIAC_FUZZ_CHECK(view.devices.size() == s.devices.size());
    for (const auto& device : view.devices) {
      if (!device.contains("returns")) continue;
      for (std::string_view f : kFunctions) (void)fake::lookup_return(device["returns"], f);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cardiac-fuzz-scenario-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    std::perror("fuzz_scenario: mkdtemp");
    std::exit(1);
  }
  g_dir = templ;
  std::atexit(remove_dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool toml = data[0] == 't';
  const std::string path = g_dir + (toml ? "/scenario.toml" : "/scenario.json");
  if (!write_file(path, data + 1, size - 1)) std::abort();
  const fake::LoadResult r = fake::load_scenario(path);
  if (!r.scenario) {
    // scenario.h: the error is one line naming the file.
    CARDIAC_FUZZ_CHECK(r.error.find(path) != std::string::npos);
    return 0;
  }
  CARDIAC_FUZZ_CHECK(r.scenario->devices.size() <= fake::kMaxDevices);
  replay(*r.scenario);
  return 0;
}
