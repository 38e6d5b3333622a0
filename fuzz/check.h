// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the fuzz targets: a contract check that aborts (so libFuzzer keeps the
// input) and the splitting of one fuzz input into lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

// A documented contract of the function under test did not hold: print it and abort, which
// libFuzzer reports as a crash and saves the input for.
#define CARDIAC_FUZZ_CHECK(cond)                                                         \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: contract violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace cardiac::fuzz {

// For LLVMFuzzerInitialize: with CARDIAC_FUZZ_WRITE_SEEDS=DIR set, writes the target's seed
// inputs into DIR (scripts/fuzz.sh) and exits with what `write_seeds` returned.
inline void write_seeds_if_asked(int (*write_seeds)(const std::string& dir)) {
  if (const char* dir = std::getenv("CARDIAC_FUZZ_WRITE_SEEDS")) std::exit(write_seeds(dir));
}

// The fuzz input as text. The view covers libFuzzer's own buffer, which is allocated at
// exactly `size` bytes, so ASan catches a parser that reads one byte past the end.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// True when `part` lies inside `whole` (a string_view result must view the caller's buffer).
inline bool views_into(std::string_view part, std::string_view whole) {
  if (part.empty()) return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

// Calls `f(line)` for each '\n'-separated line of `text` (the last one may be unterminated,
// and the '\n' is not part of the line). Each line is copied into a heap buffer of exactly its
// size first, so that ASan also catches a read past the end of a line in the middle of `text`.
template <class F>
void for_each_line(std::string_view text, F f) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    const std::unique_ptr<char[]> copy(new char[line.size()]);
    std::memcpy(copy.get(), line.data(), line.size());
    f(std::string_view(copy.get(), line.size()));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

}  // namespace cardiac::fuzz
