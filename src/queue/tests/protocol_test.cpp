// SPDX-License-Identifier: Apache-2.0
// Request and response framing: bounds, shapes, error codes both ways.
#include "queue/protocol.h"

#include <gtest/gtest.h>

namespace cardiac::queue {
namespace {

TEST(Protocol, RequestsMustBeObjectsWithAnOp) {
  EXPECT_TRUE(parse_request(R"({"op":"list"})"));
  EXPECT_EQ(parse_request("").error().code, ErrorCode::kParse);
  EXPECT_EQ(parse_request("{not json").error().code, ErrorCode::kParse);
  EXPECT_EQ(parse_request("[1,2]").error().code, ErrorCode::kParse);
  EXPECT_EQ(parse_request(R"({"id":3})").error().code, ErrorCode::kParse);
  EXPECT_EQ(parse_request(R"({"op":3})").error().code, ErrorCode::kParse);
}

TEST(Protocol, OversizedRequestsAreRefused) {
  std::string big = R"({"op":"submit","pad":")" + std::string(kMaxRequestBytes, 'x') + "\"}";
  auto r = parse_request(big);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().what().find("limit"), std::string::npos);
}

TEST(Protocol, ErrorCodesSurviveTheRoundTrip) {
  for (auto code : {ErrorCode::kPermission, ErrorCode::kNotFound, ErrorCode::kInvalidArgument,
                    ErrorCode::kUnavailable}) {
    Error e;
    e.code = code;
    e.message = "nope";
    auto back = parse_response(dump_line(error_response(e)));
    ASSERT_FALSE(back);
    EXPECT_EQ(back.error().code, code);
    EXPECT_EQ(back.error().message, "nope");
  }
  auto ok = parse_response(dump_line(ok_response({{"id", 4}})));
  ASSERT_TRUE(ok);
  EXPECT_EQ((*ok)["id"], 4);
  EXPECT_TRUE((*ok)["ok"].get<bool>());
  EXPECT_FALSE(parse_response("garbage"));
}

TEST(Protocol, LinesAreOneLineEvenWithBadUtf8) {
  std::string line = dump_line({{"data", std::string("a\xff\nb")}});
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_TRUE(parse_response(dump_line(ok_response({{"data", std::string("\xc3")}}))));
}

}  // namespace
}  // namespace cardiac::queue
