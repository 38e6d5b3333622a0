// SPDX-License-Identifier: Apache-2.0
// A temporary directory for one test, removed with everything in it when the test ends. Shared
// by the folders' tests (store, queue, agent, cli) instead of a copy each.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace cardiac::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/cardiac-test-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  // The path of `name` inside it (not created).
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `content` to `name` inside it; returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    std::string p = file(name);
    std::ofstream(p, std::ios::trunc) << content;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace cardiac::testing
