// node/host/status_document.h: the JSON of /status written with nlohmann-json and read back.
#include "node/host/status_document.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace meshlearn::node {
namespace {

NodeStatus SampleStatus() {
  NodeStatus s;
  s.id = "node \"7\"\n";  // quotes and a control character must survive
  s.endpoint = "tcp://127.0.0.1:5000";
  s.round = 4;
  s.rounds = 10;
  s.metric = "cos_weights";
  s.sampler = "dac";
  s.val_loss = 0.25;
  PeerStatus a;
  a.id = "a";
  a.endpoint = "tcp://127.0.0.1:5001";
  a.liveness = topology::Liveness::kAlive;
  a.score = 0.5;
  a.probability = 0.75;
  a.times_sampled = 3;
  a.answered = 2;
  PeerStatus b = a;
  b.id = "b";
  b.liveness = topology::Liveness::kProbation;
  b.score.reset();
  b.probability = 0.25;
  b.problem = "no reply from tcp://127.0.0.1:5001 before the deadline: nothing accepts TCP";
  s.peers = {a, b};
  s.probabilities = {{"a", 0.75}, {"b", 0.25}};
  s.counters.missed_deadlines = 5;
  s.counters.topk_whole_estimates = 6;
  s.counters.rejected_by_code = {{"too_large", 1}};
  s.transport.bytes_in = 1000;
  s.transport.bytes_out = 2000;
  s.transport.handshakes_refused = 1;
  s.http_requests = 9;
  s.http_cpu_s = 0.125;
  return s;
}

TEST(StatusDocument, ShowsTheEpsilonSpentOnlyWithPrivacy) {
  NodeStatus s = SampleStatus();
  EXPECT_TRUE(std::isnan(s.epsilon));
  auto without = ParseStatusJson(StatusJson(s));
  ASSERT_TRUE(without.ok());
  EXPECT_TRUE(std::isnan(without->epsilon));
  EXPECT_EQ(MetricsText(s).find("meshlearn_privacy_epsilon"), std::string::npos);
  s.epsilon = 2.5;
  auto with = ParseStatusJson(StatusJson(s));
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_EQ(with->epsilon, 2.5);
  EXPECT_NE(MetricsText(s).find("meshlearn_privacy_epsilon{node=\"node \\\"7\\\"\\n\"} 2.5\n"),
            std::string::npos)
      << MetricsText(s);
}

TEST(StatusDocument, ReadsBackWhatItWrites) {
  NodeStatus s = SampleStatus();
  std::string json = StatusJson(s);
  auto back = ParseStatusJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(StatusJson(*back), json);
  EXPECT_EQ(back->id, s.id);
  EXPECT_EQ(back->round, 4);
  ASSERT_EQ(back->peers.size(), 2u);
  EXPECT_EQ(back->peers[1].liveness, topology::Liveness::kProbation);
  EXPECT_FALSE(back->peers[1].score.has_value());
  EXPECT_EQ(back->peers[0].times_sampled, 3u);
  EXPECT_EQ(back->peers[0].problem, "");
  EXPECT_EQ(back->peers[1].problem, s.peers[1].problem) << "why joining it fails is shown";
  EXPECT_EQ(back->counters.rejected_by_code.at("too_large"), 1u);
  EXPECT_EQ(back->transport.bytes_out, 2000u);
  EXPECT_DOUBLE_EQ(back->http_cpu_s, 0.125);
  EXPECT_EQ(back->counters.topk_whole_estimates, 6u);
  EXPECT_NE(
      MetricsText(s).find("meshlearn_topk_whole_estimates_total{node=\"node \\\"7\\\"\\n\"} 6\n"),
      std::string::npos)
      << MetricsText(s);
  // A node older than the counter does not write it: read as 0.
  std::string older = json;
  const std::string key = "\"topk_whole_estimates\":6,";
  ASSERT_NE(older.find(key), std::string::npos) << older;
  older.erase(older.find(key), key.size());
  auto old_back = ParseStatusJson(older);
  ASSERT_TRUE(old_back.ok()) << old_back.status().ToString();
  EXPECT_EQ(old_back->counters.topk_whole_estimates, 0u);
  // Nor a peer's problem: read as none.
  const std::string problem = ",\"problem\":\"\"";
  ASSERT_NE(older.find(problem), std::string::npos) << older;
  older.erase(older.find(problem), problem.size());
  auto no_problem = ParseStatusJson(older);
  ASSERT_TRUE(no_problem.ok()) << no_problem.status().ToString();
  EXPECT_EQ(no_problem->peers[0].problem, "");
}

TEST(StatusDocument, NonFiniteNumbersAreNullAndBadUtf8IsReplaced) {
  NodeStatus s = SampleStatus();
  s.val_loss = std::numeric_limits<double>::quiet_NaN();
  s.peers[0].score = std::numeric_limits<double>::infinity();
  s.id = "bad \xff byte";
  std::string json = StatusJson(s);
  EXPECT_NE(json.find("\"val_loss\":null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"score\":null"), std::string::npos) << json;
  auto back = ParseStatusJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(std::isnan(back->val_loss));
  EXPECT_EQ(back->id, "bad \xEF\xBF\xBD byte");
}

TEST(StatusDocument, TextThatIsNotAStatusDocumentIsMalformedAndNamesTheField) {
  auto not_json = ParseStatusJson("{\"id\":");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().code(), ErrorCode::kMalformed);

  std::string json = StatusJson(SampleStatus());
  std::string wrong = json;
  wrong.replace(wrong.find("\"round\":4"), 9, "\"round\":\"four\"");
  auto bad_round = ParseStatusJson(wrong);
  ASSERT_FALSE(bad_round.ok());
  EXPECT_NE(bad_round.status().message().find("round"), std::string::npos)
      << bad_round.status().ToString();

  std::string liveness = json;
  liveness.replace(liveness.find("\"alive\""), 7, "\"zombie\"");
  auto bad_liveness = ParseStatusJson(liveness);
  ASSERT_FALSE(bad_liveness.ok());
  EXPECT_NE(bad_liveness.status().message().find("zombie"), std::string::npos);
}

TEST(NodePage, IsEmbeddedAndPollsStatus) {
  std::string_view page = NodePageFile("node.html");
  ASSERT_FALSE(page.empty());
  EXPECT_EQ(page.substr(0, 15), "<!doctype html>");
  EXPECT_NE(page.find("fetch(\"status\""), std::string_view::npos);
  EXPECT_TRUE(NodePageFile("missing.html").empty());
}

}  // namespace
}  // namespace meshlearn::node
