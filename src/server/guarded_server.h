// SPDX-License-Identifier: Apache-2.0
// An httplib::Server whose connections cannot starve it: a connection waits for its request in
// one poll thread, costing a file descriptor and no worker, and only a complete request (head
// and body) is handed to the few workers that run handlers.
#pragma once

#include <httplib.h>

#include <memory>

#include "server/http_server.h"

namespace cardiac::server {

// cpp-httplib 0.11.4 runs each connection on a pool thread for its whole life, reading with a
// per-recv timeout: 8 clients that send half a request hold all 8 threads and a client sending
// a byte every few seconds holds one for ever. This server keeps httplib's accept loop, request
// parsing and routing but replaces what happens to an accepted socket (process_and_close_socket
// is virtual, process_request protected): the socket joins a poll set until its request is
// complete or its deadline passes, then a worker runs it. Plain HTTP only: httplib's TLS server
// does its handshake in the private part this replaces.
class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionLimits limits);
  ~GuardedServer() override;
  GuardedServer(const GuardedServer&) = delete;
  GuardedServer& operator=(const GuardedServer&) = delete;

  struct Gate;  // the poll set, the workers and the per-peer counts (guarded_server.cpp)

 private:
  bool process_and_close_socket(socket_t sock) override;
  // Runs one complete request of a connection the gate handed over; returns whether the
  // connection stays open for another.
  friend struct Gate;
  bool serve_one(void* conn);

  ConnectionLimits limits_;
  std::shared_ptr<Gate> gate_;
};

}  // namespace cardiac::server
