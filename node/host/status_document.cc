#include "node/host/status_document.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

namespace meshlearn::node {
namespace {

using nlohmann::json;

// JSON has no NaN or infinity; they become null, and null reads back as NaN.
json Number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

double NumberOf(const json& value) { return value.is_null() ? std::nan("") : value.get<double>(); }

std::string JsonNumber(double value) { return Number(value).dump(); }

// Prometheus label values escape backslash, quote and newline.
std::string LabelValue(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

NodeStatus TakeNodeStatus(const NodeStateMachine& machine, const TransportStats& transport,
                          std::string id, std::string endpoint, int64_t rounds, std::string metric,
                          TimePoint now) {
  NodeStatus status;
  status.id = std::move(id);
  status.endpoint = std::move(endpoint);
  status.round = machine.completed_round();
  status.rounds = rounds;
  status.metric = std::move(metric);
  status.sampler = std::string(machine.sampler().Name());
  for (const topology::PeerEntry& p : machine.peers().Entries()) {
    PeerStatus peer;
    peer.id = p.id;
    peer.endpoint = p.endpoint;
    peer.liveness = machine.peers().LivenessOf(p.id, now);
    if (const topology::PeerRecord* r = machine.sampler().Find(p.id)) {
      peer.score = r->score;
      peer.probability = r->probability;
    }
    peer.times_sampled = machine.comm().TimesSampled(p.id);
    peer.answered = machine.comm().TimesAnswered(p.id);
    peer.problem = machine.JoinProblemOf(p.id);
    status.peers.push_back(std::move(peer));
  }
  for (const topology::PeerRecord& r : machine.sampler().Records()) {
    status.probabilities.emplace_back(r.peer, r.probability);
  }
  status.counters = machine.counters();
  status.transport = transport;
  return status;
}

std::string StatusJson(const NodeStatus& s) {
  const MachineCounters& c = s.counters;
  const TransportStats& t = s.transport;
  json peers = json::array();
  for (const PeerStatus& p : s.peers) {
    peers.push_back({{"id", p.id},
                     {"endpoint", p.endpoint},
                     {"liveness", topology::LivenessName(p.liveness)},
                     {"score", p.score ? Number(*p.score) : json(nullptr)},
                     {"probability", Number(p.probability)},
                     {"times_sampled", p.times_sampled},
                     {"answered", p.answered},
                     {"problem", p.problem}});
  }
  json document = {{"id", s.id},
                   {"endpoint", s.endpoint},
                   {"round", s.round},
                   {"rounds", s.rounds},
                   {"metric", s.metric},
                   {"sampler", s.sampler},
                   {"val_loss", Number(s.val_loss)},
                   {"epsilon", Number(s.epsilon)},
                   {"peers", std::move(peers)},
                   {"counters",
                    {{"rejected_inbound", c.rejected_inbound},
                     {"rejected_replies", c.rejected_replies},
                     {"missed_deadlines", c.missed_deadlines},
                     {"refused_peers", c.refused_peers},
                     {"candidates_ignored", c.candidates_ignored},
                     {"peers_reached", c.peers_reached},
                     {"held_requests_expired", c.held_requests_expired},
                     {"merge_excluded", c.merge_excluded},
                     {"topk_whole_estimates", c.topk_whole_estimates},
                     {"bytes_in", t.bytes_in},
                     {"bytes_out", t.bytes_out},
                     {"timeouts", t.timeouts},
                     {"transport_rejected", t.inbound_rejected},
                     {"handshakes_refused", t.handshakes_refused},
                     {"rejected_by_code", c.rejected_by_code}}},
                   {"http", {{"requests", s.http_requests}, {"cpu_s", Number(s.http_cpu_s)}}}};
  return document.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<NodeStatus> ParseStatusJson(const std::string& text) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return Status::Malformed("status document: not a JSON object");
  }
  NodeStatus s;
  std::string field;
  try {
    field = "id";
    s.id = document.at("id").get<std::string>();
    field = "endpoint";
    s.endpoint = document.at("endpoint").get<std::string>();
    field = "round";
    s.round = document.at("round").get<int64_t>();
    field = "rounds";
    s.rounds = document.at("rounds").get<int64_t>();
    field = "metric";
    s.metric = document.at("metric").get<std::string>();
    field = "sampler";
    s.sampler = document.at("sampler").get<std::string>();
    field = "val_loss";
    s.val_loss = NumberOf(document.at("val_loss"));
    field = "epsilon";  // absent in documents of builds before [privacy]
    s.epsilon = document.contains("epsilon") ? NumberOf(document.at("epsilon")) : std::nan("");
    field = "peers";
    for (const json& p : document.at("peers")) {
      PeerStatus peer;
      peer.id = p.at("id").get<std::string>();
      peer.endpoint = p.at("endpoint").get<std::string>();
      std::string liveness = p.at("liveness").get<std::string>();
      bool known = false;
      for (topology::Liveness l :
           {topology::Liveness::kCandidate, topology::Liveness::kAlive, topology::Liveness::kDead,
            topology::Liveness::kProbation, topology::Liveness::kLeft}) {
        if (liveness == topology::LivenessName(l)) {
          peer.liveness = l;
          known = true;
        }
      }
      if (!known) return Status::Malformed("status document: peers: liveness '" + liveness + "'");
      if (!p.at("score").is_null()) peer.score = p.at("score").get<double>();
      peer.probability = NumberOf(p.at("probability"));
      peer.times_sampled = p.at("times_sampled").get<uint64_t>();
      peer.answered = p.at("answered").get<uint64_t>();
      // absent in documents of builds before join problems were shown
      if (p.contains("problem")) peer.problem = p.at("problem").get<std::string>();
      s.probabilities.emplace_back(peer.id, peer.probability);
      s.peers.push_back(std::move(peer));
    }
    field = "counters";
    const json& c = document.at("counters");
    s.counters.rejected_inbound = c.at("rejected_inbound").get<uint64_t>();
    s.counters.rejected_replies = c.at("rejected_replies").get<uint64_t>();
    s.counters.missed_deadlines = c.at("missed_deadlines").get<uint64_t>();
    s.counters.refused_peers = c.at("refused_peers").get<uint64_t>();
    s.counters.candidates_ignored = c.at("candidates_ignored").get<uint64_t>();
    s.counters.peers_reached = c.at("peers_reached").get<uint64_t>();
    s.counters.held_requests_expired = c.at("held_requests_expired").get<uint64_t>();
    s.counters.merge_excluded = c.at("merge_excluded").get<uint64_t>();
    // Absent from a node older than the counter.
    s.counters.topk_whole_estimates = c.value("topk_whole_estimates", uint64_t{0});
    s.counters.rejected_by_code = c.at("rejected_by_code").get<std::map<std::string, uint64_t>>();
    s.transport.bytes_in = c.at("bytes_in").get<uint64_t>();
    s.transport.bytes_out = c.at("bytes_out").get<uint64_t>();
    s.transport.timeouts = c.at("timeouts").get<uint64_t>();
    s.transport.inbound_rejected = c.at("transport_rejected").get<uint64_t>();
    s.transport.handshakes_refused = c.at("handshakes_refused").get<uint64_t>();
    field = "http";
    s.http_requests = document.at("http").at("requests").get<uint64_t>();
    s.http_cpu_s = NumberOf(document.at("http").at("cpu_s"));
  } catch (const json::exception& e) {
    return Status::Malformed("status document: " + field + ": " + e.what());
  }
  return s;
}

std::string MetricsText(const NodeStatus& s) {
  const MachineCounters& c = s.counters;
  const TransportStats& t = s.transport;
  std::string node = "node=\"" + LabelValue(s.id) + "\"";
  std::ostringstream m;
  auto metric = [&](const char* name, const char* type, const char* help) {
    m << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  metric("meshlearn_round", "gauge", "Last completed round.");
  m << "meshlearn_round{" << node << "} " << s.round << "\n";
  if (std::isfinite(s.epsilon)) {
    metric("meshlearn_privacy_epsilon", "gauge",
           "Differential privacy epsilon spent by the node's training records so far.");
    m << "meshlearn_privacy_epsilon{" << node << "} " << JsonNumber(s.epsilon) << "\n";
  }
  metric("meshlearn_bytes_in_total", "counter", "Bytes received.");
  m << "meshlearn_bytes_in_total{" << node << "} " << t.bytes_in << "\n";
  metric("meshlearn_bytes_out_total", "counter", "Bytes sent.");
  m << "meshlearn_bytes_out_total{" << node << "} " << t.bytes_out << "\n";
  metric("meshlearn_handshakes_refused_total", "counter",
         "Connections refused because their CURVE key is not on the allowlist.");
  m << "meshlearn_handshakes_refused_total{" << node << "} " << t.handshakes_refused << "\n";
  metric("meshlearn_peers_reached_total", "counter",
         "Times a peer answered our Hello and was admitted (0: never reached a peer).");
  m << "meshlearn_peers_reached_total{" << node << "} " << c.peers_reached << "\n";
  metric("meshlearn_candidates_ignored_total", "counter",
         "Peers not kept as candidates because the candidate list was full.");
  m << "meshlearn_candidates_ignored_total{" << node << "} " << c.candidates_ignored << "\n";
  metric("meshlearn_missed_deadlines_total", "counter", "Sampled peers that did not answer.");
  m << "meshlearn_missed_deadlines_total{" << node << "} " << c.missed_deadlines << "\n";
  metric("meshlearn_topk_whole_estimates_total", "counter",
         "Top-k replies that carried the model's estimate whole (the requester held none of it).");
  m << "meshlearn_topk_whole_estimates_total{" << node << "} " << c.topk_whole_estimates << "\n";
  metric("meshlearn_rejected_messages_total", "counter", "Peer messages rejected, by code.");
  m << "meshlearn_rejected_messages_total{" << node << ",code=\"all\"} " << c.rejected_inbound
    << "\n";
  for (const auto& [code, n] : c.rejected_by_code) {
    m << "meshlearn_rejected_messages_total{" << node << ",code=\"" << code << "\"} " << n << "\n";
  }
  metric("meshlearn_peer_probability", "gauge", "Sampling probability of each peer.");
  for (const auto& [peer, probability] : s.probabilities) {
    m << "meshlearn_peer_probability{" << node << ",peer=\"" << LabelValue(peer) << "\"} "
      << JsonNumber(probability) << "\n";
  }
  return m.str();
}

}  // namespace meshlearn::node
