#pragma once
// The optional HTTP endpoint of a node (DESIGN.md, "Who uses it and how": /status and /metrics).
//
// Deliberately tiny: HTTP/1.0 style, one GET per connection, the response closes the connection.
// Rules:
// - GET /status answers 200 application/json; GET /metrics answers 200 in the Prometheus text
//   exposition format (version 0.0.4); any other path is 404, any other method 405.
// - A request line that is malformed, or a request head above 8 KiB, is answered 400 and closed.
//   A client that sends nothing for 5 s is closed; at most 32 connections are open at once.
//   Rationale: the port may face a LAN, and bad or slow clients must never hurt the node.
// - A callback that throws is answered 500; the server keeps running.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"

namespace meshlearn::node {

// Serves /status and /metrics from its own thread.
class HttpStatusServer {
 public:
  // Produces a response body. Called on the server's thread, once per request; must be
  // thread-safe with respect to the node.
  using BodyFunction = std::function<std::string()>;

  // Listens on `bind_address` (a numeric IPv4 or IPv6 address, e.g. "127.0.0.1") and `port`
  // (0 = an ephemeral port, see port()) and starts the server thread. `status_json` answers
  // /status, `metrics_text` answers /metrics. Errors: kInvalidArgument (not a numeric address),
  // kUnavailable (address in use or not local), both naming the address and port.
  static Result<std::unique_ptr<HttpStatusServer>> Start(std::string bind_address, uint16_t port,
                                                         BodyFunction status_json,
                                                         BodyFunction metrics_text);

  // Stops the thread and closes every connection. Must not be called from a callback.
  ~HttpStatusServer();

  HttpStatusServer(const HttpStatusServer&) = delete;
  HttpStatusServer& operator=(const HttpStatusServer&) = delete;

  // The port the server listens on (the ephemeral one when Start was given 0).
  uint16_t port() const;

 private:
  class Impl;
  explicit HttpStatusServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace meshlearn::node
