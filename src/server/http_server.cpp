// SPDX-License-Identifier: Apache-2.0
// The agent's HTTP API and /metrics endpoint; serves what a Backend supplies, computes nothing.
#include "server/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <regex>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/strings.h"
#include "core/thread_name.h"
#include "server/encoding.h"
#include "server/guarded_server.h"
#include "server/params.h"
#include "server/static_assets.h"

namespace cardiac::server {
namespace {

using nlohmann::json;

// Who may call an endpoint; see authorize().
enum class Access {
  kOpen,    // /metrics, /healthz: scrapers must not need secrets unless asked to
  kRead,    // GET /api/...: open on loopback, token on any other bind
  kMutate,  // POST /api/...: always the token, on loopback too, and never cross-site
  kPage,    // the dashboard's files: no data in them, never a token (metrics_need_token too)
};

// Thrown inside handlers to leave with a 4xx; caught by the route wrapper. Keeps each handler a
// straight line instead of a ladder of early returns.
struct HttpError {
  int status;
  std::string message;
  std::string field;
};

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  // dump() with replace: backend strings (hostnames, process names) may not be valid UTF-8,
  // and a throw here would turn a good answer into a 500.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message,
                const std::string& field = {}) {
  json body = {{"error", message}};
  if (!field.empty()) body["field"] = field;
  send_json(res, status, body);
}

int status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kParse:
      return 400;
    case ErrorCode::kPermission:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kUnsupported:
      return 501;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kTimeout:
      return 504;
    default:
      return 500;
  }
}

// Sends a backend Result: the value as 200, the error with its mapped status.
void send_result(httplib::Response& res, const Result<json>& r) {
  if (r) {
    send_json(res, 200, *r);
    return;
  }
  int status = status_for(r.error().code);
  if (status >= 500) log::warn("http: backend error: {}", r.error().what());
  send_error(res, status, r.error().what());
}

// Answers below this go out as they are: compressing them saves next to nothing.
constexpr std::size_t kMinCompressBytes = 512;

// Sends `bytes`, already in `coding`, as the body. A content provider of known length is the
// one path on which cpp-httplib 0.11 neither compresses nor copies the body (it compresses only
// `res.body`, at brotli quality 11 and whatever Content-Encoding already says), so every body
// this server produces goes out through here.
void send_bytes(httplib::Response& res, std::shared_ptr<const std::string> bytes,
                const std::string& content_type, ContentCoding coding) {
  res.body.clear();
  auto types = res.headers.equal_range("Content-Type");
  res.headers.erase(types.first, types.second);
  res.set_header("Vary", "Accept-Encoding");
  if (coding != ContentCoding::kIdentity) {
    res.set_header("Content-Encoding", std::string(coding_name(coding)));
  }
  if (bytes->empty()) {
    res.set_content("", content_type);  // httplib compresses no empty body
    return;
  }
  const std::size_t size = bytes->size();
  res.set_content_provider(
      size, content_type,
      [bytes = std::move(bytes)](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        return sink.write(bytes->data() + offset, length);
      });
}

// Takes a body a handler set with set_content and sends it in the coding the request prefers,
// compressed here at a cheap level (encoding.h) rather than by httplib.
void encode_body(const httplib::Request& req, httplib::Response& res) {
  if (res.body.empty() || res.content_provider_ || res.has_header("Content-Encoding")) return;
  ContentCoding coding = res.body.size() < kMinCompressBytes
                             ? ContentCoding::kIdentity
                             : choose_coding(req.get_header_value("Accept-Encoding"));
  std::string type = res.get_header_value("Content-Type");
  if (coding != ContentCoding::kIdentity) {
    if (auto packed = encode(res.body, coding)) {
      send_bytes(res, std::make_shared<const std::string>(std::move(*packed)), type, coding);
      return;
    }
  }
  send_bytes(res, std::make_shared<const std::string>(std::move(res.body)), type,
             ContentCoding::kIdentity);
}

// Compares without an early exit so response timing does not reveal a token prefix.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0U : 1U;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

std::string param(const httplib::Request& req, const char* name) {
  return req.has_param(name) ? req.get_param_value(name) : std::string();
}

// A time parameter with a default; a bad value is a 400 naming the field.
TimeNs time_param(const httplib::Request& req, const char* name, TimeNs now, TimeNs fallback) {
  std::string text = param(req, name);
  if (text.empty()) return fallback;
  auto t = parse_time_param(text, now);
  if (!t) throw HttpError{400, t.error().what(), name};
  return *t;
}

