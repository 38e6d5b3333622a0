// SPDX-License-Identifier: Apache-2.0
// Test helpers: a temporary directory with a real store file, and hand-made GPU readings.
#pragma once

#include <cstdint>
#include <string>

#include "nvml/gpu.h"
#include "store/db.h"

namespace cardiac::store::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// open_store() on dir/name; fails the test on error.
Db open_test_store(const TempDir& dir, const std::string& name = "cardiac.db");

// A healthy H100-like reading with most fields present and a few absent (fan, memory
// temperature, retired pages), as NVML reports them on an SXM part.
nvml::GpuReading healthy_gpu(unsigned index);

// count(*) of a table or any scalar query.
std::int64_t scalar(const Db& db, const std::string& sql);

}  // namespace cardiac::store::testing
