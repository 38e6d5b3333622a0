// SPDX-License-Identifier: Apache-2.0
// HTTP receivers (Alertmanager API v2, generic webhook) on cpp-httplib.
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>

#include <fmt/format.h>

#include "core/time.h"
#include "notify/notifier.h"
#include "notify/sigpipe.h"

namespace cardiac::notify {
namespace {

// Error bodies can be large HTML pages; a short printable prefix is enough to diagnose.
std::string snippet(const std::string& body) {
  std::string out = body.substr(0, 200);
  for (char& c : out)
    if (std::iscntrl(static_cast<unsigned char>(c))) c = ' ';
  if (body.size() > out.size()) out += "...";
  return out;
}

// httplib names its errors in one word ("Connection", "Read"); a person needs the sentence.
std::string describe(httplib::Error err, DurationNs timeout) {
  const std::string limit = format_duration(timeout);
  std::string what;
  switch (err) {
    case httplib::Error::Connection:
      what = "could not connect: refused, unreachable, or the host name did not resolve";
      break;
    case httplib::Error::ConnectionTimeout:
      what = fmt::format("no connection within the {} timeout", limit);
      break;
    case httplib::Error::Read:
      what = fmt::format(
          "no complete response: the receiver closed the connection or sent nothing within {}",
          limit);
      break;
    case httplib::Error::Write:
      what = fmt::format("the request could not be sent: the connection broke or stalled for {}",
                         limit);
      break;
    case httplib::Error::BindIPAddress:
      what = "could not bind the local address";
      break;
    case httplib::Error::ExceedRedirectCount:
      what = "too many redirects";
      break;
    case httplib::Error::Canceled:
      what = "the request was canceled";
      break;
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification:
      what = "TLS failed (handshake, certificates or server verification)";
      break;
    default:
      what = "the HTTP client failed";
      break;
  }
  return fmt::format("{} (httplib: {})", what, httplib::to_string(err));
}

// Errors name only scheme://host:port: webhook paths often carry secret tokens.
Status post_json(const HttpUrl& url, const std::string& path, const httplib::Headers& headers,
                 const std::string& body, DurationNs timeout, bool only_200) {
  detail::SigpipeGuard guard;
  const std::string where = fmt::format("POST {}", url.origin());
  try {
    httplib::Client cli(url.origin());
    auto sec = static_cast<time_t>(timeout / kNsPerSec);
    auto usec = static_cast<time_t>((timeout % kNsPerSec) / kNsPerUs);
    cli.set_connection_timeout(sec, usec);
    cli.set_read_timeout(sec, usec);
    cli.set_write_timeout(sec, usec);
    auto res = cli.Post(path, headers, body, "application/json");
    if (!res) {
      auto err = res.error();
      std::string msg = describe(err, timeout);
      if (err == httplib::Error::ConnectionTimeout) return fail(Error::timeout(msg, where));
      return fail(Error::unavailable(msg, where));
    }
    bool ok = only_200 ? res->status == 200 : (res->status >= 200 && res->status < 300);
    if (!ok)
      return fail(Error::unavailable(fmt::format("HTTP {}{}{}", res->status,
                                                 res->body.empty() ? "" : ": ", snippet(res->body)),
                                     where));
    return {};
  } catch (const std::exception& e) {
    // httplib builds a std::regex from the origin and may throw on allocation; never let a
    // notifier take down its worker thread.
    return fail(Error::unavailable(e.what(), where));
  }
}

bool parse_port(std::string_view s, int& port) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  return ec == std::errc() && ptr == s.data() + s.size() && port > 0 && port <= 65535;
}

}  // namespace

Notifier::~Notifier() = default;

std::string HttpUrl::origin() const {
  return fmt::format("{}://{}:{}", scheme, host, port);
}

Result<HttpUrl> parse_http_url(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return fail(Error::invalid(std::string(why), std::string(url)));
  };
  auto sep = url.find("://");
  if (sep == std::string_view::npos) return bad("not a URL (expected http://host:port/path)");
  HttpUrl out;
  out.scheme = std::string(url.substr(0, sep));
  std::transform(out.scheme.begin(), out.scheme.end(), out.scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (out.scheme != "http" && out.scheme != "https") return bad("scheme must be http or https");
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (out.scheme == "https")
    return fail(Error::unsupported("https needs cpp-httplib built with OpenSSL", std::string(url)));
#endif
  std::string_view rest = url.substr(sep + 3);
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  out.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos)
    return bad("credentials in the URL are not supported; use a header");
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {  // IPv6 literal
    auto close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 address");
    out.host = std::string(authority.substr(0, close + 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return bad("junk after IPv6 address");
    if (!after.empty()) port_text = after.substr(1);
    if (!after.empty() && port_text.empty()) return bad("empty port");
  } else {
    auto colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return bad("empty port");
    }
  }
  if (out.host.empty() || out.host == "[]") return bad("missing host");
  if (port_text.empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else if (!parse_port(port_text, out.port)) {
    return bad("port must be 1-65535");
  }
  return out;
}

Result<std::unique_ptr<AlertmanagerNotifier>> AlertmanagerNotifier::create(
    std::string_view base_url, DurationNs timeout) {
  auto url = parse_http_url(base_url);
  if (!url) return fail(url.error().with_context("alertmanager"));
  while (!url->path.empty() && url->path.back() == '/') url->path.pop_back();
  url->path += "/api/v2/alerts";
  return std::unique_ptr<AlertmanagerNotifier>(new AlertmanagerNotifier(std::move(*url), timeout));
}

std::string AlertmanagerNotifier::name() const {
  return "alertmanager " + url_.origin();
}

Status AlertmanagerNotifier::deliver(const std::vector<Notification>& batch) {
  if (batch.empty()) return {};
  return post_json(url_, url_.path, {}, dump_json(to_alertmanager_v2(batch)), timeout_, true);
}

Result<std::unique_ptr<WebhookNotifier>> WebhookNotifier::create(std::string_view url,
                                                                 Headers headers,
                                                                 DurationNs timeout) {
  auto parsed = parse_http_url(url);
  if (!parsed) return fail(parsed.error().with_context("webhook"));
  return std::unique_ptr<WebhookNotifier>(
      new WebhookNotifier(std::move(*parsed), std::move(headers), timeout));
}

std::string WebhookNotifier::name() const {
  return "webhook " + url_.origin();
}

Status WebhookNotifier::deliver(const std::vector<Notification>& batch) {
  if (batch.empty()) return {};
  httplib::Headers headers(headers_.begin(), headers_.end());
  return post_json(url_, url_.path, headers, dump_json(to_webhook_body(batch)), timeout_, false);
}

}  // namespace cardiac::notify