std::int64_t int_param(const httplib::Request& req, const char* name, std::int64_t fallback,
                       std::int64_t lo, std::int64_t hi) {
  std::string text = param(req, name);
  if (text.empty()) return fallback;
  auto v = parse_i64(text);
  if (!v || *v < lo || *v > hi) {
    throw HttpError{400,
                    "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                        "], got '" + text + "'",
                    name};
  }
  return *v;
}

// The JSON object body of a POST; empty allowed only when `optional`.
json body_object(const httplib::Request& req, bool optional) {
  if (trim(req.body).empty()) {
    if (optional) return json::object();
    throw HttpError{400, "request body must be a JSON object", "body"};
  }
  // A browser may send text/plain or a form to any site without asking first; insisting on
  // JSON makes a cross-site request need a CORS preflight, which this server never grants.
  std::string type = to_lower(req.get_header_value("Content-Type"));
  if (trim(std::string_view(type).substr(0, type.find(';'))) != "application/json") {
    throw HttpError{415, "request body must be sent as Content-Type: application/json",
                    "Content-Type"};
  }
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw HttpError{400, "request body is not valid JSON", "body"};
  if (!body.is_object()) throw HttpError{400, "request body must be a JSON object", "body"};
  return body;
}

// The identity a mutation is recorded under: the token's holder. A `by` in the body is what the
// caller says about itself, kept next to it but never instead of it.
std::string recorded_as(const json& body);

// A string member of a body object; absent → fallback, wrong type → 400 naming the member.
std::string body_string(const json& body, const char* name, std::string fallback) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw HttpError{400, std::string(name) + " must be a string", name};
  return it->get<std::string>();
}

std::string recorded_as(const json& body) {
  std::string by = body_string(body, "by", "");
  return by.empty() ? kTokenPrincipal : std::string(kTokenPrincipal) + " (says " + by + ")";
}

}  // namespace

struct HttpServer::Impl {
  Backend& backend;
  ServerOptions opt;
  const Clock& clock;
  bool loopback_bind = true;
  std::unique_ptr<httplib::Server> svr;
  std::thread thread;
  StaticAssets assets;  // the dashboard page at /

  // The latest exposition and its compressed forms: the backend hands out the same text until
  // a new sample, so each form is made once per sample however often and by whom it is scraped.
  std::mutex metrics_mu;
  std::shared_ptr<EncodedBody> metrics_body;
  std::uint64_t retired_compressions = 0;  // those of earlier bodies

  std::shared_ptr<EncodedBody> metrics_for(std::shared_ptr<const std::string> text) {
    std::lock_guard lock(metrics_mu);
    if (!metrics_body || metrics_body->text() != text) {
      if (metrics_body) retired_compressions += metrics_body->compressions();
      metrics_body = std::make_shared<EncodedBody>(std::move(text));
    }
    return metrics_body;
  }

  Impl(Backend& b, ServerOptions o, const Clock& c) : backend(b), opt(std::move(o)), clock(c) {}

