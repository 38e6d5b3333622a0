// SPDX-License-Identifier: Apache-2.0
// Streaming decoders over the system libraries, each feeding one bounded output buffer.
#include "doctor/decompress.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <memory>

#include "core/format.h"

namespace cardiac::doctor {
namespace {

constexpr std::size_t kChunk = 1 << 16;

// Collects decoded bytes, keeping the newest `max` of them (the end of a log matters most).
class Sink {
 public:
  explicit Sink(std::size_t max) : max_(max) {}
  void add(const char* p, std::size_t n) {
    out_.text.append(p, n);
    if (out_.text.size() > 2 * max_) trim();
  }
  Decompressed finish(std::string problem) {
    trim();
    out_.problem = std::move(problem);
    return std::move(out_);
  }

 private:
  void trim() {
    if (out_.text.size() <= max_) return;
    out_.text.erase(0, out_.text.size() - max_);
    out_.cut = true;
  }
  std::size_t max_;
  Decompressed out_;
};

Decompressed gunzip(std::string_view data, std::size_t max_out) {
  Sink sink(max_out);
  z_stream z{};
  // 15 + 32: a zlib or gzip header, detected; the largest window.
  if (inflateInit2(&z, 15 + 32) != Z_OK) return sink.finish("zlib: cannot initialise");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(data.size(), UINT32_MAX));
  std::size_t left = data.size() - z.avail_in;
  std::array<char, kChunk> buf{};
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = buf.size();
    int rc = inflate(&z, Z_NO_FLUSH);
    sink.add(buf.data(), buf.size() - z.avail_out);
    if (z.avail_in == 0 && left > 0) {
      const std::size_t more = std::min<std::size_t>(left, UINT32_MAX);
      z.avail_in = static_cast<uInt>(more);
      left -= more;
    }
    if (rc == Z_STREAM_END) {
      // gzip files may hold several members (`cat a.gz b.gz`); trailing zeros are padding.
      const bool rest_is_padding =
          std::all_of(z.next_in, z.next_in + z.avail_in, [](Bytef b) { return b == 0; });
      if (z.avail_in == 0 || rest_is_padding) return sink.finish({});
      if (inflateReset(&z) != Z_OK) return sink.finish("zlib: cannot restart");
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      return sink.finish("the gzip stream ends early (truncated file?)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return sink.finish(fmt::format("gzip data is corrupt: {}", z.msg ? z.msg : "error"));
    }
  }
}

Decompressed unxz(std::string_view data, std::size_t max_out) {
  Sink sink(max_out);
  lzma_stream s = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
    return sink.finish("liblzma: cannot initialise");
  }
  std::unique_ptr<lzma_stream, void (*)(lzma_stream*)> guard(&s, lzma_end);
  s.next_in = reinterpret_cast<const std::uint8_t*>(data.data());
  s.avail_in = data.size();
  std::array<std::uint8_t, kChunk> buf{};
  for (;;) {
    s.next_out = buf.data();
    s.avail_out = buf.size();
    lzma_ret rc = lzma_code(&s, s.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
    sink.add(reinterpret_cast<const char*>(buf.data()), buf.size() - s.avail_out);
    if (rc == LZMA_STREAM_END) return sink.finish({});
    if (rc == LZMA_BUF_ERROR) return sink.finish("the xz stream ends early (truncated file?)");
    if (rc != LZMA_OK)
      return sink.finish(
          fmt::format("xz data is corrupt (liblzma error {})", static_cast<int>(rc)));
  }
}

Decompressed unzstd(std::string_view data, std::size_t max_out) {
  Sink sink(max_out);
  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) return sink.finish("libzstd: cannot initialise");
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  std::array<char, kChunk> buf{};
  std::size_t hint = 0;  // 0: the last frame is complete and flushed
  while (in.pos < in.size) {
    ZSTD_outBuffer out{buf.data(), buf.size(), 0};
    hint = ZSTD_decompressStream(ctx.get(), &out, &in);
    sink.add(buf.data(), out.pos);
    if (ZSTD_isError(hint)) {
      return sink.finish(fmt::format("zstd data is corrupt: {}", ZSTD_getErrorName(hint)));
    }
  }
  // Input used up inside a frame: flush what the decoder still holds, then it needs more.
  while (hint != 0) {
    ZSTD_outBuffer out{buf.data(), buf.size(), 0};
    hint = ZSTD_decompressStream(ctx.get(), &out, &in);
    if (ZSTD_isError(hint)) break;
    sink.add(buf.data(), out.pos);
    if (out.pos == 0) break;
  }
  if (hint != 0) return sink.finish("the zstd stream ends early (truncated file?)");
  return sink.finish({});
}

}  // namespace

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kXz:
      return "xz";
    case Compression::kZstd:
      return "zstd";
    case Compression::kNone:
      break;
  }
  return "";
}

Compression detect_compression(std::string_view head) {
  auto starts = [&](std::string_view magic) { return head.substr(0, magic.size()) == magic; };
  if (starts("\x1f\x8b")) return Compression::kGzip;
  if (starts(std::string_view("\xfd"
                              "7zXZ\0",
                              6)))
    return Compression::kXz;
  if (starts("\x28\xb5\x2f\xfd")) return Compression::kZstd;
  return Compression::kNone;
}

Decompressed decompress(std::string_view data, Compression c, std::size_t max_out) {
  switch (c) {
    case Compression::kGzip:
      return gunzip(data, max_out);
    case Compression::kXz:
      return unxz(data, max_out);
    case Compression::kZstd:
      return unzstd(data, max_out);
    case Compression::kNone:
      break;
  }
  Decompressed d;
  d.text.assign(data.substr(data.size() > max_out ? data.size() - max_out : 0));
  d.cut = data.size() > max_out;
  return d;
}

}  // namespace cardiac::doctor
