#pragma once
// The DAC sampler: scores -> softmax probabilities (file 004 section 2 eq. 4 and Algorithm 1;
// DESIGN.md "DAC sampler", which holds the exact rules).
//
// Specification (on top of topology/sampler.h).
// - Prior: before any score, every known peer has p_ij = 1/(K-1) (Algorithm 1 line 2).
//   Rationale: with nothing known, every peer is equally likely to share i's distribution.
// - Two-hop: after the direct scores of a round are set, for every known peer k that i never
//   scored directly, among this round's observed peers j whose row has s_jk > 0, take the j with
//   the largest s_ij (ties: the smaller peer id) and set s_ik := s_jk. A peer k that no row scores
//   positively keeps its previous estimate (or stays unscored).
//   Rationale: the peer most similar to i is the best witness of how similar k is to i; the
//   estimate makes unexplored peers from i's cluster likely before i ever samples them. The
//   released code of file 004 keeps the smallest s_ij, which we consider a bug; it is offered as
//   TwoHopRule::kSmallest only to reproduce that code, and then follows that code exactly: every
//   entry of a witness's row is a candidate, s_jk <= 0 included, and s_ik := s_jk is copied as
//   it is (a non-positive estimate then takes the floor below, as in that code; file 004's code,
//   utils/training_utils.py lines 186-205).
// - The witness cap (TwoHopCap::kWitness, opt-in; with kLargest): a witness j gives the
//   estimate min(s_ij, s_jk), where s_ij is i's own direct score of j this round, and i takes
//   the largest such estimate over this round's witnesses with min(s_ij, s_jk) > 0 (the widest
//   two-hop path; ties: the smaller witness id): s_ik := max_j min(s_ij, s_jk). A witness that
//   i does not find similar (s_ij <= 0) vouches for nobody, so a peer with no such path keeps its
//   previous estimate, as above. TwoHopCap::kOff is
//   DAC's rule above, uncapped. kSmallest (the paper code, reproduced exactly) is never capped.
//   Rationale: a row is the witness's word, and the witness can lie (docs/robustness.md,
//   "score_lie"). Uncapped, one sampled peer that reports a score above every honest one for
//   its allies makes them the most likely peers of every node that samples it, and the most
//   similar witness's low scores push every peer it names to the floor. With the cap:
//   - no estimate exceeds the node's own direct score of the peer that vouches for it, so
//     p_ik <= p_ij: a liar must first look as similar as an honest cluster mate, and even then
//     its allies are only as likely as it is, until the node samples them and their direct
//     scores replace the estimates;
//   - one witness can no longer lower an estimate that another witness supports: the largest
//     capped estimate wins, so a liar's demotion holds only for peers no other witness of the
//     round scores higher.
//   On clustered data it keeps the rule's job: an in-cluster witness (s_ij high) vouches for
//   i's cluster mates at about their true level, while a witness of another cluster (s_ij low)
//   can no longer vouch for its own mates, which DAC's rule let it do when it was the only
//   witness of a peer (tests/topology/dac_sampler_test.cc, "WitnessCap...").
//   Why it is not the default: a dissimilar witness's row is often true (a sign-flipping
//   attacker scores honestly), and DAC's rule uses it. On poison-majority (60% sign-flippers)
//   the cap raised the honest nodes' mean test MSE from 11.1 to 19.9 (17.8 with
//   merge_min_score; 11.1 with merge_min_score and explore_rounds = 3), while on its own it cut
//   a score_lie attack's share of honest draws from 0.39 to 0.33 only (3 seeds,
//   docs/robustness.md "Results: who honest nodes draw").
//   What the cap leaves is not a row raising a peer but lock-in. At a high τ a node draws only
//   the peers it already scores near its best; a liar's low entries (positive, so they are
//   estimates, below the floor of an unscored peer) keep honest cluster mates out of that set,
//   and it vouches for none of them, so a node whose first cluster mates were liars keeps
//   drawing them. Direct scores, which no row changes, undo it: with explore_rounds = 3 the
//   capped share fell to 0.247, against 0.236 in a clean run and 0.224 in a clean run with the
//   same options (3 seeds); what is left is the liars' cross-cluster allies, each drawn about
//   once before its direct score floors it. No rule on rows alone can force a liar to vouch,
//   so the defence is the cap with a few rounds of exploration.
// - What a node passes on as a witness (TwoHopRow): kAll, every score it holds, two-hop
//   estimates included; kDirect, only the peers it scored itself, with their latest direct
//   scores (file 004's code passes its direct set).
//   Rationale for kAll as the default: an estimate that travels on reaches peers that no sampled
//   neighbour has met, which helps a node whose neighbours explore little. kDirect keeps every
//   estimate two hops long, so one wrong direct score misleads only its witness's requesters.
// - Exploration (explore_rounds = R > 0): until the round of the last update exceeds R, every
//   known peer keeps the prior, whatever the scores; the scores are still kept, and the softmax
//   takes over after round R.
//   Rationale: two-hop rows arrive with the peers' snapshots of the previous round, so after
//   round 1 a node has only its m direct scores, and the softmax would draw the same m peers
//   again in round 2. One round of uniform draws spreads the first direct sets before DAC
//   narrows (issue 45, "when two-hop starts").
// - Normalisation (optional, `normalize = "minmax"`): the scores entering the softmax are mapped
//   to [0, 1] by (s - min)/(max - min) over those scores; if all are equal they all become 1.
//   Rationale: metrics live on very different scales (cosine in [-1, 1], inverse L2 up to 1e6),
//   so one τ cannot fit them all; min-max makes τ metric-independent. Equal scores carry no
//   ranking, so they map to one common value.
// - Softmax with inverse temperature τ_t: p_ik ∝ exp(τ_t (s_ik − max s)) over the peers that enter
//   the softmax (eq. 4; the max shift changes nothing mathematically and prevents overflow for τ
//   up to Table 8's 10000).
//   - UnscoredRule::kExclude (default, the paper's code): only scored peers with a raw score > 0
//     enter; every other peer gets the floor probability 1e-6, then all probabilities are
//     renormalised to sum 1. Whether a score is > 0 is decided on the raw score, before min-max.
//     Rationale: an unscored peer has no evidence either way, and a non-positive similarity
//     (e.g. a negative cosine) means "not alike"; the floor keeps every peer reachable so that a
//     wrong early estimate can still be corrected. Deciding on the raw score keeps min-max from
//     flooring the least similar scored peer just for being last.
//   - UnscoredRule::kZero (DAC's original): every peer enters, unscored ones with s = 0.
//   - When no peer enters the softmax, p is uniform (the prior).
// - τ schedule: TauSchedule::kConstant uses τ; TauSchedule::kSigmoid (DAC_var) uses
//   τ_t = 2a / (1 + e^(−0.2 t)) − a + 1 with a = τ and t the round of the last update (t = 0
//   before any), rising from 1 at t = 0 towards τ + 1.
//   Rationale: early scores come from barely trained models; a cold start explores more.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "topology/sampler.h"

