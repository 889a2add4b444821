#pragma once
// A small HTTP server on cpp-httplib for the node's /status, /metrics and page, and the
// launcher's dashboard (DESIGN.md, "Who uses it and how").
//
// Rules:
// - Only GET, on the routes given at the start; the query string is passed to the route. Any
//   other path is 404; another method on a known path is 405 (Allow: GET).
// - One request per connection; the response closes it (Connection: close).
// - A malformed request line or head is answered 400, a request line above 8 KiB 414, and the
//   connection closed.
// - A client must send its whole request head within 5 s of connecting, and must accept the
//   response at least every 5 s; otherwise it is closed. At most 32 connections are open at once;
//   more are closed at once, unanswered. Each connection runs on its own short-lived thread, so an
//   idle server holds none.
//   Rationale: the port may face a LAN, and bad or slow clients must never hurt the node; idle
//   threads would cost 100 in-process nodes hundreds of threads.
// - A route that throws is answered 500; the server keeps running.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/status.h"

namespace meshlearn::node {

// A request as a route sees it.
struct HttpRequest {
  std::string path;
  std::map<std::string, std::string> params;  // the decoded query string
};

// What a route answers.
struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Answers the requests of one path. Called on a connection's thread, possibly on several at once.
using HttpRoute = std::function<HttpResponse(const HttpRequest& request)>;

// Serves routes from its own threads (see the rules above).
class HttpServer {
 public:
  // Listens on `bind_address` (a numeric IPv4 or IPv6 address, e.g. "127.0.0.1") and `port`
  // (0 = an ephemeral port, see port()) and serves `routes` (path -> route). Errors:
  // kInvalidArgument (not a numeric address), kUnavailable (address in use or not local), both
  // naming the address and port.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& bind_address, uint16_t port,
                                                   std::map<std::string, HttpRoute> routes);

  // Stops listening, closes every connection (at most 0.1 s later) and joins the threads. Must not
  // be called from a route.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port the server listens on (the ephemeral one when Start was given 0).
  uint16_t port() const;

  // CPU seconds spent so far by the server's threads: connections and the listening thread.
  double cpu_seconds() const;

  // Requests answered so far (any code).
  uint64_t requests() const;

 private:
  class Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

// Fetches http://`host`:`port``path` (GET) and returns the body of a 200 answer. Errors:
// kUnavailable when the server cannot be reached or does not answer within `timeout_ms`
// (connecting and reading each), kMalformed for another status code; both name the URL.
Result<std::string> HttpGet(const std::string& host, uint16_t port, const std::string& path,
                            int timeout_ms);

}  // namespace meshlearn::node
