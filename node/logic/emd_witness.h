#pragma once
// The witness role of the EMD exchange in witness mode (DESIGN.md "EMD embedding exchange",
// emd_witness): a third peer w receives the requester's projected training rows and the
// responder's projected validation rows of one measurement, and answers both with the scalar EMD.
// Part of the EMD exchange (node/logic/emd_exchange.h). No I/O: messages and time in, actions out.
//
// Specification.
// - Each side must come from the node it names (the requester sends the training rows, the
//   responder the validation rows), and a witness measures two other peers.
// - The first side is held until the second arrives, at most `hold_limit`, then both held sides
//   are answered Error(timeout). At most kMaxWitnessSessions measurements are held at once; a new
//   one beyond that is refused Error(unavailable).
//   Rationale: each holds up to two embedding sets (512 x 115 floats); a peer flooding sessions
//   must not grow the node without bound.
// - Both sides get the same answer: WitnessResult{session, EMD} or the Error of the measurement.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include <spdlog/logger.h>

#include "node/logic/actions.h"
#include "node/logic/requests.h"

namespace meshlearn::node {

// The measurements one node witnesses (see the specification). Not thread-safe.
class EmdWitness {
 public:
  // The witness of the node of `requests`, logging to `log`; sides are held at most
  // `hold_limit`.
  EmdWitness(Clock::duration hold_limit, RequestBook& requests, spdlog::logger& log);

  // One side of a measurement from `env.sender`: held, refused, or (with the other side) a
  // StartWitnessEmd job.
  void OnRows(InboundId inbound, const Envelope& env, const WitnessRows& rows, TimePoint now,
              Actions& out);
  // The learner measured `job`: both sides get the result.
  void OnDone(const WitnessEmdJob& job, const Result<double>& result, Actions& out);
  // Answers Error(timeout) to the sides held past their limit (all of them with `expire_all`).
  void Expire(TimePoint now, bool expire_all, Actions& out);
  // True while a measurement is held or being computed.
  bool Busy() const { return !sessions_.empty(); }

 private:
  // One side of a measurement held until the other side arrives.
  struct HeldSide {
    InboundId inbound = 0;
    uint64_t request_id = 0;
    ProjectedEmbeddings rows;
  };
  struct Session {
    std::optional<HeldSide> train;
    std::optional<HeldSide> validation;
    TimePoint deadline;
    bool computing = false;
  };
  // (session, requester, responder)
  using Key = std::tuple<uint64_t, std::string, std::string>;

  // Answers both held sides of `key` with `body` and forgets the session.
  void Answer(const Key& key, const Body& body, Actions& out);

  Clock::duration hold_limit_;
  RequestBook& requests_;
  spdlog::logger& log_;
  std::map<Key, Session> sessions_;
};

}  // namespace meshlearn::node
