// SPDX-License-Identifier: Apache-2.0
// zlib and libbrotlidec stream decoders for tests.
#include "server/tests/decode.h"

#include <brotli/decode.h>
#include <zlib.h>

#include <array>
#include <cstdint>

namespace cardiac::server::test_support {

std::optional<std::string> gunzip(std::string_view bytes) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return std::nullopt;  // gzip wrapper only
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  std::array<char, 16384> buf{};
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = buf.size();
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf.data(), buf.size() - z.avail_out);
  }
  bool whole = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  return whole ? std::optional(out) : std::nullopt;
}

std::optional<std::string> unbrotli(std::string_view bytes) {
  BrotliDecoderState* s = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  if (!s) return std::nullopt;
  const auto* in = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::size_t in_left = bytes.size();
  std::string out;
  std::array<std::uint8_t, 16384> buf{};
  BrotliDecoderResult rc = BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT;
  while (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) {
    std::uint8_t* next = buf.data();
    std::size_t out_left = buf.size();
    rc = BrotliDecoderDecompressStream(s, &in_left, &in, &out_left, &next, nullptr);
    out.append(reinterpret_cast<const char*>(buf.data()), buf.size() - out_left);
  }
  BrotliDecoderDestroyInstance(s);
  if (rc != BROTLI_DECODER_RESULT_SUCCESS || in_left != 0) return std::nullopt;
  return out;
}

}  // namespace cardiac::server::test_support
