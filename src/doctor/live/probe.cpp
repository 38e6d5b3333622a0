// SPDX-License-Identifier: Apache-2.0
// The probe engine: one paced loop over non-blocking sockets that matches answers to probes by
// sequence number, with a method per target kind (ICMP echo, TCP connect, UDP echo), bounded
// name resolution, and the default-route readers.
#include "doctor/live/probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::doctor {
namespace {

double ms_between(TimeNs from, TimeNs to) {
  return static_cast<double>(to - from) / 1e6;
}

// Owns a descriptor; moving swaps, so a moved-to descriptor is closed by the source.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_;
};

struct Address {
  sockaddr_storage sa{};
  socklen_t len = 0;
  [[nodiscard]] int family() const { return sa.ss_family; }
  [[nodiscard]] const sockaddr* ptr() const { return reinterpret_cast<const sockaddr*>(&sa); }
};

std::string address_text(const Address& a) {
  char host[NI_MAXHOST] = {};
  if (getnameinfo(a.ptr(), a.len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

Address with_port(Address a, std::uint16_t port) {
  if (a.family() == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&a.sa)->sin6_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in*>(&a.sa)->sin_port = htons(port);
  }
  return a;
}

std::string address_port_text(const Address& a, std::uint16_t port) {
  if (a.family() == AF_INET6) return fmt::format("[{}]:{}", address_text(a), port);
  return fmt::format("{}:{}", address_text(a), port);
}

struct Lookup {
  int rc = 0;
  std::optional<Address> address;
};

// With AI_NUMERICHOST only a literal is accepted, and there is no I/O at all.
Lookup lookup(const std::string& host, int flags) {
  addrinfo hints{};
  hints.ai_flags = flags;
  hints.ai_socktype = SOCK_DGRAM;  // one entry per address, not one per socket type
  addrinfo* res = nullptr;
  Lookup l{getaddrinfo(host.c_str(), nullptr, &hints, &res), std::nullopt};
  if (l.rc == 0 && res != nullptr) {
    l.address.emplace();
    std::memcpy(&l.address->sa, res->ai_addr, res->ai_addrlen);
    l.address->len = res->ai_addrlen;
  }
  if (res != nullptr) freeaddrinfo(res);
  return l;
}

// getaddrinfo has no timeout of its own, so it runs on a detached thread we stop waiting for.
Result<Address> resolve_name(const std::string& host, DurationNs timeout) {
  auto task = std::make_shared<std::packaged_task<Lookup()>>([host] { return lookup(host, 0); });
  auto answer = task->get_future();
  try {
    std::thread([task] { (*task)(); }).detach();
  } catch (const std::system_error& e) {
    return fail(Error::unavailable(fmt::format("no thread for the resolver: {}", e.what())));
  }
  if (answer.wait_for(std::chrono::nanoseconds(std::max<DurationNs>(timeout, 0))) !=
      std::future_status::ready) {
    return fail(Error::timeout(fmt::format("no answer from the resolver within {:.1f} s",
                                           static_cast<double>(timeout) / 1e9)));
  }
  Lookup l = answer.get();
  if (l.rc == EAI_NONAME || l.rc == EAI_NODATA) return fail(Error::not_found("no such name"));
  if (l.rc != 0 || !l.address) return fail(Error::unavailable(gai_strerror(l.rc)));
  return *l.address;
}

// What every echoed probe carries, so an answer names its probe and stray datagrams (another
// session's, a late one from an earlier run) are ignored.
struct Payload {
  std::uint32_t magic = 0;
  std::uint32_t token = 0;
  std::uint32_t seq = 0;
  std::uint32_t reserved = 0;
  std::int64_t sent_ns = 0;
};
constexpr std::uint32_t kMagic = 0x43524443;  // "CRDC"

std::uint32_t new_token(const Clock& clock) {
  // Odd step: successive sessions differ in their low 16 bits too (the raw-ICMP echo id).
  static std::atomic<std::uint32_t> next{static_cast<std::uint32_t>(getpid()) * 2654435761U ^
                                         static_cast<std::uint32_t>(clock.monotonic())};
  return next.fetch_add(0x9E3779B9U);
}

Payload make_payload(std::uint32_t token, unsigned seq, TimeNs sent) {
  return Payload{kMagic, token, static_cast<std::uint32_t>(seq), 0, sent};
}

std::optional<unsigned> payload_seq(const unsigned char* data, std::size_t n, std::uint32_t token) {
  if (n < sizeof(Payload)) return std::nullopt;
  Payload p;
  std::memcpy(&p, data, sizeof p);
  if (p.magic != kMagic || p.token != token) return std::nullopt;
  return p.seq;
}

// Reports probe `seq` as answered at `at`, or (answered == false) as certainly lost already.
using Answered = std::function<void(unsigned seq, TimeNs at, bool answered)>;

// One probing method. The engine starts probes, polls what want() asks for, and hands the
// poll results to drain(), which reports each answer with the time it was read.
class Prober {
 public:
  virtual ~Prober() = default;
  // Starts probe `seq` now; an error means it could not be sent (it counts as lost).
  virtual Status start(unsigned seq) = 0;
  virtual void want(std::vector<pollfd>& fds) = 0;
  virtual void drain(const std::vector<pollfd>& fds, const Answered& answered) = 0;
  // Probe `seq` is given up on.
  virtual void forget(unsigned seq) { (void)seq; }
  // The last failure worth telling the reader ("connection refused by …").
  [[nodiscard]] const std::string& note() const { return note_; }
  // Probes answered by a refusal rather than by the service.
  [[nodiscard]] virtual unsigned refusals() const { return 0; }

 protected:
  explicit Prober(const Clock& clock) : clock_(clock) {}
  const Clock& clock_;
  std::string note_;
};

// A connected socket of `type`: the kernel then drops datagrams from anyone but the peer
// (for raw sockets too) and reports a closed UDP port as ECONNREFUSED.
Result<Fd> connected(const Address& peer, int type, int proto) {
  Fd fd(::socket(peer.family(), type | SOCK_NONBLOCK | SOCK_CLOEXEC, proto));
  if (!fd) return fail(Error::io("socket", errno));
  if (::connect(fd.get(), peer.ptr(), peer.len) != 0) return fail(Error::io("connect", errno));
  return fd;
}

// UDP and ICMP echo: one socket, and every answer carries our payload back.
class DatagramProber : public Prober {
 public:
  void want(std::vector<pollfd>& fds) override { fds.push_back({fd_.get(), POLLIN, 0}); }
  void drain(const std::vector<pollfd>& /*fds*/, const Answered& answered) override {
    unsigned char buf[2048];
    for (;;) {
      ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == ECONNREFUSED) {
        note_ = "port unreachable: nothing answers on that UDP port";
        continue;
      }
      if (n < 0) return;
      TimeNs at = clock_.monotonic();
      if (auto seq = answer_seq(buf, static_cast<std::size_t>(n))) answered(*seq, at, true);
    }
  }

 protected:
  DatagramProber(Fd fd, const Clock& clock) : Prober(clock), fd_(std::move(fd)) {}
  // The probe a datagram answers, when it is an answer to one of ours.
  [[nodiscard]] virtual std::optional<unsigned> answer_seq(const unsigned char* buf,
                                                           std::size_t n) const = 0;
  Status send_bytes(const void* data, std::size_t n) {
    if (::send(fd_.get(), data, n, MSG_NOSIGNAL) < 0) return fail(Error::io("send", errno));
    return {};
  }
  Fd fd_;
  std::uint32_t token_ = new_token(clock_);
};

class UdpProber final : public DatagramProber {
 public:
  UdpProber(Fd fd, const Clock& clock) : DatagramProber(std::move(fd), clock) {}
  Status start(unsigned seq) override {
    Payload p = make_payload(token_, seq, clock_.monotonic());
    return send_bytes(&p, sizeof p);
  }

 private:
  [[nodiscard]] std::optional<unsigned> answer_seq(const unsigned char* buf,
                                                   std::size_t n) const override {
    return payload_seq(buf, n, token_);
  }
};

std::uint16_t inet_checksum(const unsigned char* data, std::size_t n) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < n; i += 2) {
    std::uint16_t word = 0;
    std::memcpy(&word, data + i, 2);
    sum += word;
  }
  if (n % 2 != 0) sum += data[n - 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

class IcmpProber final : public DatagramProber {
 public:
  // Unprivileged ICMP datagram sockets first (allowed by net.ipv4.ping_group_range), then a
  // raw socket (CAP_NET_RAW). The error is the raw socket's when neither may be opened.
  static Result<std::unique_ptr<Prober>> open(const Address& peer, const Clock& clock) {
    const bool v6 = peer.family() == AF_INET6;
    const int proto = v6 ? int{IPPROTO_ICMPV6} : int{IPPROTO_ICMP};
    if (auto fd = connected(peer, SOCK_DGRAM, proto)) {
      return std::unique_ptr<Prober>(new IcmpProber(std::move(*fd), false, v6, clock));
    }
    auto fd = connected(peer, SOCK_RAW, proto);
    if (!fd) return fail(fd.error().with_context("icmp"));
    return std::unique_ptr<Prober>(new IcmpProber(std::move(*fd), true, v6, clock));
  }
  Status start(unsigned seq) override {
    unsigned char pkt[8 + sizeof(Payload)] = {};
    pkt[0] = v6_ ? ICMP6_ECHO_REQUEST : ICMP_ECHO;
    // A datagram socket overwrites the id with its own and filters answers by it.
    std::uint16_t id = htons(id_);
    std::uint16_t seq16 = htons(static_cast<std::uint16_t>(seq));
    std::memcpy(pkt + 4, &id, 2);
    std::memcpy(pkt + 6, &seq16, 2);
    Payload p = make_payload(token_, seq, clock_.monotonic());
    std::memcpy(pkt + 8, &p, sizeof p);
    // The kernel sums ICMPv6 (it covers a pseudo-header) and datagram-socket ICMP itself.
    if (!v6_) {
      std::uint16_t sum = inet_checksum(pkt, sizeof pkt);
      std::memcpy(pkt + 2, &sum, 2);
    }
    return send_bytes(pkt, sizeof pkt);
  }

 private:
  IcmpProber(Fd fd, bool raw, bool v6, const Clock& clock)
      : DatagramProber(std::move(fd), clock), raw_(raw), v6_(v6) {}
  [[nodiscard]] std::optional<unsigned> answer_seq(const unsigned char* buf,
                                                   std::size_t n) const override {
    std::size_t off = 0;
    if (raw_ && !v6_) {  // a raw IPv4 socket hands over the IP header too
      if (n < 20) return std::nullopt;
      off = static_cast<std::size_t>(buf[0] & 0x0f) * 4;
    }
    if (n < off + 8 || buf[off] != (v6_ ? ICMP6_ECHO_REPLY : ICMP_ECHOREPLY)) return std::nullopt;
    std::uint16_t id = 0;
    std::memcpy(&id, buf + off + 4, 2);
    if (raw_ && ntohs(id) != id_) return std::nullopt;  // every raw socket sees every reply
    return payload_seq(buf + off + 8, n - off - 8, token_);
  }
  bool raw_;
  bool v6_;
  std::uint16_t id_ = static_cast<std::uint16_t>(token_ & 0xffff);
};

// Each probe is a fresh non-blocking connect; the answer is the handshake completing (or,
// for a plain host, the RST that says the host is up but the port closed).
class TcpProber final : public Prober {
 public:
  TcpProber(const Address& peer, std::string peer_text, bool refused_is_answer, const Clock& clock)
      : Prober(clock),
        peer_(peer),
        peer_text_(std::move(peer_text)),
        refused_is_answer_(refused_is_answer) {}
  Status start(unsigned seq) override {
    Fd fd(::socket(peer_.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return fail(Error::io("tcp socket", errno));
    int early = 0;
    if (::connect(fd.get(), peer_.ptr(), peer_.len) != 0 && errno != EINPROGRESS) early = errno;
    // Connected at once or failed at once: poll reports the socket ready straight away.
    inflight_.emplace(seq, Conn{std::move(fd), early});
    return {};
  }
  void want(std::vector<pollfd>& fds) override {
    order_.clear();
    for (const auto& [seq, c] : inflight_) {
      fds.push_back({c.fd.get(), POLLOUT, 0});
      order_.push_back(seq);
    }
  }
  void drain(const std::vector<pollfd>& fds, const Answered& answered) override {
    TimeNs at = clock_.monotonic();
    for (std::size_t i = 0; i < fds.size() && i < order_.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = inflight_.find(order_[i]);
      if (it == inflight_.end()) continue;
      int err = it->second.early;
      if (err == 0) {
        socklen_t len = sizeof err;
        if (::getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
      if (err == 0 && (fds[i].revents & POLLOUT) != 0) {
        answered(order_[i], at, true);
      } else if (err == ECONNREFUSED) {
        note_ = fmt::format("connection refused by {}: nothing listens on that port", peer_text_);
        refused_ = true;
        if (refused_is_answer_) ++refusals_;
        answered(order_[i], at, refused_is_answer_);
      } else {
        if (err != 0) note_ = fmt::format("connecting to {}: {}", peer_text_, std::strerror(err));
        answered(order_[i], at, false);
      }
      inflight_.erase(it);
    }
  }
  void forget(unsigned seq) override { inflight_.erase(seq); }
  [[nodiscard]] bool refused() const { return refused_; }
  [[nodiscard]] unsigned refusals() const override { return refusals_; }

 private:
  struct Conn {
    Fd fd;
    int early = 0;
  };
  Address peer_;
  std::string peer_text_;
  bool refused_is_answer_;
  bool refused_ = false;
  unsigned refusals_ = 0;
  std::map<unsigned, Conn> inflight_;
  std::vector<unsigned> order_;  // the seq behind each descriptor handed to poll
};

// Sends `count` probes paced by `interval` and collects answers until every probe is
// answered or timed out, or the deadline passes.
void run_paced(Prober& prober, const ProbeOptions& o, TimeNs deadline, const Clock& clock,
               ProbeResult& r) {
  const unsigned n = o.count;
  std::vector<TimeNs> sent_at(n, 0);
  std::vector<bool> open(n, false);
  std::vector<std::optional<double>> rtt(n);
  unsigned sent = 0;
  unsigned waiting = 0;
  bool cut_short = false;
  TimeNs next = clock.monotonic();
  const Answered answered = [&](unsigned seq, TimeNs at, bool ok) {
    // Unknown, answered twice, or already given up on: a late answer stays a loss.
    if (seq >= sent || !open[seq] || at - sent_at[seq] > o.timeout) return;
    open[seq] = false;
    --waiting;
    if (ok) rtt[seq] = ms_between(sent_at[seq], at);
  };
  std::vector<pollfd> fds;
  for (;;) {
    TimeNs now = clock.monotonic();
    for (unsigned s = 0; s < sent; ++s) {
      if (open[s] && now - sent_at[s] >= o.timeout) {
        open[s] = false;
        --waiting;
        prober.forget(s);
      }
    }
    const bool fits = sent == 0 || now + o.timeout <= deadline;
    if (sent < n && !fits) cut_short = true;
    const bool may_send = sent < n && fits;
    if (may_send && now >= next) {
      sent_at[sent] = now;
      open[sent] = true;
      ++waiting;
      if (auto st = prober.start(sent); !st) {
        open[sent] = false;
        --waiting;
        r.error = st.error().what();
      }
      ++sent;
      next = std::max(next + o.interval, now);
      continue;
    }
    if ((!may_send && waiting == 0) || now >= deadline) break;
    TimeNs wake = deadline;
    if (may_send) wake = std::min(wake, next);
    for (unsigned s = 0; s < sent; ++s) {
      if (open[s]) wake = std::min(wake, sent_at[s] + o.timeout);
    }
    fds.clear();
    prober.want(fds);
    auto wait_ms = static_cast<int>((std::max<TimeNs>(wake - now, 0) + kNsPerMs - 1) / kNsPerMs);
    int ready = ::poll(fds.data(), fds.size(), wait_ms);
    if (ready > 0) prober.drain(fds, answered);
  }
  r.sent = sent;
  r.rtt_ms.clear();
  for (const auto& v : rtt) {
    if (v) r.rtt_ms.push_back(*v);
  }
  r.received = static_cast<unsigned>(r.rtt_ms.size());
  r.refused = std::min(prober.refusals(), r.received);
  if (!prober.note().empty() && r.received < r.sent) r.error = prober.note();
  if (cut_short) {
    if (!r.error.empty()) r.error += "; ";
    r.error += fmt::format("deadline reached after {} of {} probes", sent, n);
  }
}

enum class Connect { kConnected, kRefused, kNoAnswer };

// Where ICMP is not allowed: 443, else 22, preferring a port that accepts over one that only
// refuses (a refusal may come from a firewall rather than the host).
std::uint16_t fallback_port(const Address& a, const ProbeOptions& o, TimeNs deadline,
                            const Clock& clock) {
  ProbeOptions once = o;
  once.count = 1;
  auto ask = [&](std::uint16_t port) {
    TcpProber p(with_port(a, port), {}, false, clock);
    ProbeResult scratch;
    run_paced(p, once, deadline, clock, scratch);
    if (scratch.received > 0) return Connect::kConnected;
    return p.refused() ? Connect::kRefused : Connect::kNoAnswer;
  };
  Connect https = ask(443);
  if (https == Connect::kConnected) return 443;
  Connect ssh = ask(22);
  if (ssh == Connect::kConnected) return 22;
  if (https == Connect::kRefused || ssh != Connect::kRefused) return 443;
  return 22;
}

Result<std::unique_ptr<Prober>> open_prober(const ProbeTarget& t, const Address& a,
                                            const ProbeOptions& o, TimeNs deadline,
                                            const Clock& clock, ProbeResult& r) {
  switch (t.kind) {
    case ProbeKind::kUdp:
      r.method = "udp";
      r.address = address_port_text(a, t.port);
      if (auto fd = connected(with_port(a, t.port), SOCK_DGRAM, 0)) {
        return std::unique_ptr<Prober>(new UdpProber(std::move(*fd), clock));
      } else {
        return fail(fd.error().with_context("udp"));
      }
    case ProbeKind::kTcp:
      r.method = "tcp";
      r.address = address_port_text(a, t.port);
      // A reset proves the host and the path answer: the round trip is measured like an
      // accepted connection, and the check reports the closed port on its own.
      return std::unique_ptr<Prober>(new TcpProber(with_port(a, t.port), r.address, true, clock));
    case ProbeKind::kHost:
      break;
  }
  if (o.allow_icmp) {
    if (auto icmp = IcmpProber::open(a, clock)) {
      r.method = "icmp";
      r.address = address_text(a);
      return icmp;
    }
  }
  std::uint16_t port = fallback_port(a, o, deadline, clock);
  r.method = "tcp";
  r.address = address_port_text(a, port);
  return std::unique_ptr<Prober>(new TcpProber(with_port(a, port), r.address, true, clock));
}

}  // namespace

ProbeResult probe(const std::string& target, const std::string& role, const ProbeOptions& o,
                  const Clock& clock) {
  const TimeNs start = clock.monotonic();
  const TimeNs deadline = start + o.deadline;
  ProbeResult r;
  r.target = target;
  r.role = role;
  auto t = parse_probe_target(target);
  if (!t) {
    r.error = t.error().what();
    return r;
  }
  if (t->kind != ProbeKind::kHost) r.method = t->kind == ProbeKind::kTcp ? "tcp" : "udp";
  auto addr = lookup(t->host, AI_NUMERICHOST).address;
  if (!addr) {
    auto looked = resolve_name(t->host, std::min(o.dns_timeout, o.deadline));
    r.dns_ms = ms_between(start, clock.monotonic());
    if (!looked) {
      r.error = fmt::format("cannot resolve {}: {}", t->host, looked.error().what());
      return r;
    }
    addr = *looked;
  }
  auto prober = open_prober(*t, *addr, o, deadline, clock, r);
  if (!prober) {
    r.error = fmt::format("{}: {}", target, prober.error().what());
    return r;
  }
  run_paced(**prober, o, deadline, clock, r);
  return r;
}

std::vector<ProbeResult> run_probes(const std::vector<std::string>& targets,
                                    const std::optional<std::string>& gateway,
                                    const ProbeOptions& options, const Clock& clock,
                                    const ProbeProgress& progress) {
  std::vector<std::pair<std::string, std::string>> jobs;
  if (gateway) jobs.emplace_back(*gateway, "gateway");
  for (const auto& t : targets) {
    if (!gateway || t != *gateway) jobs.emplace_back(t, "target");
  }
  std::vector<ProbeResult> results(jobs.size());
  std::mutex mu;
  std::size_t finished = 0;
  auto run_one = [&](std::size_t i) {
    try {
      results[i] = probe(jobs[i].first, jobs[i].second, options, clock);
    } catch (const std::exception& e) {  // a thread's edge: a failure must not end the process
      results[i].target = jobs[i].first;
      results[i].role = jobs[i].second;
      results[i].error = fmt::format("{}: probe failed: {}", jobs[i].first, e.what());
    }
    std::lock_guard lock(mu);
    ++finished;
    if (progress) progress(static_cast<double>(finished) / static_cast<double>(jobs.size()));
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    try {
      threads.emplace_back(run_one, i);
    } catch (const std::system_error&) {
      run_one(i);  // out of threads: this one runs here, still within its deadline
    }
  }
  for (auto& th : threads) th.join();
  return results;
}

}  // namespace cardiac::doctor
