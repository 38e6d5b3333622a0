// SPDX-License-Identifier: Apache-2.0
// The dashboard's files (web/ and uPlot's dist files), embedded at build time by web/embed.cmake.
#pragma once

#include <span>
#include <string_view>

namespace cardiac::server {

struct WebAsset {
  std::string_view url;           // "/", "/app.js", "/vendor/uPlot.iife.min.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view bytes;
  std::string_view etag;  // a quoted strong tag from the file's SHA-256
};

// Every embedded file; defined in the generated web_assets.cpp (cardiac_web_assets).
std::span<const WebAsset> web_assets();

}  // namespace cardiac::server
