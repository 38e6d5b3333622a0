// SPDX-License-Identifier: Apache-2.0
// Rotated kernel logs come compressed (logrotate's kern.log.2.gz, journal exports as .xz or
// .zst): recognised by their magic bytes and decoded through Debian's zlib, liblzma and libzstd.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cardiac::doctor {

enum class Compression { kNone, kGzip, kXz, kZstd };

// "gzip", "xz", "zstd", or "" for kNone.
std::string_view compression_name(Compression c);

// The compression `head` (the first bytes of a file, at least 6 for a sure answer) starts
// with, by magic bytes: 1f 8b (gzip), fd 37 7a 58 5a 00 (xz), 28 b5 2f fd (zstd).
Compression detect_compression(std::string_view head);

struct Decompressed {
  std::string text;     // the decoded bytes: the last `max_out` of them when there were more
  bool cut = false;     // more than `max_out` bytes came out; the earliest were dropped
  std::string problem;  // "" or why decoding stopped early (corrupt or truncated input)
};

// Decodes `data` in `c`, every concatenated member or frame. Never fails: what was decoded
// before an error is kept and `problem` says what went wrong. Memory stays within about twice
// `max_out` whatever the input expands to. Pure; thread-safe.
Decompressed decompress(std::string_view data, Compression c, std::size_t max_out);

}  // namespace cardiac::doctor
