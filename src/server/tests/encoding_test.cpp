// SPDX-License-Identifier: Apache-2.0
// Accept-Encoding negotiation and the server's own compression.
#include "server/encoding.h"

#include <gtest/gtest.h>

#include <string>

#include "server/tests/decode.h"

namespace cardiac::server {
namespace {

using test_support::gunzip;
using test_support::unbrotli;

// A body shaped like an exposition: long, repetitive lines.
std::string sample_text() {
  std::string s;
  for (int gpu = 0; gpu < 8; ++gpu) {
    for (int m = 0; m < 60; ++m) {
      s += "cardiac_gpu_metric_" + std::to_string(m) + "{gpu=\"" + std::to_string(gpu) +
           "\",uuid=\"GPU-0000\",hostname=\"node\"} " + std::to_string(m * gpu) + "\n";
    }
  }
  return s;
}

TEST(ChooseCoding, NoHeaderOrIdentityIsPlain) {
  EXPECT_EQ(choose_coding(""), ContentCoding::kIdentity);
  EXPECT_EQ(choose_coding("identity"), ContentCoding::kIdentity);
  EXPECT_EQ(choose_coding("deflate, zstd"), ContentCoding::kIdentity);
}

TEST(ChooseCoding, PrefersBrotliThenGzipOnATie) {
  EXPECT_EQ(choose_coding("gzip, deflate, br"), ContentCoding::kBrotli);        // browsers
  EXPECT_EQ(choose_coding("deflate, gzip, br, zstd"), ContentCoding::kBrotli);  // curl
  EXPECT_EQ(choose_coding("gzip"), ContentCoding::kGzip);                       // Prometheus
  EXPECT_EQ(choose_coding("x-gzip"), ContentCoding::kGzip);
  EXPECT_EQ(choose_coding(" GZIP ,  BR "), ContentCoding::kBrotli);
}

TEST(ChooseCoding, HonoursQValues) {
  // cpp-httplib's own check found "br" in these and answered brotli.
  EXPECT_EQ(choose_coding("br;q=0, gzip"), ContentCoding::kGzip);
  EXPECT_EQ(choose_coding("br; q=0.000, gzip;q=0"), ContentCoding::kIdentity);
  EXPECT_EQ(choose_coding("br;q=0.5, gzip;q=0.8"), ContentCoding::kGzip);
  EXPECT_EQ(choose_coding("gzip;q=0.5, identity;q=0.9"), ContentCoding::kIdentity);
  // Identity not named comes after any coding offered, however low its q.
  EXPECT_EQ(choose_coding("gzip;q=0.001"), ContentCoding::kGzip);
  EXPECT_EQ(choose_coding("gzip;level=9;q=0.2, br;q=0.1"), ContentCoding::kGzip);
}

TEST(ChooseCoding, StarCoversWhatIsNotNamed) {
  EXPECT_EQ(choose_coding("*"), ContentCoding::kBrotli);
  EXPECT_EQ(choose_coding("br;q=0, *"), ContentCoding::kGzip);
  EXPECT_EQ(choose_coding("*;q=0"), ContentCoding::kIdentity);          // nothing acceptable: plain
  EXPECT_EQ(choose_coding("br;q=0.4, *;q=0.5"), ContentCoding::kGzip);  // gzip ties identity
}

TEST(ChooseCoding, BadQValuesCountAsOne) {
  EXPECT_EQ(choose_coding("gzip;q=abc"), ContentCoding::kGzip);
  EXPECT_EQ(choose_coding("gzip;q=7, identity"), ContentCoding::kGzip);
}

TEST(Encode, RoundTrips) {
  const std::string text = sample_text();
  auto gz = encode(text, ContentCoding::kGzip);
  ASSERT_TRUE(gz);
  EXPECT_LT(gz->size(), text.size() / 4);
  EXPECT_EQ(gunzip(*gz), text);
  auto br = encode(text, ContentCoding::kBrotli);
  ASSERT_TRUE(br);
  EXPECT_LT(br->size(), text.size() / 4);
  EXPECT_EQ(unbrotli(*br), text);
  EXPECT_EQ(encode(text, ContentCoding::kIdentity), text);
  EXPECT_EQ(gunzip(encode("", ContentCoding::kGzip).value()), "");
  EXPECT_EQ(unbrotli(encode("", ContentCoding::kBrotli).value()), "");
}

TEST(EncodedBody, CompressesEachCodingOnce) {
  auto text = std::make_shared<const std::string>(sample_text());
  EncodedBody body(text);
  ContentCoding served = ContentCoding::kIdentity;
  auto plain = body.get(ContentCoding::kIdentity, &served);
  EXPECT_EQ(plain, text);  // the text itself, not a copy
  EXPECT_EQ(served, ContentCoding::kIdentity);
  EXPECT_EQ(body.compressions(), 0U);
  auto br1 = body.get(ContentCoding::kBrotli, &served);
  EXPECT_EQ(served, ContentCoding::kBrotli);
  auto br2 = body.get(ContentCoding::kBrotli, &served);
  EXPECT_EQ(br1, br2);
  EXPECT_EQ(body.compressions(), 1U);
  auto gz = body.get(ContentCoding::kGzip, &served);
  EXPECT_EQ(served, ContentCoding::kGzip);
  EXPECT_EQ(gunzip(*gz), *text);
  EXPECT_EQ(body.compressions(), 2U);
}

}  // namespace
}  // namespace cardiac::server
