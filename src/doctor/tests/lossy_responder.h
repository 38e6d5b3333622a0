// SPDX-License-Identifier: Apache-2.0
// Loopback peers for the network tests: a UDP echo responder that drops and delays replies on
// command, and a TCP listener that accepts and closes. Each runs on its own thread, so the
// delays happen there and the tests themselves never sleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::doctor::loopback {

struct EchoBehaviour {
  // Datagram i (0-based, in arrival order) is dropped when drop_pattern[i % size] is true;
  // empty: nothing is dropped.
  std::vector<bool> drop_pattern;
  // Datagram i is echoed delays[i % size] after it arrived (a lower bound); empty: at once.
  std::vector<DurationNs> delays;

  // The pattern that drops the n-th, 2n-th, … datagram (every n-th; n = 0 drops none).
  [[nodiscard]] static std::vector<bool> drop_every(unsigned n);
};

// A UDP echo server on 127.0.0.1 (or ::1), port chosen by the kernel. Not copyable; the
// destructor stops and joins its thread. Counters are safe to read from any thread.
class UdpEchoResponder {
 public:
  // Delays are measured on `clock`'s monotonic time, which must be real time (the system
  // clock): the echoes go out over real sockets. Errors: the socket could not be made or bound
  // (no IPv6 on this host, for instance).
  [[nodiscard]] static Result<std::unique_ptr<UdpEchoResponder>> start(EchoBehaviour behaviour,
                                                                       const Clock& clock,
                                                                       bool ipv6 = false);
  UdpEchoResponder(const UdpEchoResponder&) = delete;
  UdpEchoResponder& operator=(const UdpEchoResponder&) = delete;
  ~UdpEchoResponder();

  [[nodiscard]] std::uint16_t port() const { return port_; }
  // "udp://127.0.0.1:PORT" or "udp://[::1]:PORT".
  [[nodiscard]] std::string target() const;
  [[nodiscard]] unsigned received() const { return received_.load(); }
  [[nodiscard]] unsigned echoed() const { return echoed_.load(); }
  [[nodiscard]] unsigned dropped() const { return dropped_.load(); }

 private:
  UdpEchoResponder(int fd, int wake_read, int wake_write, std::uint16_t port, bool ipv6,
                   EchoBehaviour behaviour, const Clock& clock);
  void run();

  const Clock& clock_;
  int fd_;
  int wake_read_;
  int wake_write_;
  std::uint16_t port_;
  bool ipv6_;
  EchoBehaviour behaviour_;
  std::atomic<unsigned> received_{0};
  std::atomic<unsigned> echoed_{0};
  std::atomic<unsigned> dropped_{0};
  std::thread thread_;
};

// A TCP listener on 127.0.0.1 (or ::1) that accepts every connection and closes it at once.
class TcpAcceptor {
 public:
  [[nodiscard]] static Result<std::unique_ptr<TcpAcceptor>> start(bool ipv6 = false);
  TcpAcceptor(const TcpAcceptor&) = delete;
  TcpAcceptor& operator=(const TcpAcceptor&) = delete;
  ~TcpAcceptor();

  [[nodiscard]] std::uint16_t port() const { return port_; }
  // "tcp://127.0.0.1:PORT" or "tcp://[::1]:PORT".
  [[nodiscard]] std::string target() const;
  [[nodiscard]] unsigned accepted() const { return accepted_.load(); }

 private:
  TcpAcceptor(int fd, int wake_read, int wake_write, std::uint16_t port, bool ipv6);
  void run();

  int fd_;
  int wake_read_;
  int wake_write_;
  std::uint16_t port_;
  bool ipv6_;
  std::atomic<unsigned> accepted_{0};
  std::thread thread_;
};

// A loopback TCP port that nobody listens on (bound, never listening, so it stays ours and
// connections to it are refused). Closes the socket on destruction.
class ClosedTcpPort {
 public:
  [[nodiscard]] static Result<std::unique_ptr<ClosedTcpPort>> reserve();
  ClosedTcpPort(const ClosedTcpPort&) = delete;
  ClosedTcpPort& operator=(const ClosedTcpPort&) = delete;
  ~ClosedTcpPort();
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::string target() const;  // "tcp://127.0.0.1:PORT"

 private:
  ClosedTcpPort(int fd, std::uint16_t port) : fd_(fd), port_(port) {}
  int fd_;
  std::uint16_t port_;
};

}  // namespace cardiac::doctor::loopback
