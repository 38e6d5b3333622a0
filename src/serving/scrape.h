// SPDX-License-Identifier: Apache-2.0
// Reads an inference engine's /metrics over HTTP (any URL the operator configured; http, or
// https when cpp-httplib was built with TLS), bounded in time and size. Every failure becomes
// EngineStats::error with the reason: an engine that cannot be read is reported, never taken
// for an idle one.
#pragma once

#include <string>

#include "core/clock.h"
#include "serving/engine_metrics.h"

namespace cardiac::serving {

inline constexpr std::size_t kMaxScrapeBytes = 8U << 20U;

struct ScrapeOptions {
  DurationNs timeout = 2 * kNsPerSec;  // connect and each read
};

// The URL must be http://host[:port]/path or https://…; anything else is an error in the
// result. `now` stamps it.
EngineStats scrape_engine(const std::string& url, const ScrapeOptions& o, TimeNs now);

// "" when `url` is one scrape_engine can read, else why not (for the configuration reader).
std::string check_engine_url(const std::string& url);

}  // namespace cardiac::serving
