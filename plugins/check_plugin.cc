#include "plugins/check_plugin.h"

#include <chrono>
#include <cmath>
#include <random>
#include <sstream>

#include "plugins/script_attack.h"
#include "plugins/script_merge.h"
#include "plugins/script_metric.h"
#include "plugins/script_module.h"
#include "similarity/vector_kernels.h"

namespace meshlearn::plugins {
namespace {

using Clock = std::chrono::steady_clock;
using Floats = std::vector<float>;

// Random inputs of one check.
class Draws {
 public:
  Draws(size_t floats, uint64_t seed) : floats_(floats), rng_(seed) {}

  Floats Model() {
    Floats w(floats_);
    for (float& v : w) v = normal_(rng_);
    return w;
  }
  // `base` plus noise of standard deviation `scale`.
  Floats Near(const Floats& base, double scale) {
    Floats w = base;
    for (float& v : w) v += static_cast<float>(scale * normal_(rng_));
    return w;
  }
  uint64_t TrainSize() { return std::uniform_int_distribution<uint64_t>(10, 1000)(rng_); }

 private:
  size_t floats_;
  std::mt19937_64 rng_;
  std::normal_distribution<float> normal_;
};

double Norm(std::span<const float> w) { return std::sqrt(similarity::FusedSquaredNorm(w)); }

double Distance(std::span<const float> a, std::span<const float> b) {
  return std::sqrt(similarity::FusedSquaredDistance(a, b));
}

// The noise scale of trial `t`: 0.01 to about 3, so that peers range from near to far.
double Scale(int t) { return 0.01 * std::pow(1.8, t % 10); }

std::string TrialText(int t) { return "trial " + std::to_string(t + 1); }

Status CheckMetric(const std::string& path, size_t floats, int trials, Draws& draws,
                   std::ostringstream& report, double& seconds) {
  auto metric = LoadScriptMetric(path, floats);
  if (!metric.ok()) return metric.status();
  const similarity::MetricNeeds needs = (*metric)->Needs();
  report << "needs: weights " << (needs.weights ? "yes" : "no") << ", initial "
         << (needs.initial_weights ? "yes" : "no") << ", own_loss "
         << (needs.own_data_loss ? "yes" : "no") << "; symmetric "
         << ((*metric)->Symmetric() ? "yes" : "no") << "\n";
  const Floats initial = draws.Model();
  for (int t = 0; t < trials; ++t) {
    const Floats own = draws.Near(initial, 0.5), peer = draws.Near(own, Scale(t));
    const double loss = 0.1 + Scale(t);  // a loss that grows with the peer's distance
    similarity::MetricInput input{
        own, peer, initial, [loss](std::span<const float>) -> Result<double> { return loss; }, {}};
    const auto start = Clock::now();
    Result<double> score = (*metric)->Score(input);
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (!score.ok()) return score.status().WithContext(TrialText(t));
    report << TrialText(t) << ": peer at distance " << Distance(own, peer);
    if (needs.own_data_loss) report << ", own_loss " << loss;
    report << ": score " << *score << "\n";
    if (!(*metric)->Symmetric()) continue;
    Result<double> swapped = (*metric)->Score({peer, own, initial, input.own_data_loss, {}});
    if (!swapped.ok()) return swapped.status().WithContext(TrialText(t) + ", own and peer swapped");
    if (std::abs(*swapped - *score) > 1e-6 * std::max(1.0, std::abs(*score))) {
      return Status::InvalidArgument(path + ": symmetric = True, but " + TrialText(t) + " scores " +
                                     std::to_string(*score) + " and, swapped, " +
                                     std::to_string(*swapped));
    }
  }
  return Status::Ok();
}

// "norm N (inputs' norms A to B), distance D from own".
std::string ModelText(std::span<const float> result, std::span<const float> own,
                      const std::vector<Floats>& others) {
  double low = Norm(own), high = low;
  for (const Floats& o : others) {
    low = std::min(low, Norm(o));
    high = std::max(high, Norm(o));
  }
  std::ostringstream text;
  text << "norm " << Norm(result) << " (inputs' norms " << low << " to " << high << "), distance "
       << Distance(result, own) << " from own";
  return text.str();
}

Status CheckMerge(const std::string& path, size_t floats, int trials, Draws& draws,
                  std::ostringstream& report, double& seconds) {
  auto rule = LoadScriptMergeRule(path, {}, floats);
  if (!rule.ok()) return rule.status();
  report << "coefficients: FedAvg's, from random training-set sizes\n";
  for (int t = 0; t < trials; ++t) {
    const Floats own = draws.Model();
    std::vector<Floats> models;
    for (int k = 0; k < 1 + t % 5; ++k) models.push_back(draws.Near(own, Scale(t)));
    std::vector<training::MergeInput> peers;
    for (const Floats& m : models) peers.push_back({m, draws.TrainSize(), 0});
    Floats out(floats);
    const auto start = Clock::now();
    const Status merged = (*rule)->Merge({own, draws.TrainSize(), 0}, peers, out);
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (!merged.ok()) return merged.WithContext(TrialText(t));
    report << TrialText(t) << ": " << peers.size() << (peers.size() == 1 ? " peer" : " peers")
           << ": merged model " << ModelText(out, own, models) << "\n";
  }
  return Status::Ok();
}

Status CheckAttack(const std::string& path, size_t floats, int trials, Draws& draws,
                   std::ostringstream& report, double& seconds) {
  auto attack = LoadScriptAttack(path, floats);
  if (!attack.ok()) return attack.status();
  for (int t = 0; t < trials; ++t) {
    const Floats own = draws.Model();
    std::vector<Floats> models;
    for (int k = 0; k < t % 4; ++k) models.push_back(draws.Near(own, Scale(t)));
    const std::vector<std::span<const float>> fetched(models.begin(), models.end());
    const auto start = Clock::now();
    Result<Floats> served = (*attack)->Served(own, fetched);
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (!served.ok()) return served.status().WithContext(TrialText(t));
    report << TrialText(t) << ": " << fetched.size() << " fetched: served model "
           << ModelText(*served, own, models) << "\n";
  }
  return Status::Ok();
}

}  // namespace

std::string PlugInPointName(PlugInKind kind) {
  switch (kind) {
    case PlugInKind::kMetric:
      return "a similarity metric ([learning] metric = \"torchscript\", metric_path)";
    case PlugInKind::kMerge:
      return "a merge rule ([learning] robust = \"torchscript\", merge_path)";
    case PlugInKind::kAttack:
      return "an attack ([attack] kind = \"torchscript\", attack_path)";
  }
  return "";
}

Result<PlugInKind> PlugInKindOf(const std::string& path) {
  auto module = internal::ScriptModule::Load(path);
  if (!module.ok()) return module.status();
  const std::vector<std::string> types = (*module)->ArgumentTypes();
  using Types = std::vector<std::string>;
  if (types == Types{"Tensor", "Tensor", "Tensor"} ||
      types == Types{"Tensor", "Tensor", "Tensor", "float"}) {
    return PlugInKind::kMetric;
  }
  if (types == Types{"Tensor", "List[Tensor]", "Tensor"}) return PlugInKind::kMerge;
  if (types == Types{"Tensor", "List[Tensor]"}) return PlugInKind::kAttack;
  return Status::InvalidArgument(
      path + ": forward is " + (*module)->Signature() +
      ", which is no plug-in's: a metric's is forward(self, own: Tensor, peer: Tensor, initial: "
      "Tensor[, own_loss: float]) -> float, a merge rule's forward(self, own: Tensor, peers: "
      "List[Tensor], coefficients: Tensor) -> Tensor, an attack's forward(self, own: Tensor, "
      "fetched: List[Tensor]) -> Tensor");
}

Result<std::string> CheckPlugIn(const std::string& path, size_t floats, int trials, uint64_t seed) {
  Result<PlugInKind> kind = PlugInKindOf(path);
  if (!kind.ok()) return kind.status();
  std::ostringstream report;
  report << path << ": " << PlugInPointName(*kind) << "\n";
  Draws draws(floats, seed);
  double seconds = 0;
  Status checked;
  switch (*kind) {
    case PlugInKind::kMetric:
      checked = CheckMetric(path, floats, trials, draws, report, seconds);
      break;
    case PlugInKind::kMerge:
      checked = CheckMerge(path, floats, trials, draws, report, seconds);
      break;
    case PlugInKind::kAttack:
      checked = CheckAttack(path, floats, trials, draws, report, seconds);
      break;
  }
  if (!checked.ok()) return checked;
  report << "ok: " << trials << " trials on models of " << floats << " floats, "
         << 1e6 * seconds / std::max(1, trials) << " us per call\n";
  return report.str();
}

}  // namespace meshlearn::plugins
