// SPDX-License-Identifier: Apache-2.0
// dlopen/dlsym of libnvidia-ml, driven by symbols.def.
#include "nvml/library.h"

#include <dlfcn.h>

#include "core/format.h"

namespace cardiac::nvml {

std::vector<std::string> default_library_names() {
  return {"libnvidia-ml.so.1", "libnvidia-ml.so"};
}

// The library stays mapped for the life of the process: NVML starts driver threads that may
// outlive nvmlShutdown, and unmapping their code under them crashes the process. Tools that
// load NVML dynamically (DCGM, nvtop) do the same.
Library::~Library() = default;

Result<std::unique_ptr<Library>> Library::open(const std::string& path) {
  std::vector<std::string> candidates =
      path.empty() ? default_library_names() : std::vector<std::string>{path};
  void* handle = nullptr;
  std::string opened;
  std::vector<std::string> reasons;
  for (const auto& name : candidates) {
    dlerror();
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      opened = name;
      break;
    }
    const char* why = dlerror();
    reasons.push_back(why ? why : name + ": unknown dlopen error");
  }
  if (!handle) {
    std::string tried = fmt::format("{}", fmt::join(candidates, ", "));
    if (path.empty()) {
      return fail(Error::not_found(
          fmt::format("NVML library not found (tried {}): the NVIDIA driver is not installed or "
                      "its user-space libraries are not on the loader path. Install the driver, "
                      "or point --nvml-lib at libnvidia-ml.so.1",
                      tried),
          reasons.empty() ? "" : reasons.back()));
    }
    return fail(Error::not_found(fmt::format("cannot load NVML library {}", path),
                                 reasons.empty() ? "" : reasons.back()));
  }

  std::unique_ptr<Library> lib(new Library());
  lib->handle_ = handle;
  char resolved[4096] = {};
  if (dlinfo(handle, RTLD_DI_ORIGIN, resolved) == 0 && resolved[0]) {
    std::string base = opened.substr(opened.rfind('/') + 1);
    lib->path_ = std::string(resolved) + "/" + base;
  } else {
    lib->path_ = opened;
  }

  Api& api = lib->api_;
#define CARDIAC_NVML_FN(field, required, type) \
  lib->symbols_.push_back(ResolvedSymbol{#field, "", required});
#define CARDIAC_NVML_SYM(field, symbol)
#include "nvml/symbols.def"
#undef CARDIAC_NVML_FN
#undef CARDIAC_NVML_SYM

  auto record = [&](std::string_view field, const char* symbol) {
    for (auto& s : lib->symbols_) {
      if (s.field == field && s.symbol.empty()) s.symbol = symbol;
    }
  };
  // Newest name first: the first SYM line that resolves wins.
#define CARDIAC_NVML_FN(field, required, type)
#define CARDIAC_NVML_SYM(field, symbol)                                          \
  if (!api.field) {                                                              \
    if (void* p = dlsym(handle, #symbol)) {                                      \
      api.field = reinterpret_cast<Api::field##_fn*>(p); /* NOLINT: dlsym ABI */ \
      record(#field, #symbol);                                                   \
    }                                                                            \
  }
#include "nvml/symbols.def"
#undef CARDIAC_NVML_FN
#undef CARDIAC_NVML_SYM

  for (const auto& s : lib->symbols_) {
    if (s.required && s.symbol.empty()) {
      return fail(Error::unavailable(
          fmt::format("{} lacks a required NVML entry point ({}): not a usable NVML library",
                      lib->path_, s.field)));
    }
  }
  return lib;
}

std::string Library::error_string(nvmlReturn_t rc) const {
  if (api_.error_string) {
    if (const char* s = api_.error_string(rc)) return s;
  }
  return fmt::format("NVML error {}", rc);
}

}  // namespace cardiac::nvml
