#include "node/logic/emd_witness.h"

#include <vector>

namespace meshlearn::node {
namespace {

// Measurements a witness holds at once (see the specification).
constexpr size_t kMaxWitnessSessions = 64;

}  // namespace

EmdWitness::EmdWitness(Clock::duration hold_limit, RequestBook& requests, spdlog::logger& log)
    : hold_limit_(hold_limit), requests_(requests), log_(log) {}

void EmdWitness::OnRows(InboundId inbound, const Envelope& env, const WitnessRows& rows,
                        TimePoint now, Actions& out) {
  auto refuse = [&](Status why) {
    out.push_back(requests_.Reject(inbound, env.sender, env.request_id, why, now));
  };
  const bool train = rows.side == WitnessSide::kRequesterTrain;
  const std::string& owner = train ? rows.requester : rows.responder;
  if (env.sender != owner) {
    return refuse(Status::InvalidArgument(
        std::string("WitnessRows with ") +
        (train ? "the requester's training" : "the responder's validation") +
        " rows must come from '" + owner + "', not '" + env.sender + "'"));
  }
  if (rows.requester == rows.responder || rows.requester == requests_.self() ||
      rows.responder == requests_.self()) {
    return refuse(Status::InvalidArgument("a witness measures two other peers"));
  }
  Key key{rows.session, rows.requester, rows.responder};
  auto it = sessions_.find(key);
  if (it == sessions_.end()) {
    if (sessions_.size() >= kMaxWitnessSessions) {
      return refuse(Status::Unavailable("this witness already holds " +
                                        std::to_string(kMaxWitnessSessions) + " measurements"));
    }
    it = sessions_.emplace(key, Session{}).first;
    it->second.deadline = now + hold_limit_;
  }
  Session& session = it->second;
  std::optional<HeldSide>& slot = train ? session.train : session.validation;
  if (slot || session.computing) {
    return refuse(Status::InvalidArgument("this side of the measurement was already sent"));
  }
  slot =
      HeldSide{inbound, env.request_id, ProjectedEmbeddings{rows.rows, rows.cols, rows.embeddings}};
  if (!session.train || !session.validation) return;
  if (session.train->rows.cols != session.validation->rows.cols) {
    return Answer(key,
                  Error{ErrorCode::kLayoutMismatch,
                        "the two sides have " + std::to_string(session.train->rows.cols) + " and " +
                            std::to_string(session.validation->rows.cols) + " columns"},
                  out);
  }
  session.computing = true;
  out.push_back(StartWitnessEmd{WitnessEmdJob{rows.session, rows.requester, rows.responder,
                                              session.train->rows, session.validation->rows}});
}

void EmdWitness::OnDone(const WitnessEmdJob& job, const Result<double>& result, Actions& out) {
  Key key{job.session, job.requester, job.responder};
  if (!result.ok()) {
    log_.warn("witnessed EMD of {} and {} failed: {}", job.requester, job.responder,
              result.status().ToString());
    Answer(key, Error{result.status().code(), result.status().message()}, out);
    return;
  }
  log_.info("witnessed EMD of {} (train) and {} (validation): {:.4f}", job.requester, job.responder,
            *result);
  Answer(key, WitnessResult{job.session, *result}, out);
}

void EmdWitness::Answer(const Key& key, const Body& body, Actions& out) {
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return;
  for (const std::optional<HeldSide>* side : {&it->second.train, &it->second.validation}) {
    if (*side) out.push_back(requests_.ReplyTo((*side)->inbound, (*side)->request_id, body));
  }
  sessions_.erase(it);
}

void EmdWitness::Expire(TimePoint now, bool expire_all, Actions& out) {
  std::vector<Key> expired;
  for (const auto& [key, session] : sessions_) {
    if (!session.computing && (expire_all || now >= session.deadline)) expired.push_back(key);
  }
  for (const Key& key : expired) {
    Answer(key, Error{ErrorCode::kTimeout, "the other side of the measurement never arrived"}, out);
  }
}

}  // namespace meshlearn::node