  // Returns false after filling `res` with 401/403 when the caller may not proceed.
  bool authorize(const httplib::Request& req, httplib::Response& res, Access access) const {
    if (access == Access::kMutate && !same_origin(req)) {
      send_error(res, 403,
                 "cross-site request refused (Origin " + req.get_header_value("Origin") + ")",
                 "Origin");
      return false;
    }
    bool need_token = access == Access::kMutate || (access == Access::kRead && !loopback_bind) ||
                      (access == Access::kOpen && opt.metrics_need_token);
    if (!need_token) return true;
    if (opt.token.empty()) {
      // Only kMutate gets here (start() refuses the other cases without a token).
      send_error(res, 403, "this server has no API token, so it accepts no changes");
      return false;
    }
    // RFC 7235: the scheme is case-insensitive ("bearer", "BEARER").
    std::string auth(trim(req.get_header_value("Authorization")));
    auto space = auth.find_first_of(" \t");
    if (space == std::string::npos || to_lower(auth.substr(0, space)) != "bearer") {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, "missing 'Authorization: Bearer <token>' header");
      return false;
    }
    if (!constant_time_equal(trim(std::string_view(auth).substr(space + 1)), opt.token)) {
      send_error(res, 403, "invalid token");
      return false;
    }
    return true;
  }

  // A request without Origin comes from a program (curl, the CLI, a script), not a page. One
  // with Origin must come from a page this server served, i.e. the Host it was sent to.
  static bool same_origin(const httplib::Request& req) {
    if (!req.has_header("Origin")) return true;
    std::string origin = to_lower(trim(req.get_header_value("Origin")));
    std::string host = to_lower(trim(req.get_header_value("Host")));
    return !host.empty() && (origin == "http://" + host || origin == "https://" + host);
  }

  // Every route goes through here: auth first, then the handler inside a catch-all so a
  // throwing backend costs one request a 500, never the agent.
  httplib::Server::Handler route(
      Access access, std::function<void(const httplib::Request&, httplib::Response&)> h) {
    return [this, access, h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
      try {
        if (authorize(req, res, access)) h(req, res);
      } catch (const HttpError& e) {
        send_error(res, e.status, e.message, e.field);
      } catch (const std::exception& e) {
        log::error("http: {} {} failed: {}", req.method, req.path, e.what());
        send_error(res, 500, std::string("internal error: ") + e.what());
      } catch (...) {
        log::error("http: {} {} failed with a non-standard exception", req.method, req.path);
        send_error(res, 500, "internal error");
      }
      encode_body(req, res);
    };
  }

  // Every route with its method, for 405 answers (httplib itself only knows 404).
  std::vector<std::pair<std::regex, std::string>> known;
  void get(const std::string& pattern, Access access,
           std::function<void(const httplib::Request&, httplib::Response&)> h) {
    known.emplace_back(std::regex(pattern), "GET");
    svr->Get(pattern, route(access, std::move(h)));
  }
  void post(const std::string& pattern, Access access,
            std::function<void(const httplib::Request&, httplib::Response&)> h) {
    known.emplace_back(std::regex(pattern), "POST");
    svr->Post(pattern, route(access, std::move(h)));
  }
  // "GET, HEAD" or "POST" for a known path; empty for an unknown one.
  std::string allowed_methods(const std::string& path) const {
    std::string out;
    for (const auto& [re, method] : known) {
      if (!std::regex_match(path, re)) continue;
      if (!out.empty()) out += ", ";
      out += method == "GET" ? "GET, HEAD" : method;
    }
    return out;
  }

  void install_routes();
  void install_asset_routes();
};

// The page and its scripts carry no data (that comes from the API, under its own rules), so
// they are open on any bind: a browser cannot send a bearer token for a page load.
void HttpServer::Impl::install_asset_routes() {
  for (const auto& a : web_assets()) {
    const WebAsset* asset = &a;
    get(std::string(a.url) == "/"
            ? "/"
            : std::regex_replace(std::string(a.url), std::regex(R"([.])"), R"(\.)"),
        Access::kPage, [this, asset](const auto& req, auto& res) {
          auto answer = assets.answer(*asset, req.get_header_value("Accept-Encoding"),
                                      req.get_header_value("If-None-Match"));
          res.set_header("ETag", std::string(asset->etag));
          res.set_header("Cache-Control", kAssetCacheControl);
          res.set_header("Content-Security-Policy", kDashboardCsp);
          res.set_header("X-Content-Type-Options", "nosniff");
          res.set_header("Referrer-Policy", "no-referrer");
          res.status = answer.status;
          if (answer.status == 304) return;
          send_bytes(res, std::move(answer.bytes), std::string(asset->content_type), answer.coding);
        });
  }
}

