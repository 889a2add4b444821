#include "process/http_server.h"

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <httplib.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

namespace meshlearn::node {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr auto kRequestDeadline = std::chrono::seconds(5);
constexpr auto kWriteTimeout = std::chrono::seconds(5);
constexpr int kMaxOpenConnections = 32;
// How often a waiting connection checks whether the server is stopping.
constexpr auto kStopCheck = std::chrono::milliseconds(100);

uint64_t ThreadCpuNanoseconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

bool IsNumericAddress(const std::string& address) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, address.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, address.c_str(), buffer) == 1;
}

// A connection's socket under deadlines: reads must complete by `read_deadline`, each write must
// make progress within kWriteTimeout, and both give up when the server stops (its listening
// socket is closed). Reads are buffered, since the library reads request lines byte by byte.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int sock, SteadyClock::time_point read_deadline,
                 const std::atomic<socket_t>& listening)
      : sock_(sock), read_deadline_(read_deadline), listening_(listening) {}

  bool is_readable() const override { return begin_ < end_ || WaitFor(POLLIN, read_deadline_); }
  bool is_writable() const override { return WaitFor(POLLOUT, SteadyClock::now() + kWriteTimeout); }

  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      if (!WaitFor(POLLIN, read_deadline_)) return -1;
      ssize_t n = ::recv(sock_, buffer_, sizeof(buffer_), 0);
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    return ::send(sock_, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // Reads and discards what the client still sends until it closes its side, the read deadline
  // passes or the server stops. Rationale: closing a socket with unread input makes the kernel
  // send a reset, which can destroy the response before the client reads it (e.g. after an
  // oversized request).
  void Drain() {
    char discard[1024];
    begin_ = end_ = 0;
    while (WaitFor(POLLIN, read_deadline_) && ::recv(sock_, discard, sizeof(discard), 0) > 0) {
    }
  }

 private:
  // Waits until the socket has `events`, up to `deadline`; false on timeout, error or stop.
  bool WaitFor(short events, SteadyClock::time_point deadline) const {
    for (;;) {
      if (listening_.load() == INVALID_SOCKET) return false;
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
      if (left.count() <= 0) return false;
      pollfd p{sock_, events, 0};
      int ready = ::poll(&p, 1, static_cast<int>(std::min(left, kStopCheck).count()));
      if (ready > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
      if (ready < 0 && errno != EINTR) return false;
    }
  }

  template <typename NameFunction>
  void Address(NameFunction name, std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    ip.clear();
    port = 0;
    if (name(sock_, reinterpret_cast<sockaddr*>(&address), &length) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
      inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
      port = ntohs(v4->sin_port);
    } else if (address.ss_family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  int sock_;
  SteadyClock::time_point read_deadline_;
  const std::atomic<socket_t>& listening_;
  char buffer_[4096];
  size_t begin_ = 0, end_ = 0;
};

// Runs each connection on a thread of its own; shutdown() waits for all of them.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(std::atomic<uint64_t>& cpu_ns) : cpu_ns_(cpu_ns) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++running_;
    }
    try {
      std::thread([this, fn] {
        fn();
        cpu_ns_ += ThreadCpuNanoseconds();
        std::lock_guard<std::mutex> lock(mutex_);
        --running_;
        done_.notify_all();  // under the lock: shutdown() cannot return before it is released
      }).detach();
    } catch (const std::system_error&) {
      // No thread to be had: serve it here; the connection's deadlines bound the wait.
      fn();
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
  }

  void shutdown() override {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
  }

 private:
  std::atomic<uint64_t>& cpu_ns_;
  std::mutex mutex_;
  std::condition_variable done_;
  int running_ = 0;
};

// cpp-httplib's server with this file's connection rules: the cap, the deadlines, one request
// per connection and the drain before closing.
class RuledServer : public httplib::Server {
 public:
  std::atomic<int> open_connections{0};
  std::atomic<uint64_t> cpu_ns{0};
  std::atomic<uint64_t> requests{0};

  RuledServer() {
    new_task_queue = [this] { return new ConnectionThreads(cpu_ns); };
    // The library's default also sets SO_REUSEPORT, which would let a second server share a port
    // that is in use.
    set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
  }

  // Widens the listening queue of the bound socket from the library's 5 connections. Rationale:
  // when the queue overflows, the kernel drops handshakes that the clients already consider
  // complete; they would be served seconds later instead of being counted against the cap.
  void WidenListenQueue() { ::listen(svr_sock_, SOMAXCONN); }

 private:
  bool process_and_close_socket(socket_t sock) override {
    auto deadline = SteadyClock::now() + kRequestDeadline;
    if (open_connections.fetch_add(1) >= kMaxOpenConnections) {
      --open_connections;
      ::close(sock);
      return false;
    }
    DeadlineStream stream(sock, deadline, svr_sock_);
    bool closed = false;
    bool ok = process_request(stream, /*close_connection=*/true, closed, [](httplib::Request&) {});
    ::shutdown(sock, SHUT_WR);
    stream.Drain();
    ::close(sock);
    --open_connections;
    return ok;
  }
};

const char* ReasonOf(int code) {
  switch (code) {
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 414:
      return "URI Too Long";
    case 500:
      return "Internal Server Error";
    default:
      return "Error";
  }
}

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(std::map<std::string, HttpRoute> routes) : routes_(std::move(routes)) {
    server_.set_pre_routing_handler(
        [this](const httplib::Request& request, httplib::Response& response) {
          Answer(request, response);
          return httplib::Server::HandlerResponse::Handled;
        });
    server_.set_error_handler([](const httplib::Request&, httplib::Response& response) {
      if (response.body.empty()) {
        response.set_content(std::string(ReasonOf(response.status)) + "\n",
                             "text/plain; charset=utf-8");
      }
    });
  }

  ~Impl() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Status Listen(const std::string& bind_address, uint16_t port) {
    std::string where = bind_address + " port " + std::to_string(port);
    if (!IsNumericAddress(bind_address)) {
      return Status::InvalidArgument("HTTP bind address '" + bind_address +
                                     "' is not a numeric IPv4 or IPv6 address");
    }
    if (port == 0) {
      int bound = server_.bind_to_any_port(bind_address);
      if (bound <= 0) return Status::Unavailable("cannot listen for HTTP on " + where);
      port_ = static_cast<uint16_t>(bound);
    } else {
      if (!server_.bind_to_port(bind_address, port)) {
        return Status::Unavailable("cannot listen for HTTP on " + where +
                                   " (in use, or not an address of this machine)");
      }
      port_ = port;
    }
    server_.WidenListenQueue();
    thread_ = std::thread([this] {
      pthread_getcpuclockid(pthread_self(), &listen_clock_);
      listening_ = true;
      server_.listen_after_bind();
      listen_cpu_ns_ = ThreadCpuNanoseconds();
      listening_ = false;
      listen_returned_ = true;
    });
    // Rationale: stop() does nothing before the library marks the server running, so a server
    // destroyed at once would otherwise listen forever and its destructor never return.
    while (!server_.is_running() && !listen_returned_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return Status::Ok();
  }

  uint16_t port() const { return port_; }

  double cpu_seconds() const {
    uint64_t listen_ns = listen_cpu_ns_.load();
    if (listening_.load()) {
      timespec t{};
      if (clock_gettime(listen_clock_, &t) == 0) {
        listen_ns =
            static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
      }
    }
    return static_cast<double>(server_.cpu_ns.load() + listen_ns) * 1e-9;
  }

  uint64_t requests() const { return server_.requests.load(); }

 private:
  void Answer(const httplib::Request& request, httplib::Response& response) {
    ++server_.requests;
    bool printable = !request.path.empty() && request.path[0] == '/';
    for (unsigned char c : request.path) printable = printable && c > 0x20 && c < 0x7f;
    if (!printable) {
      response.status = 400;
      return;
    }
    auto route = routes_.find(request.path);
    if (route == routes_.end()) {
      response.status = 404;
      return;
    }
    if (request.method != "GET") {
      response.status = 405;
      response.set_header("Allow", "GET");
      return;
    }
    HttpRequest in{request.path, {}};
    for (const auto& [key, value] : request.params) in.params[key] = value;
    try {
      HttpResponse out = route->second(in);
      response.status = out.code;
      response.set_content(std::move(out.body), out.content_type.c_str());
    } catch (...) {
      response.status = 500;
      response.body.clear();
    }
  }

  const std::map<std::string, HttpRoute> routes_;
  RuledServer server_;
  uint16_t port_ = 0;
  std::thread thread_;
  clockid_t listen_clock_{};
  std::atomic<bool> listening_{false};
  std::atomic<uint64_t> listen_cpu_ns_{0};
  std::atomic<bool> listen_returned_{false};
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() = default;

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& bind_address,
                                                      uint16_t port,
                                                      std::map<std::string, HttpRoute> routes) {
  auto impl = std::make_unique<Impl>(std::move(routes));
  MESHLEARN_RETURN_IF_ERROR(impl->Listen(bind_address, port));
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const { return impl_->port(); }

double HttpServer::cpu_seconds() const { return impl_->cpu_seconds(); }

uint64_t HttpServer::requests() const { return impl_->requests(); }

Result<std::string> HttpGet(const std::string& host, uint16_t port, const std::string& path,
                            int timeout_ms) {
  std::string url = "http://" + host + ":" + std::to_string(port) + path;
  httplib::Client client(host, port);
  client.set_connection_timeout(timeout_ms / 1000, (timeout_ms % 1000) * 1000);
  client.set_read_timeout(timeout_ms / 1000, (timeout_ms % 1000) * 1000);
  client.set_write_timeout(timeout_ms / 1000, (timeout_ms % 1000) * 1000);
  httplib::Result result = client.Get(path);
  if (!result) {
    return Status::Unavailable("GET " + url + ": " + httplib::to_string(result.error()));
  }
  if (result->status != 200) {
    return Status::Malformed("GET " + url + ": HTTP " + std::to_string(result->status));
  }
  return std::move(result->body);
}

}  // namespace meshlearn::node