namespace meshlearn::topology {

// How peers without a usable score enter the softmax.
enum class UnscoredRule { kExclude, kZero };
// How τ changes with the round.
enum class TauSchedule { kConstant, kSigmoid };
// How scores are rescaled before the softmax.
enum class ScoreNormalization { kNone, kMinMax };
// Which sampled peer's row gives the two-hop estimate.
enum class TwoHopRule { kLargest, kSmallest, kOff };
// Which scores a node passes on in its row, as a two-hop witness.
enum class TwoHopRow { kAll, kDirect };
// Whether a two-hop estimate is capped at the witness's own direct score.
enum class TwoHopCap { kWitness, kOff };

// The floor probability of excluded peers before renormalising (DESIGN.md "DAC sampler").
inline constexpr double kDacFloorProbability = 1e-6;

// The DAC options; the defaults are DESIGN.md's.
struct DacOptions {
  // Inverse temperature τ, finite and >= 0.
  double tau = 30;
  UnscoredRule unscored = UnscoredRule::kExclude;
  TauSchedule tau_schedule = TauSchedule::kConstant;
  ScoreNormalization normalize = ScoreNormalization::kNone;
  TwoHopRule two_hop = TwoHopRule::kLargest;
  TwoHopRow two_hop_row = TwoHopRow::kAll;
  TwoHopCap two_hop_cap = TwoHopCap::kOff;
  // Rounds of uniform exploration before the softmax takes over (0: none), >= 0.
  int64_t explore_rounds = 0;
};

// Returns τ_t for round `round` (see the specification).
double TauAt(double tau, TauSchedule schedule, int64_t round);

// Returns the DAC probabilities of peers with `scores` (empty = unscored) at inverse temperature
// `tau`, following the normalisation, softmax and unscored rules of the specification. The result
// has one entry per score and sums to 1 (empty for no peers).
std::vector<double> DacProbabilities(std::span<const std::optional<double>> scores, double tau,
                                     UnscoredRule unscored, ScoreNormalization normalize);

// The DAC sampler.
class DacSampler final : public PeerSampler {
 public:
  // Returns a sampler for node `self`, or kInvalidArgument when options.tau is negative or not
  // finite, or options.explore_rounds is negative.
  static Result<std::unique_ptr<DacSampler>> Create(std::string self, const DacOptions& options);

  std::string_view Name() const override { return "dac"; }
  // The options this sampler runs with.
  const DacOptions& options() const { return options_; }
  // The row this node passes on as a witness: Scores(), or only its direct scores (TwoHopRow).
  ScoreRow WitnessRow() const override;

 protected:
  void Reweight(std::vector<PeerRecord>& records, int64_t round) const override;
  void AfterDirectScores(std::vector<PeerRecord>& records,
                         std::span<const PeerObservation* const> observations) const override;
  // The two-hop rule of the specification, for the peers without a record.
  std::vector<OutsideEstimate> OutsideEstimates(
      const std::vector<PeerRecord>& records,
      std::span<const PeerObservation* const> observations) const override;

 private:
  DacSampler(std::string self, const DacOptions& options);

  DacOptions options_;
};

}  // namespace meshlearn::topology
