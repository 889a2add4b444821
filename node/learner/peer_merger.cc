#include "node/learner/peer_merger.h"

#include <algorithm>
#include <string>
#include <utility>

#include "training/trainer.h"

namespace meshlearn::node {

Result<std::unique_ptr<PeerMerger>> PeerMerger::Create(
    training::Model& model, const training::Dataset& train,
    std::unique_ptr<similarity::SimilarityMetric> metric, std::unique_ptr<training::MergeRule> rule,
    std::optional<double> merge_min_score, training::LossAveraging averaging) {
  std::unique_ptr<PeerMerger> merger(new PeerMerger(model, train.size(), merge_min_score));
  merger->metric_ = std::move(metric);
  merger->rule_ = std::move(rule);
  merger->initial_ = model.Parameters();
  if (merger->metric_->Needs().own_data_loss) {
    auto loss = training::MakeWeightsLossFn(model, train, averaging);
    if (!loss.ok()) return loss.status();
    merger->own_data_loss_ = std::move(*loss);
  }
  return merger;
}

void PeerMerger::Score(const RoundJob& job, const std::vector<float>& own,
                       RoundOutcome& out) const {
  similarity::MetricNeeds needs = metric_->Needs();
  for (const PeerModel& peer : job.peers) {
    similarity::MetricInput input;
    input.own = own;
    input.peer = peer.weights.view();
    if (needs.initial_weights) input.initial = initial_;
    if (needs.own_data_loss) input.own_data_loss = own_data_loss_;
    PeerScoreOutcome score;
    score.peer = peer.peer;
    auto s = needs.exchanged_score ? ExchangedScore(peer) : metric_->Score(input);
    if (s.ok()) {
      score.score = *s;
    } else {
      score.error = s.status();
    }
    out.scores.push_back(std::move(score));
  }
}

// s_ij of `peer` as its exchange measured it (metrics emd and centroid).
Result<double> PeerMerger::ExchangedScore(const PeerModel& peer) const {
  if (peer.exchanged_score) return *peer.exchanged_score;
  return Status::InvalidArgument(std::string(metric_->Name()) +
                                 ": the exchange with this peer has not measured it yet");
}

Status PeerMerger::Merge(const RoundJob& job, RoundOutcome& out, std::vector<float>& own) {
  std::vector<training::MergeInput> peers;
  std::vector<PeerScoreOutcome*> merged;  // the score of each of `peers`
  for (size_t k = 0; k < job.peers.size(); ++k) {
    PeerScoreOutcome& score = out.scores[k];
    if (!score.score) continue;
    if (merge_min_score_ && *score.score < *merge_min_score_) {
      ++out.excluded_by_min_score;
      continue;
    }
    merged.push_back(&score);
    const PeerModel& peer = job.peers[k];
    const int64_t behind = peer.round < 0 ? 0 : std::max<int64_t>(0, job.round - 1 - peer.round);
    peers.push_back({peer.weights.view(), peer.train_size, peer.probability, behind});
  }
  if (peers.empty()) return Status::Ok();
  training::MergeInput self{own, train_size_, 0};
  training::MergeReport report;
  std::vector<float> result(own.size());
  const Status status = rule_->Merge(self, peers, result, &report);
  if (!status.ok()) {
    out.round_errors.push_back(
        status.WithContext("merge left out, the node keeps its model this round"));
    return Status::Ok();
  }
  own.swap(result);
  for (size_t j = 0; j < merged.size(); ++j) merged[j]->merged = report.kept[j];
  return model_.LoadParameters(own);
}

}  // namespace meshlearn::node
