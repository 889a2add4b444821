// The RDP accountant of the sampled Gaussian mechanism against figures published with other
// implementations of the same analysis (Mironov, Talwar and Zhang 2019), each to at least 2
// significant digits, plus the properties a user relies on (composition, monotonicity).

#include "training/rdp_accountant.h"

#include <gtest/gtest.h>

#include <cmath>

namespace meshlearn::training {
namespace {

// Relative agreement to 2 significant digits (well inside half a unit in the second digit).
void ExpectTwoDigits(double measured, double published) {
  EXPECT_NEAR(measured, published, 0.005 * std::abs(published)) << "published " << published;
}

double ClassicEpsilon(double q, double sigma, int64_t steps, double delta) {
  RdpAccountant accountant;
  EXPECT_TRUE(accountant.AddSteps(q, sigma, steps).ok());
  return accountant.Epsilon(delta, RdpConversion::kClassic);
}

// TensorFlow Privacy, tutorials/README.md, "Select Parameters" table (MNIST, 60,000 examples,
// batch 256, δ = 1e-5; mnist_dpsgd_tutorial.py takes epochs × (60000 // 256) steps; the
// conversion of that release is Mironov 2017's): σ 1.12 / 60 epochs -> ε 2.92, σ 0.6 / 30
// epochs -> ε 9.74, σ 1.2 / 10 epochs -> ε 1.20.
TEST(RdpAccountant, MatchesTensorFlowPrivacyTutorialTable) {
  const double q = 256.0 / 60000;
  const int64_t steps_per_epoch = 60000 / 256;
  ExpectTwoDigits(ClassicEpsilon(q, 1.12, 60 * steps_per_epoch, 1e-5), 2.92);
  ExpectTwoDigits(ClassicEpsilon(q, 0.6, 30 * steps_per_epoch, 1e-5), 9.74);
  ExpectTwoDigits(ClassicEpsilon(q, 1.2, 10 * steps_per_epoch, 1e-5), 1.20);
}

// Abadi et al. 2016, "Deep Learning with Differential Privacy", Section 3.1: with q = 0.01,
// σ = 4, δ = 1e-5 and T = 10000 steps the moments accountant gives ε ≈ 1.26.
TEST(RdpAccountant, MatchesAbadiEtAlMomentsAccountant) {
  ExpectTwoDigits(ClassicEpsilon(0.01, 4, 10000, 1e-5), 1.26);
}

// Opacus, opacus/tests/accountants_test.py (improved conversion, Balle et al. 2020):
// test_rdp_accountant, σ 1.5, q 0.04, 2250 steps, δ 1e-5 -> ε 7.32911117143;
// test_get_noise_multiplier_rdp_steps, ε 8, δ 1e-5, q 0.04, 2000 steps -> σ 1.3562.
TEST(RdpAccountant, MatchesOpacusAccountantTests) {
  RdpAccountant accountant;
  ASSERT_TRUE(accountant.AddSteps(0.04, 1.5, 2250).ok());
  EXPECT_NEAR(accountant.Epsilon(1e-5), 7.32911117143, 1e-4);
  Result<double> sigma = NoiseMultiplierFor(8, 1e-5, 0.04, 2000);
  ASSERT_TRUE(sigma.ok()) << sigma.status().ToString();
  EXPECT_NEAR(*sigma, 1.3562, 1e-3);
  EXPECT_LE(DpSgdEpsilon(0.04, *sigma, 2000, 1e-5), 8.0);
}

TEST(RdpAccountant, ComposesStepsAdditively) {
  RdpAccountant split;
  ASSERT_TRUE(split.AddSteps(0.02, 1.1, 300).ok());
  ASSERT_TRUE(split.AddSteps(0.02, 1.1, 700).ok());
  EXPECT_EQ(split.steps(), 1000);
  EXPECT_DOUBLE_EQ(split.Epsilon(1e-5), DpSgdEpsilon(0.02, 1.1, 1000, 1e-5));
}

TEST(RdpAccountant, EpsilonGrowsWithStepsAndShrinksWithNoise) {
  EXPECT_EQ(RdpAccountant().Epsilon(1e-5), 0);
  EXPECT_LT(DpSgdEpsilon(0.016, 1.0, 100, 1e-5), DpSgdEpsilon(0.016, 1.0, 200, 1e-5));
  EXPECT_GT(DpSgdEpsilon(0.016, 1.0, 100, 1e-5), DpSgdEpsilon(0.016, 2.0, 100, 1e-5));
  // Sampling amplifies privacy: the full batch (q = 1) is the plain Gaussian, α / (2σ²).
  EXPECT_DOUBLE_EQ(SubsampledGaussianRdp(1, 2, 8), 1.0);
  EXPECT_LT(SubsampledGaussianRdp(0.1, 2, 8), 1.0);
  EXPECT_EQ(SubsampledGaussianRdp(0, 2, 8), 0);
}

TEST(RdpAccountant, FractionalAndIntegerOrdersAgreeWhereTheyMeet) {
  // The two series of Mironov et al. 2019 are different formulas; near an integer they must
  // give nearly the same value.
  const double at_integer = SubsampledGaussianRdp(0.01, 1.3, 4);
  EXPECT_NEAR(SubsampledGaussianRdp(0.01, 1.3, 4.0001), at_integer, 1e-3 * at_integer);
  EXPECT_NEAR(SubsampledGaussianRdp(0.01, 1.3, 3.9999), at_integer, 1e-3 * at_integer);
}

TEST(RdpAccountant, RefusesArgumentsOutOfRange) {
  RdpAccountant accountant;
  EXPECT_FALSE(accountant.AddSteps(1.5, 1, 1).ok());
  EXPECT_FALSE(accountant.AddSteps(0.1, 0, 1).ok());
  EXPECT_FALSE(accountant.AddSteps(0.1, 1, -1).ok());
  EXPECT_EQ(accountant.steps(), 0);
  EXPECT_FALSE(NoiseMultiplierFor(0, 1e-5, 0.1, 10).ok());
  EXPECT_FALSE(NoiseMultiplierFor(1, 0, 0.1, 10).ok());
}

}  // namespace
}  // namespace meshlearn::training
