// SPDX-License-Identifier: Apache-2.0
// Accept-Encoding negotiation and one-shot gzip (zlib) / brotli (libbrotlienc) compression.
#include "server/encoding.h"

#include <brotli/encode.h>
#include <zlib.h>

#include <cstdlib>
#include <limits>

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

Result<std::string> gzip(std::string_view body) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper rather than zlib's.
  if (deflateInit2(&z, kGzipLevel, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return fail(Error::internal("deflateInit2 failed"));
  }
  if (body.size() > std::numeric_limits<uInt>::max()) {
    deflateEnd(&z);
    return fail(Error::invalid("body too large to gzip in one call"));
  }
  std::string out(deflateBound(&z, static_cast<uLong>(body.size())), '\0');
  // zlib's API is not const-correct; deflate only reads next_in.
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return fail(Error::internal("deflate did not finish"));
  return out;
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
