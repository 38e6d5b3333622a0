// SPDX-License-Identifier: Apache-2.0
// The agent's re-exec with its allocator tunables, and the environment put back after it.
#include "core/malloc_tuning.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace cardiac {
namespace {

constexpr const char* kTunablesEnv = "GLIBC_TUNABLES";
// What GLIBC_TUNABLES was before the re-exec: "set:<value>" or "unset". Its presence also says
// that this process is the re-executed one.
constexpr const char* kCallerTunablesEnv = "CARDIAC_CALLER_GLIBC_TUNABLES";

bool g_reexecuted = false;

void put_back(const std::string& saved) {
  if (saved.starts_with("set:")) {
    ::setenv(kTunablesEnv, saved.substr(4).c_str(), 1);
  } else {
    ::unsetenv(kTunablesEnv);
  }
  ::unsetenv(kCallerTunablesEnv);
}

}  // namespace

void restore_environment_after_reexec() {
  const char* saved = std::getenv(kCallerTunablesEnv);
  if (saved == nullptr) return;
  put_back(saved);
  g_reexecuted = true;
}

void reexec_with_agent_tunables() {
  if (g_reexecuted) return;
  const char* current = std::getenv(kTunablesEnv);
  const std::string caller = current != nullptr ? current : "";
  if (caller.find("glibc.malloc.tcache_count") != std::string::npos) return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (cmdline.empty()) return;
  std::vector<std::string> args;
  for (std::size_t at = 0; at < cmdline.size();) {
    const std::size_t end = cmdline.find('\0', at);
    args.push_back(cmdline.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string saved = current != nullptr ? "set:" + caller : "unset";
  const std::string tunables = caller.empty() ? kAgentTunable : caller + ":" + kAgentTunable;
  ::setenv(kCallerTunablesEnv, saved.c_str(), 1);
  ::setenv(kTunablesEnv, tunables.c_str(), 1);
  ::execv("/proc/self/exe", argv.data());
  put_back(saved);  // no re-exec (no /proc): run as started
}

}  // namespace cardiac
