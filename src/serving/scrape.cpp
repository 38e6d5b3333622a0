// SPDX-License-Identifier: Apache-2.0
#include "serving/scrape.h"

#include <httplib.h>
#include <signal.h>

#include <fmt/format.h>

#include "core/time.h"

namespace cardiac::serving {
namespace {

struct Url {
  std::string origin;  // scheme://host:port
  std::string path;
};

Result<Url> split_url(const std::string& url) {
  std::string_view s(url);
  std::string_view scheme;
  if (s.starts_with("http://")) {
    scheme = "http://";
  } else if (s.starts_with("https://")) {
    scheme = "https://";
  } else {
    return fail(Error::invalid("expected an http:// or https:// URL", url));
  }
  std::string_view rest = s.substr(scheme.size());
  const auto slash = rest.find('/');
  Url u;
  std::string_view host = rest.substr(0, slash);
  if (host.empty()) return fail(Error::invalid("no host in the URL", url));
  u.origin = std::string(scheme) + std::string(host);
  u.path = slash == std::string_view::npos ? "/metrics" : std::string(rest.substr(slash));
  return u;
}

// A peer that closes while we write must not kill the agent with SIGPIPE.
class BlockSigpipe {
 public:
  BlockSigpipe() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockSigpipe() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockSigpipe(const BlockSigpipe&) = delete;
  BlockSigpipe& operator=(const BlockSigpipe&) = delete;

 private:
  sigset_t old_{};
};

}  // namespace

std::string check_engine_url(const std::string& url) {
  auto u = split_url(url);
  return u ? std::string() : u.error().message;
}

EngineStats scrape_engine(const std::string& url, const ScrapeOptions& o, TimeNs now) {
  EngineStats out;
  out.url = url;
  out.at = now;
  auto u = split_url(url);
  if (!u) {
    out.error = u.error().message;
    return out;
  }
  BlockSigpipe guard;
  std::string body;
  bool too_big = false;
  httplib::Result res{nullptr, httplib::Error::Unknown};
  try {
    httplib::Client cli(u->origin);
    const auto sec = static_cast<time_t>(o.timeout / kNsPerSec);
    const auto usec = static_cast<time_t>((o.timeout % kNsPerSec) / kNsPerUs);
    cli.set_connection_timeout(sec, usec);
    cli.set_read_timeout(sec, usec);
    cli.set_write_timeout(sec, usec);
    res = cli.Get(u->path, [&](const char* data, std::size_t n) {
      if (body.size() + n > kMaxScrapeBytes) {
        too_big = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
  } catch (const std::exception& e) {
    out.error = fmt::format("the HTTP client failed: {}", e.what());
    return out;
  }
  if (too_big) {
    out.error = fmt::format("the answer is larger than {} MiB", kMaxScrapeBytes >> 20U);
    return out;
  }
  if (!res) {
    const auto e = res.error();
    const bool late = e == httplib::Error::ConnectionTimeout || e == httplib::Error::Read;
    out.error = late ? fmt::format("no answer within {} (httplib: {})", format_duration(o.timeout),
                                   httplib::to_string(e))
                : e == httplib::Error::Connection
                    ? fmt::format(
                          "could not connect: refused, unreachable, or the host name did "
                          "not resolve (httplib: {})",
                          httplib::to_string(e))
                    : fmt::format("the request failed (httplib: {})", httplib::to_string(e));
    return out;
  }
  if (res->status != 200) {
    out.error = fmt::format("HTTP {} from the engine", res->status);
    return out;
  }
  auto samples = parse_prom_text(body, url);
  if (!samples) {
    out.error = samples.error().what();
    return out;
  }
  EngineStats s = engine_stats(*samples);
  s.url = url;
  s.at = now;
  return s;
}

}  // namespace cardiac::serving
