#include "node/learner/privacy_budget.h"

namespace meshlearn::node {

Result<PrivacyBudget> PrivacyBudget::Create(const PrivacySection& privacy,
                                            const training::Model& model, int64_t batch_size,
                                            int local_epochs, int64_t rounds, uint64_t train_size) {
  MESHLEARN_RETURN_IF_ERROR(training::CheckDpSgdSupported(model));
  PrivacyBudget budget;
  budget.rate_ = training::PoissonSamplingRate(batch_size, train_size);
  budget.steps_per_round_ = local_epochs * training::DpSgdStepsPerEpoch(batch_size, train_size);
  budget.delta_ = privacy.delta;
  budget.max_epsilon_ = privacy.max_epsilon;
  budget.dp_.max_grad_norm = privacy.max_grad_norm;
  if (privacy.noise_multiplier) {
    budget.dp_.noise_multiplier = *privacy.noise_multiplier;
  } else {
    const int64_t planned_steps = (rounds + 1) * budget.steps_per_round_;
    auto sigma = training::NoiseMultiplierFor(*privacy.target_epsilon, privacy.delta, budget.rate_,
                                              planned_steps);
    if (!sigma.ok()) return sigma.status().WithContext("[privacy] target_epsilon");
    budget.dp_.noise_multiplier = *sigma;
  }
  return budget;
}

bool PrivacyBudget::WouldRunOut() const {
  if (!max_epsilon_) return false;
  training::RdpAccountant after = accountant_;
  (void)after.AddSteps(rate_, dp_.noise_multiplier, steps_per_round_);
  return after.Epsilon(delta_) > *max_epsilon_;
}

Status PrivacyBudget::Spend(int64_t steps) {
  return accountant_.AddSteps(rate_, dp_.noise_multiplier, steps);
}

Status PrivacyBudget::Restore(int64_t steps) {
  accountant_ = training::RdpAccountant();
  return Spend(steps);
}

}  // namespace meshlearn::node