void HttpServer::Impl::install_routes() {
  get("/metrics", Access::kOpen, [this](const auto& req, auto& res) {
    auto text = backend.metrics_text();
    if (!text) text = std::make_shared<const std::string>();
    auto body = metrics_for(std::move(text));
    ContentCoding served = ContentCoding::kIdentity;
    auto bytes = body->get(body->text()->size() < kMinCompressBytes
                               ? ContentCoding::kIdentity
                               : choose_coding(req.get_header_value("Accept-Encoding")),
                           &served);
    send_bytes(res, std::move(bytes), kMetricsContentType, served);
  });
  get("/healthz", Access::kOpen, [this](const auto&, auto& res) {
    std::string why;
    bool ok = backend.healthy(&why);
    res.status = ok ? 200 : 503;
    res.set_content(ok ? "ok\n" : (why.empty() ? "unhealthy" : why) + "\n",
                    "text/plain; charset=utf-8");
  });
  get("/api/v1/status", Access::kRead,
      [this](const auto&, auto& res) { send_json(res, 200, backend.status()); });
  get("/api/v1/history", Access::kRead, [this](const auto& req, auto& res) {
    TimeNs now = clock.now();
    HistoryQuery q;
    q.metric = param(req, "metric");
    if (q.metric.empty()) throw HttpError{400, "metric is required", "metric"};
    if (req.has_param("gpu")) {
      q.gpu = static_cast<int>(int_param(req, "gpu", 0, 0, 1023));
    }
    q.since = time_param(req, "since", now, now - 3600 * kNsPerSec);
    q.until = time_param(req, "until", now, now);
    if (q.since > q.until) throw HttpError{400, "since is after until", "since"};
    q.step = 60 * kNsPerSec;  // the documented default, as `cardiac history --step`
    std::string step = param(req, "step");
    if (!step.empty()) {
      auto d = parse_duration_param(step);
      if (!d) throw HttpError{400, d.error().what(), "step"};
      q.step = *d;
    }
    send_result(res, backend.history(q));
  });
  get("/api/v1/events", Access::kRead, [this](const auto& req, auto& res) {
    TimeNs now = clock.now();
    TimeNs since = time_param(req, "since", now, now - 24 * 3600 * kNsPerSec);
    auto limit = static_cast<int>(int_param(req, "limit", 100, 1, 10000));
    send_result(res, backend.events(since, limit));
  });
  get("/api/v1/alerts", Access::kRead, [this](const auto& req, auto& res) {
    std::string all = to_lower(param(req, "all"));
    send_result(res, backend.alerts(all == "1" || all == "true" || all == "yes"));
  });
  get("/api/v1/dashboard/overview", Access::kRead,
      [this](const auto&, auto& res) { send_result(res, backend.dashboard_overview()); });
  get("/api/v1/dashboard/chart", Access::kRead, [this](const auto& req, auto& res) {
    std::string target = param(req, "gpu");
    std::optional<int> gpu;
    if (target.empty()) throw HttpError{400, "gpu is required (an index or 'host')", "gpu"};
    if (target != "host") gpu = static_cast<int>(int_param(req, "gpu", 0, 0, 1023));
    std::string range_text = param(req, "range");
    auto range = dashboard::parse_chart_range(range_text.empty() ? "1h" : range_text);
    if (!range) throw HttpError{400, range.error().what(), "range"};
    send_result(res, backend.dashboard_chart(gpu, *range));
  });
  install_asset_routes();
  get("/api/v1/queue", Access::kRead,
      [this](const auto&, auto& res) { send_result(res, backend.queue()); });
  get("/api/v1/fleet", Access::kRead,
      [this](const auto&, auto& res) { send_result(res, backend.fleet()); });
  post(R"(/api/v1/alerts/([^/]+)/ack)", Access::kMutate, [this](const auto& req, auto& res) {
    auto id = parse_i64(req.matches[1].str());
    if (!id || *id < 0) throw HttpError{400, "alert id must be an integer", "id"};
    json body = body_object(req, /*optional=*/true);
    send_result(res, backend.ack_alert(*id, recorded_as(body)));
  });
  post("/api/v1/silences", Access::kMutate, [this](const auto& req, auto& res) {
    json body = body_object(req, /*optional=*/false);
    std::string matcher = body_string(body, "matcher", "");
    if (trim(matcher).empty()) throw HttpError{400, "matcher is required", "matcher"};
    std::string dur_text = body_string(body, "duration", "");
    if (dur_text.empty()) throw HttpError{400, "duration is required", "duration"};
    auto duration = parse_duration_param(dur_text);
    if (!duration) throw HttpError{400, duration.error().what(), "duration"};
    std::string comment = body_string(body, "comment", "");
    send_result(res, backend.silence(matcher, *duration, recorded_as(body), comment));
  });

  // Errors httplib produces itself (404, 413, 400 on a bad request line) come with an empty
  // body; give them the same JSON shape as ours. Our own errors already have a body.
  svr->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    // httplib's own 404 (no body; ours left through a content provider): no route for this
    // method; 405 when another method has one.
    if (res.status == 404 && res.body.empty() && !res.content_provider_) {
      std::string allow = allowed_methods(req.path);
      if (!allow.empty()) {
        res.set_header("Allow", allow);
        send_error(res, 405, req.method + " is not allowed here; use " + allow);
        encode_body(req, res);
        return;
      }
    }
    if (!res.body.empty() || res.content_provider_) return;
    std::string msg =
        res.status == 413   ? "request body larger than " + std::to_string(kMaxBodyBytes) + " bytes"
        : res.status == 404 ? "no such endpoint"
                            : "request failed (HTTP " + std::to_string(res.status) + ")";
    send_error(res, res.status, msg);
    encode_body(req, res);
  });
  // Backstop for anything thrown outside route() (should not happen; route() catches all).
  svr->set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, const std::exception_ptr&) {
        log::error("http: {} {}: unhandled exception", req.method, req.path);
        send_error(res, 500, "internal error");
      });
}

