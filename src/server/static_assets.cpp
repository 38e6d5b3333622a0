// SPDX-License-Identifier: Apache-2.0
#include "server/static_assets.h"

#include "core/strings.h"

namespace cardiac::server {
namespace {

// Bodies below this go out as they are (as the API's, http_server.cpp).
constexpr std::size_t kMinCompressBytes = 512;

}  // namespace

StaticAssets::StaticAssets() {
  for (const auto& a : web_assets()) {
    by_url_.emplace(a.url, std::make_pair(&a, std::make_unique<EncodedBody>(
                                                  std::make_shared<const std::string>(a.bytes))));
  }
}

const WebAsset* StaticAssets::find(std::string_view url) const {
  auto it = by_url_.find(url);
  return it == by_url_.end() ? nullptr : it->second.first;
}

AssetAnswer StaticAssets::answer(const WebAsset& asset, std::string_view accept_encoding,
                                 std::string_view if_none_match) {
  AssetAnswer out;
  if (!if_none_match.empty() && etag_matches(if_none_match, asset.etag)) {
    out.status = 304;
    out.bytes = std::make_shared<const std::string>();
    return out;
  }
  auto& body = *by_url_.at(asset.url).second;
  ContentCoding want = asset.bytes.size() < kMinCompressBytes ? ContentCoding::kIdentity
                                                              : choose_coding(accept_encoding);
  out.bytes = body.get(want, &out.coding);
  return out;
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  auto strip_weak = [](std::string_view t) { return t.starts_with("W/") ? t.substr(2) : t; };
  std::string_view want = strip_weak(etag);
  for (auto part : split(if_none_match, ',')) {
    std::string_view t = trim(part);
    if (t == "*" || strip_weak(t) == want) return true;
  }
  return false;
}

}  // namespace cardiac::server
