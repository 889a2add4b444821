// The simulated network on the simulation's virtual clock (sim/scheduling.h): a request answered
// before its deadline leaves nothing queued behind it, and one that is not answered still times
// out at its deadline.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/transport/simulated_network.h"
#include "protocol/codec.h"
#include "sim/scheduling.h"
#include "tests/node/transport/transport_test_support.h"

namespace meshlearn::sim {
namespace {

using node::testing::Answer;
using std::chrono::seconds;
using TimePoint = VirtualClock::TimePoint;

TEST(VirtualClock, ACancelledTaskNeverRunsAndTheOthersKeepTheirOrder) {
  VirtualClock clock;
  std::vector<int> ran;
  const TimePoint t = clock.Now() + seconds(5);
  clock.At(t, [&] { ran.push_back(1); });
  node::NetworkClock::TimerId second = clock.At(t, [&] { ran.push_back(2); });
  clock.At(t, [&] { ran.push_back(3); });
  node::NetworkClock::TimerId later = clock.At(t + seconds(1), [&] { ran.push_back(4); });
  clock.Cancel(second);
  clock.Cancel(second);  // twice: no-op
  while (clock.RunNext()) {
  }
  EXPECT_EQ(ran, (std::vector<int>{1, 3, 4}));
  clock.Cancel(later);  // after it ran: no-op
  EXPECT_FALSE(clock.RunNext());
}

// A server that answers every request at once, or (`answer` false) never.
struct Mesh {
  explicit Mesh(bool answer)
      : clock(std::make_shared<VirtualClock>()), network(clock, /*links=*/nullptr) {
    node::TransportOptions server_options;
    server_options.node_id = "server";
    server_options.listen_endpoint = "tcp://127.0.0.1:*";
    auto started = network.Start(server_options, [this, answer](node::InboundRequest request) {
      if (answer) server->Reply(request.token, Answer("server", request.frames, nullptr));
    });
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    if (started.ok()) server = std::move(*started);
    node::TransportOptions client_options;
    client_options.node_id = "client";
    client_options.listen_endpoint = "tcp://127.0.0.1:*";
    auto client_started = network.Start(client_options, [](node::InboundRequest) {});
    EXPECT_TRUE(client_started.ok()) << client_started.status().ToString();
    if (client_started.ok()) client = std::move(*client_started);
  }

  // Pings the server with `deadline` and runs the clock until nothing is left;
  // the reply, or nullopt when none came.
  std::optional<Result<std::vector<Frame>>> PingAndRunOut(TimePoint deadline) {
    std::optional<Result<std::vector<Frame>>> reply;
    client->Request(
        server->bound_endpoint(), 1, Encode(MakeMessage("client", 1, 0, Ping{7})), deadline,
        [&](Result<std::vector<Frame>> r) { reply = std::move(r); }, "");
    while (clock->RunNext()) {
    }
    return reply;
  }

  std::shared_ptr<VirtualClock> clock;
  node::SimulatedNetwork network;
  std::unique_ptr<node::Transport> server;
  std::unique_ptr<node::Transport> client;
};

TEST(VirtualNetwork, AnAnsweredRequestLeavesNoTimerToItsDeadline) {
  Mesh mesh(/*answer=*/true);
  ASSERT_TRUE(mesh.server && mesh.client);
  const TimePoint start = mesh.clock->Now();
  auto reply = mesh.PingAndRunOut(start + seconds(30));
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->ok()) << reply->status().ToString();
  // The last task was the reply (or the idle connection's close), not the deadline's timer.
  EXPECT_LT(mesh.clock->Now(), start + seconds(30));
}

TEST(VirtualNetwork, AnUnansweredRequestStillTimesOutAtItsDeadline) {
  Mesh mesh(/*answer=*/false);
  ASSERT_TRUE(mesh.server && mesh.client);
  const TimePoint deadline = mesh.clock->Now() + seconds(30);
  auto reply = mesh.PingAndRunOut(deadline);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status().code(), ErrorCode::kTimeout) << reply->status().ToString();
  EXPECT_GE(mesh.clock->Now(), deadline);
}

}  // namespace
}  // namespace meshlearn::sim