HttpServer::HttpServer(Backend& backend, ServerOptions options, const Clock& clock)
    : impl_(std::make_unique<Impl>(backend, std::move(options), clock)) {}

HttpServer::~HttpServer() {
  stop();
}

Result<int> HttpServer::start() {
  Impl& m = *impl_;
  const ServerOptions& o = m.opt;
  if (m.svr) return fail(Error::invalid("HTTP server already started"));
  if (o.port < 0 || o.port > 65535) {
    return fail(Error::invalid("port must be 0..65535, got " + std::to_string(o.port)));
  }
  m.loopback_bind = is_loopback_host(o.address);
  if (!m.loopback_bind && o.token.empty()) {
    return fail(Error::invalid("refusing to listen on " + o.address +
                               " without a token: set a token or bind 127.0.0.1"));
  }
  if (o.metrics_need_token && o.token.empty()) {
    return fail(Error::invalid("metrics_need_token is set but no token is configured"));
  }
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return fail(Error::invalid("TLS needs both a certificate and a key file"));
  }
  std::unique_ptr<httplib::Server> svr;
  if (!o.tls_cert.empty()) {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    auto ssl = std::make_unique<httplib::SSLServer>(o.tls_cert.c_str(), o.tls_key.c_str());
    if (!ssl->is_valid()) {
      return fail(Error::invalid("cannot load TLS certificate/key (" + o.tls_cert + ", " +
                                 o.tls_key + ")"));
    }
    svr = std::move(ssl);
#else
    return fail(Error::unsupported("TLS configured but cpp-httplib was built without OpenSSL"));
#endif
  } else {
    svr = std::make_unique<GuardedServer>(o.limits);
  }
  // httplib's default also sets SO_REUSEPORT, which lets a second agent bind the same port and
  // silently share its traffic; keep only SO_REUSEADDR (quick restart over TIME_WAIT).
  // TCP_NODELAY (inherited by every accepted connection): httplib writes an answer's headers
  // and body in separate sends, and with Nagle's algorithm the body waited for the client's
  // delayed ACK of the headers, 40 ms on Linux: most of a dashboard chart's wall time.
  svr->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  });
  svr->set_payload_max_length(kMaxBodyBytes);
  // Plain HTTP: the GuardedServer's request deadline and idle timeout bound each connection.
  // TLS: httplib's own pool, where an idle or slow client pins a worker thread until these
  // per-read timeouts pass.
  svr->set_keep_alive_timeout(2);
  svr->set_read_timeout(5, 0);
  svr->set_write_timeout(5, 0);
  m.svr = std::move(svr);
  m.install_routes();

  int port = o.port;
  if (port == 0) {
    port = m.svr->bind_to_any_port(o.address);
  } else if (!m.svr->bind_to_port(o.address, port)) {
    port = -1;
  }
  if (port < 0) {
    m.svr.reset();
    return fail(Error::unavailable("cannot bind " + o.address + ":" + std::to_string(o.port) +
                                   " (address in use, not local, or not permitted)"));
  }
  m.thread = std::thread([&m] {
    name_this_thread("cardiac-listen");
    m.svr->listen_after_bind();
  });
  // stop() before listen_after_bind() sets is_running would be lost and the thread would
  // serve forever; wait until it runs (microseconds in practice).
  for (int i = 0; i < 2000 && !m.svr->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  log::info("http: listening on {}:{}{}", o.address, port, o.tls_cert.empty() ? "" : " (TLS)");
  return port;
}

void HttpServer::stop() {
  Impl& m = *impl_;
  if (!m.svr) return;
  m.svr->stop();
  if (m.thread.joinable()) m.thread.join();
  m.svr.reset();
}

std::uint64_t HttpServer::metrics_compressions() const {
  Impl& m = *impl_;
  std::lock_guard lock(m.metrics_mu);
  return m.retired_compressions + (m.metrics_body ? m.metrics_body->compressions() : 0);
}

}  // namespace cardiac::server
