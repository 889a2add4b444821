#include "node/status_document.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace meshlearn::node {
namespace {

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

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
  std::ostringstream json;
  json << "{\"id\":" << JsonString(s.id) << ",\"endpoint\":" << JsonString(s.endpoint)
       << ",\"round\":" << s.round << ",\"rounds\":" << s.rounds
       << ",\"metric\":" << JsonString(s.metric) << ",\"sampler\":" << JsonString(s.sampler)
       << ",\"peers\":[";
  bool first = true;
  for (const PeerStatus& p : s.peers) {
    json << (first ? "" : ",") << "{\"id\":" << JsonString(p.id)
         << ",\"endpoint\":" << JsonString(p.endpoint) << ",\"liveness\":\""
         << topology::LivenessName(p.liveness)
         << "\",\"score\":" << (p.score ? JsonNumber(*p.score) : "null")
         << ",\"probability\":" << JsonNumber(p.probability)
         << ",\"times_sampled\":" << p.times_sampled << ",\"answered\":" << p.answered << "}";
    first = false;
  }
  json << "],\"counters\":{\"rejected_inbound\":" << c.rejected_inbound
       << ",\"rejected_replies\":" << c.rejected_replies
       << ",\"missed_deadlines\":" << c.missed_deadlines << ",\"refused_peers\":" << c.refused_peers
       << ",\"candidates_ignored\":" << c.candidates_ignored
       << ",\"peers_reached\":" << c.peers_reached
       << ",\"held_requests_expired\":" << c.held_requests_expired
       << ",\"merge_excluded\":" << c.merge_excluded << ",\"bytes_in\":" << t.bytes_in
       << ",\"bytes_out\":" << t.bytes_out << ",\"timeouts\":" << t.timeouts
       << ",\"transport_rejected\":" << t.inbound_rejected
       << ",\"handshakes_refused\":" << t.handshakes_refused << ",\"rejected_by_code\":{";
  first = true;
  for (const auto& [code, n] : c.rejected_by_code) {
    json << (first ? "" : ",") << JsonString(code) << ":" << n;
    first = false;
  }
  json << "}}}";
  return json.str();
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
