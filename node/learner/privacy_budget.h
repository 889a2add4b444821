#pragma once
// The privacy budget: DP-SGD's settings and the ε the node's training has spent
// ([privacy], docs/privacy.md).
//
// Specification.
// - σ is [privacy] noise_multiplier, or the smallest σ that keeps the ε of all (rounds + 1)
//   rounds' steps within target_epsilon.
// - Every round of local training spends local_epochs × ceil(N / batch_size) steps, each a Poisson
//   sample at rate q = batch_size / N; ε is accounted by RDP (training/rdp_accountant.h).
// - With max_epsilon set, the node stops before a round would take ε past it (WouldRunOut).
//   Rationale: a stopped node keeps serving, like early stopping (docs/privacy.md).

#include <cstdint>
#include <optional>

#include "base/status.h"
#include "node/config/config.h"
#include "training/dp_sgd.h"
#include "training/model.h"
#include "training/rdp_accountant.h"

namespace meshlearn::node {

class PrivacyBudget {
 public:
  // The budget of `privacy` (enabled) for `model`, which must take DP-SGD, trained on
  // `train_size` records in batches of `batch_size`, `local_epochs` per round, for `rounds`
  // rounds after round 0. Errors name the key.
  static Result<PrivacyBudget> Create(const PrivacySection& privacy, const training::Model& model,
                                      int64_t batch_size, int local_epochs, int64_t rounds,
                                      uint64_t train_size);

  // The DP-SGD settings local training uses.
  const training::DpSgdConfig& dp() const { return dp_; }
  // True when max_epsilon is set and one more round of training would take ε past it.
  bool WouldRunOut() const;
  // Accounts `steps` more steps of DP-SGD.
  Status Spend(int64_t steps);
  // The ε spent so far, at [privacy] delta.
  double Epsilon() const { return accountant_.Epsilon(delta_); }
  // The steps spent so far (checkpointed as LearnerState::privacy_steps).
  int64_t steps() const { return accountant_.steps(); }
  // Restarts the account from a checkpoint's `steps`.
  Status Restore(int64_t steps);

 private:
  PrivacyBudget() = default;

  training::DpSgdConfig dp_;
  double rate_ = 0;              // Poisson sampling rate q
  int64_t steps_per_round_ = 0;  // local_epochs × ceil(N / batch_size)
  double delta_ = 0;
  std::optional<double> max_epsilon_;
  training::RdpAccountant accountant_;
};

}  // namespace meshlearn::node
