// SPDX-License-Identifier: Apache-2.0
// Response compression done by the server itself, at cheap levels, instead of cpp-httplib's:
// Debian's libcpp-httplib compresses every text-like answer at brotli quality 11, which made one
// /metrics scrape from a client offering `br` cost ~100x a plain one.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/result.h"

namespace cardiac::server {

enum class ContentCoding { kIdentity, kGzip, kBrotli };

// The Content-Encoding token ("" for identity).
std::string_view coding_name(ContentCoding c);

// The coding to answer a request with, from its Accept-Encoding (RFC 9110 §12.5.3): the
// acceptable one (q > 0, `*` standing for those not named) with the highest q; on a tie br,
// then gzip, then identity. Identity, unless named or covered by `*`, comes after any coding
// offered. No header, or nothing acceptable, is identity: a body the client can always read
// beats a 406.
ContentCoding choose_coding(std::string_view accept_encoding);

// Levels: cheap ones, since /metrics is compressed once per sample and the API per request.
// On the 8-GPU exposition (88.5 kB; bench/ BM_MetricsGzip and BM_MetricsBrotli on a 2-core
// VM): gzip level 1 with libdeflate gives 6.5 kB in 0.11 ms (zlib's level 1: 6.9 kB in
// 0.24-0.27 ms, its tables allocated per call); brotli 2 gives 5.9 kB in 0.29-0.31 ms
// (quality 11, httplib's: 5.0 kB in 550 ms).
inline constexpr int kGzipLevel = 1;
inline constexpr int kBrotliQuality = 2;

// `body` in the coding (identity: a copy).
Result<std::string> encode(std::string_view body, ContentCoding coding);

// One body and its compressed forms, each made the first time it is asked for and then kept.
// Thread-safe: concurrent requests for one coding wait for a single compression.
class EncodedBody {
 public:
  explicit EncodedBody(std::shared_ptr<const std::string> text);

  [[nodiscard]] const std::shared_ptr<const std::string>& text() const { return text_; }
  // The bytes to send for `coding`; the identity text when compressing fails (the caller then
  // sends no Content-Encoding, see `served`).
  std::shared_ptr<const std::string> get(ContentCoding coding, ContentCoding* served);
  // How many compressions this body has cost (tests: a second scrape of one sample costs none).
  [[nodiscard]] std::uint64_t compressions() const;

 private:
  std::shared_ptr<const std::string> text_;
  mutable std::mutex mu_;
  std::array<std::shared_ptr<const std::string>, 3> forms_;  // by ContentCoding
  std::uint64_t compressions_ = 0;
};

}  // namespace cardiac::server
