// SPDX-License-Identifier: Apache-2.0
// Accept-Encoding negotiation and one-shot gzip (libdeflate) / brotli (libbrotlienc) compression.
#include "server/encoding.h"

#include <brotli/encode.h>
#include <libdeflate.h>

#include <cstdlib>
#include <limits>
#include <mutex>
#include <vector>

#include "core/strings.h"

namespace cardiac::server {
namespace {

// A q-value ("0.8", "1", "0.000"); values out of [0, 1] or unparsable count as 1, as the
// header is advice and a typo must not make a coding unacceptable.
double parse_q(std::string_view text) {
  std::string s(trim(text));
  char* end = nullptr;
  double q = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(q >= 0 && q <= 1)) return 1;
  return q;
}

// Below any q a header can write (three decimals), above 0.
constexpr double kImplicitIdentityQ = 0.0001;

// Tie order: the smaller answer first.
constexpr std::array<ContentCoding, 3> kPreference{ContentCoding::kBrotli, ContentCoding::kGzip,
                                                   ContentCoding::kIdentity};

// One level-1 compressor for the process and its output buffer, kept between calls: made per
// call they cost more than the compression itself (about 200 kB of tables, and on the agent,
// whose allocations of 16 kB and more are mappings of their own, fresh pages each time).
class Gzipper {
 public:
  ~Gzipper() { libdeflate_free_compressor(compressor_); }

  Result<std::string> compress(std::string_view body) {
    std::lock_guard lock(mu_);
    if (!compressor_) compressor_ = libdeflate_alloc_compressor(kGzipLevel);
    if (!compressor_) return fail(Error::internal("libdeflate_alloc_compressor failed"));
    const std::size_t bound = libdeflate_gzip_compress_bound(compressor_, body.size());
    if (out_.size() < bound) out_.resize(bound);
    const std::size_t n =
        libdeflate_gzip_compress(compressor_, body.data(), body.size(), out_.data(), out_.size());
    if (n == 0) return fail(Error::internal("libdeflate_gzip_compress found no room"));
    return std::string(out_.data(), n);
  }

 private:
  std::mutex mu_;
  libdeflate_compressor* compressor_ = nullptr;
  std::vector<char> out_;
};

Result<std::string> gzip(std::string_view body) {
  static Gzipper gzipper;
  return gzipper.compress(body);
}

Result<std::string> brotli(std::string_view body) {
  std::string out(BrotliEncoderMaxCompressedSize(body.size()), '\0');
  std::size_t size = out.size();
  if (out.empty() ||
      !BrotliEncoderCompress(kBrotliQuality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, body.size(),
                             reinterpret_cast<const std::uint8_t*>(body.data()), &size,
                             reinterpret_cast<std::uint8_t*>(out.data()))) {
    return fail(Error::internal("BrotliEncoderCompress failed"));
  }
  out.resize(size);
  return out;
}

}  // namespace

std::string_view coding_name(ContentCoding c) {
  switch (c) {
    case ContentCoding::kGzip:
      return "gzip";
    case ContentCoding::kBrotli:
      return "br";
    case ContentCoding::kIdentity:
      break;
  }
  return "";
}

ContentCoding choose_coding(std::string_view accept_encoding) {
  // q of each coding as the header gives it; -1: not named.
  std::array<double, 3> q{-1, -1, -1};
  double star = -1;
  std::string_view rest = accept_encoding;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    auto semi = item.find(';');
    std::string name = to_lower(trim(item.substr(0, semi)));
    double value = 1;
    std::string_view params =
        semi == std::string_view::npos ? std::string_view() : item.substr(semi + 1);
    while (!params.empty()) {
      auto next = params.find(';');
      std::string_view p = params.substr(0, next);
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      auto eq = p.find('=');
      if (eq != std::string_view::npos && to_lower(trim(p.substr(0, eq))) == "q") {
        value = parse_q(p.substr(eq + 1));
      }
    }
    if (name == "br") {
      q[static_cast<int>(ContentCoding::kBrotli)] = value;
    } else if (name == "gzip" || name == "x-gzip") {
      q[static_cast<int>(ContentCoding::kGzip)] = value;
    } else if (name == "identity") {
      q[static_cast<int>(ContentCoding::kIdentity)] = value;
    } else if (name == "*") {
      star = value;
    }
  }
  // `*` stands for every coding not named (RFC 9110), identity included.
  for (auto c : {ContentCoding::kBrotli, ContentCoding::kGzip}) {
    if (q[static_cast<int>(c)] < 0) q[static_cast<int>(c)] = star;
  }
  // Unnamed, identity is acceptable but last: a client that offers any coding wants it.
  auto& identity = q[static_cast<int>(ContentCoding::kIdentity)];
  if (identity < 0) identity = star >= 0 ? star : kImplicitIdentityQ;
  ContentCoding best = ContentCoding::kIdentity;
  double best_q = 0;
  for (auto c : kPreference) {
    double v = q[static_cast<int>(c)];
    if (v > best_q) {
      best = c;
      best_q = v;
    }
  }
  return best;
}

Result<std::string> encode(std::string_view body, ContentCoding coding) {
  switch (coding) {
    case ContentCoding::kGzip:
      return gzip(body);
    case ContentCoding::kBrotli:
      return brotli(body);
    case ContentCoding::kIdentity:
      break;
  }
  return std::string(body);
}

EncodedBody::EncodedBody(std::shared_ptr<const std::string> text) : text_(std::move(text)) {
  forms_[static_cast<int>(ContentCoding::kIdentity)] = text_;
}

std::shared_ptr<const std::string> EncodedBody::get(ContentCoding coding, ContentCoding* served) {
  std::lock_guard lock(mu_);
  auto& form = forms_[static_cast<int>(coding)];
  if (!form) {
    ++compressions_;
    auto bytes = encode(*text_, coding);
    // A failure is kept as the identity text, so it is not retried on every request.
    form = bytes ? std::make_shared<const std::string>(std::move(*bytes)) : text_;
  }
  *served = form == text_ ? ContentCoding::kIdentity : coding;
  return form;
}

std::uint64_t EncodedBody::compressions() const {
  std::lock_guard lock(mu_);
  return compressions_;
}

}  // namespace cardiac::server
