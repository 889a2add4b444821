// node::HttpServer over real loopback sockets (127.0.0.1 only): routes, the error answers, and
// that hostile, slow or too many clients never take the server down. Also node::HttpGet.
#include "process/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace meshlearn::node {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A TCP connection to 127.0.0.1:`port`, closed on destruction.
class Connection {
 public:
  explicit Connection(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    timeval timeout{30, 0};  // a test never hangs on a read
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool connected() const { return connected_; }
  // Sends `bytes`; the server may answer and close before it read them all.
  void Send(const std::string& bytes) {
    (void)::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  void CloseSending() { ::shutdown(fd_, SHUT_WR); }
  // Everything the server sends until it closes (or 30 s pass).
  std::string ReadAll() {
    std::string response;
    char chunk[4096];
    for (ssize_t n; (n = ::recv(fd_, chunk, sizeof(chunk), 0)) > 0;) response.append(chunk, n);
    return response;
  }

 private:
  int fd_;
  bool connected_ = false;
};

std::string Exchange(uint16_t port, const std::string& request) {
  Connection c(port);
  c.Send(request);
  return c.ReadAll();
}

std::string Get(uint16_t port, const std::string& path) {
  return Exchange(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

std::string StatusLineOf(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string BodyOf(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

bool HasHeader(const std::string& response, const std::string& header) {
  return response.find("\r\n" + header + "\r\n") != std::string::npos;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = HttpServer::Start(
        "127.0.0.1", 0,
        {{"/status",
          [this](const HttpRequest&) {
            ++status_calls_;
            return HttpResponse{200, "application/json", R"({"id":"node-0","round":3})"};
          }},
         {"/metrics", [](const HttpRequest& request) {
            std::string node = request.params.count("node") ? request.params.at("node") : "";
            return HttpResponse{200, "text/plain; version=0.0.4", "node " + node + "\n"};
          }}});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    ASSERT_NE(server_->port(), 0);
  }

  std::atomic<int> status_calls_{0};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ARouteAnswersWithItsTypeAndBodyAndClosesTheConnection) {
  std::string response = Get(server_->port(), "/status");
  EXPECT_EQ(StatusLineOf(response), "HTTP/1.1 200 OK");
  EXPECT_TRUE(HasHeader(response, "Content-Type: application/json")) << response;
  EXPECT_TRUE(HasHeader(response, "Content-Length: 25")) << response;
  EXPECT_TRUE(HasHeader(response, "Connection: close")) << response;
  EXPECT_EQ(BodyOf(response), R"({"id":"node-0","round":3})");
  EXPECT_EQ(status_calls_.load(), 1);
  EXPECT_GE(server_->requests(), 1u);
}

TEST_F(HttpServerTest, TheRouteSeesTheDecodedQueryString) {
  std::string response = Get(server_->port(), "/metrics?node=n%207&other=1");
  EXPECT_EQ(StatusLineOf(response), "HTTP/1.1 200 OK");
  EXPECT_TRUE(HasHeader(response, "Content-Type: text/plain; version=0.0.4")) << response;
  EXPECT_EQ(BodyOf(response), "node n 7\n");
}

TEST_F(HttpServerTest, UnknownPathIs404AndOtherMethodsAre405) {
  EXPECT_EQ(StatusLineOf(Get(server_->port(), "/")), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(StatusLineOf(Get(server_->port(), "/status/../etc")), "HTTP/1.1 404 Not Found");
  std::string post =
      Exchange(server_->port(), "POST /status HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(StatusLineOf(post), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_TRUE(HasHeader(post, "Allow: GET")) << post;
  EXPECT_EQ(status_calls_.load(), 0);
}

TEST_F(HttpServerTest, GarbageOversizedAndTruncatedRequestsAre4xxAndTheServerSurvives) {
  const std::string bad_requests[] = {
      "garbage\r\n\r\n",
      "GET /status\r\n\r\n",
      "GET status HTTP/1.0\r\n\r\n",
      "GET /status HTTP/2.0 extra\r\n\r\n",
      std::string("GET /st\0tus HTTP/1.0\r\n\r\n", 25),
      "\xff\xfe\x01\x02 / HTTP/1.0\r\n\r\n",
      "GET /status HTTP/1.0\r\n" + std::string(20000, 'h') + ": x\r\n\r\n",
  };
  for (const std::string& request : bad_requests) {
    EXPECT_EQ(StatusLineOf(Exchange(server_->port(), request)), "HTTP/1.1 400 Bad Request")
        << request.substr(0, 40);
  }
  EXPECT_EQ(StatusLineOf(Get(server_->port(), "/" + std::string(20000, 'a'))),
            "HTTP/1.1 414 URI Too Long");
  // A client that sends half a request and closes its side.
  {
    Connection half(server_->port());
    half.Send("GET /sta");
    half.CloseSending();
    EXPECT_EQ(StatusLineOf(half.ReadAll()), "HTTP/1.1 400 Bad Request");
  }
  EXPECT_EQ(status_calls_.load(), 0);
  EXPECT_EQ(StatusLineOf(Get(server_->port(), "/status")), "HTTP/1.1 200 OK");
}

TEST_F(HttpServerTest, ASilentClientIsClosedAndOthersAreServedMeanwhile) {
  Connection silent(server_->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_EQ(StatusLineOf(Get(server_->port(), "/status")), "HTTP/1.1 200 OK");
  auto start = SteadyClock::now();
  EXPECT_EQ(silent.ReadAll(), "");  // closed by the server (5 s), not by the 30 s read timeout
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(25))
      << "the server did not close a client that sent nothing";
}

TEST_F(HttpServerTest, ClientsBeyondTheCapOf32AreClosedUnansweredAndServedAgainLater) {
  // The 32 silent clients hold their slots for 5 s; within that window a further client must be
  // closed without an answer. Retried with fresh silent clients in case a loaded machine starts
  // their threads late.
  bool refused = false;
  for (int attempt = 0; attempt < 5 && !refused; ++attempt) {
    std::vector<std::unique_ptr<Connection>> silent;
    for (int i = 0; i < 32; ++i) {
      silent.push_back(std::make_unique<Connection>(server_->port()));
      ASSERT_TRUE(silent.back()->connected());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    refused = Get(server_->port(), "/status").empty();
  }
  EXPECT_TRUE(refused) << "a 33rd client was answered while 32 others held connections";
  // Once the silent clients are gone, requests are answered again.
  auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  std::string answer;
  while (StatusLineOf(answer) != "HTTP/1.1 200 OK" && SteadyClock::now() < deadline) {
    answer = Get(server_->port(), "/status");
    if (answer.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(StatusLineOf(answer), "HTTP/1.1 200 OK") << "waited 30 s for a free connection slot";
}

TEST(HttpServerRoutes, ARouteThatThrowsIs500AndTheServerKeepsServing) {
  auto server = HttpServer::Start(
      "127.0.0.1", 0,
      {{"/boom", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); }},
       {"/fine", [](const HttpRequest&) {
          return HttpResponse{200, "text/plain", "fine"};
        }}});
  ASSERT_TRUE(server.ok());
  std::string boom = Get((*server)->port(), "/boom");
  EXPECT_EQ(StatusLineOf(boom), "HTTP/1.1 500 Internal Server Error");
  EXPECT_EQ(boom.find("boom", boom.find("\r\n")), std::string::npos) << "leaks the exception";
  EXPECT_EQ(StatusLineOf(Get((*server)->port(), "/fine")), "HTTP/1.1 200 OK");
}

TEST(HttpServerStart, BadAddressIsInvalidArgumentAndAPortInUseIsUnavailable) {
  auto no_address = HttpServer::Start("localhost", 0, {});
  ASSERT_FALSE(no_address.ok());
  EXPECT_EQ(no_address.status().code(), ErrorCode::kInvalidArgument);

  auto first = HttpServer::Start("127.0.0.1", 0, {});
  ASSERT_TRUE(first.ok());
  auto second = HttpServer::Start("127.0.0.1", (*first)->port(), {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(second.status().message().find(std::to_string((*first)->port())), std::string::npos);
}

TEST(HttpGetClient, ReturnsTheBodyOf200AndNamesTheUrlOtherwise) {
  auto server =
      HttpServer::Start("127.0.0.1", 0, {{"/status", [](const HttpRequest&) {
                                            return HttpResponse{200, "application/json", "{}"};
                                          }}});
  ASSERT_TRUE(server.ok());
  uint16_t port = (*server)->port();
  auto body = HttpGet("127.0.0.1", port, "/status", 5000);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "{}");

  auto missing = HttpGet("127.0.0.1", port, "/nothing", 5000);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(missing.status().message().find("/nothing"), std::string::npos);
  EXPECT_NE(missing.status().message().find("404"), std::string::npos);

  server->reset();  // nobody listens there any more
  auto gone = HttpGet("127.0.0.1", port, "/status", 2000);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(gone.status().message().find(std::to_string(port)), std::string::npos);
}

}  // namespace
}  // namespace meshlearn::node
