// SPDX-License-Identifier: Apache-2.0
// dlopen-based NVML loader: the symbol table from symbols.def, resolved newest version first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "nvml/types.h"

namespace cardiac::nvml {

// One function pointer per CARDIAC_NVML_FN entry; null when the library lacks every name.
struct Api {
#define CARDIAC_NVML_FN(field, required, type) \
  using field##_fn = type;                     \
  field##_fn* field = nullptr;
#define CARDIAC_NVML_SYM(field, symbol)
#include "nvml/symbols.def"
#undef CARDIAC_NVML_FN
#undef CARDIAC_NVML_SYM
};

// Which exported name each entry point resolved to ("" when missing): shown by diagnostics.
struct ResolvedSymbol {
  std::string field;
  std::string symbol;
  bool required = false;
};

// The default search order: libnvidia-ml.so.1 (what the driver installs), then the
// unversioned name that only development packages provide.
std::vector<std::string> default_library_names();

// A loaded libnvidia-ml. Not copyable; closing unloads it. The Api is not thread-safe to
// call concurrently from several threads for the same device (NVML is, but we never do).
class Library {
 public:
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // Opens `path` (or, when empty, each default name in turn). Errors: kNotFound with an
  // explanation when no library can be opened ("no NVIDIA driver installed"), kUnavailable
  // when a required entry point is missing.
  [[nodiscard]] static Result<std::unique_ptr<Library>> open(const std::string& path = {});

  [[nodiscard]] const Api& api() const { return api_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::vector<ResolvedSymbol>& symbols() const { return symbols_; }
  // Human text for a return code: the library's own nvmlErrorString when present.
  [[nodiscard]] std::string error_string(nvmlReturn_t rc) const;

 private:
  Library() = default;
  void* handle_ = nullptr;
  std::string path_;
  Api api_;
  std::vector<ResolvedSymbol> symbols_;
};

}  // namespace cardiac::nvml
