// SPDX-License-Identifier: Apache-2.0
// The dashboard's embedded files as HTTP answers: each compressed once per coding, revalidated
// by ETag, sent with a Content-Security-Policy that allows no inline script and no other origin.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "server/encoding.h"
#include "server/web_assets.h"

namespace cardiac::server {

// Only this server's own files: no inline script or style element, no other origin, no frames,
// no forms posting elsewhere. uPlot sets element styles through the CSSOM, which style-src does
// not govern, so it needs no 'unsafe-inline'.
inline constexpr const char* kDashboardCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Browsers revalidate every time (a 304 costs one round trip and no body), so a new agent's page
// is never mixed with an old cached script.
inline constexpr const char* kAssetCacheControl = "no-cache";

struct AssetAnswer {
  int status = 200;  // 200 or 304
  std::shared_ptr<const std::string> bytes;
  ContentCoding coding = ContentCoding::kIdentity;
};

class StaticAssets {
 public:
  StaticAssets();  // every asset of web_assets()

  // The asset for a URL path, or null.
  [[nodiscard]] const WebAsset* find(std::string_view url) const;
  // The answer to a GET of `asset`: 304 when If-None-Match names its ETag (or is `*`), else its
  // bytes in the coding Accept-Encoding prefers (made once per coding, kept).
  AssetAnswer answer(const WebAsset& asset, std::string_view accept_encoding,
                     std::string_view if_none_match);

 private:
  std::map<std::string_view, std::pair<const WebAsset*, std::unique_ptr<EncodedBody>>> by_url_;
};

// Whether an If-None-Match header value matches `etag` (a list of tags, weak ones compared
// weakly as RFC 9110 §13.1.2 asks, or `*`).
[[nodiscard]] bool etag_matches(std::string_view if_none_match, std::string_view etag);

}  // namespace cardiac::server
