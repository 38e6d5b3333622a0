// SPDX-License-Identifier: Apache-2.0
// Names the calling thread as `top -H`, `ps -L` and /proc/PID/task/TID/comm show it, so a
// person (or bench/agent_overhead.sh) can tell which of the agent's threads spends the CPU.
#pragma once

#include <pthread.h>

#include <string>
#include <string_view>

namespace cardiac {

// Linux keeps 15 bytes of a thread's name; a longer one is cut, never refused.
inline void name_this_thread(std::string_view name) {
  std::string n(name.substr(0, 15));
  pthread_setname_np(pthread_self(), n.c_str());
}

}  // namespace cardiac
