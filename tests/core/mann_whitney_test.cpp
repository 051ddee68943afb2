// The Mann-Whitney U test against hand-computed values (formulas in core/compare/mann_whitney.hpp).
#include "core/compare/mann_whitney.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"

namespace decodebench {
namespace {

TEST(MannWhitney, CompleteSeparationOfThreeAndThree) {
  // Pooled ranks: x = {1,2,3} → 1,2,3, R_x = 6, U = 6 − 3·4/2 = 0; E[U] = 4.5;
  // σ² = 3·3/12 · 7 = 5.25 (no ties); z = −(4.5 − 0.5)/√5.25 = −1.7457431218879391;
  // p = erfc(1.7457431218879391/√2) = 0.0808555983700523.
  const std::vector<double> x = {1, 2, 3}, y = {4, 5, 6};
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_DOUBLE_EQ(r.mean, 4.5);
  EXPECT_NEAR(r.sigma, std::sqrt(5.25), 1e-12);
  EXPECT_NEAR(r.z, -1.7457431218879391, 1e-12);
  EXPECT_NEAR(r.p_value, 0.0808555983700523, 1e-12);
  // The smallest p three against three can reach is above 0.05: never significant.
  EXPECT_GT(r.p_value, 0.05);
}

TEST(MannWhitney, SmallestPValueIsThatOfCompleteSeparation) {
  // z = (n1·n2/2 − ½) / √(n1·n2·(n1 + n2 + 1)/12); p = erfc(z/√2). 1 vs 1: z = 0, p = 1;
  // 2 vs 2: z = 1.5/√(5/3); 4 vs 4: z = 7.5/√12 (values from Python's math.erfc).
  EXPECT_DOUBLE_EQ(smallest_p_value(1, 1), 1.0);
  EXPECT_NEAR(smallest_p_value(2, 2), 0.24527811680677286, 1e-12);
  EXPECT_NEAR(smallest_p_value(3, 3), 0.0808555983700523, 1e-12);
  EXPECT_NEAR(smallest_p_value(4, 4), 0.03038282197657751, 1e-12);
  EXPECT_NEAR(smallest_p_value(1, 20), 0.11667744915847067, 1e-12);
  EXPECT_NEAR(smallest_p_value(5, 2), 0.08136112923407551, 1e-12);
  // It is what the test itself returns for fully separated samples of those sizes.
  for (int n1 : {1, 2, 3, 5, 9}) {
    for (int n2 : {1, 2, 4, 7}) {
      std::vector<double> x, y;
      for (int i = 0; i < n1; ++i) x.push_back(i);
      for (int j = 0; j < n2; ++j) y.push_back(100 + j);
      EXPECT_NEAR(smallest_p_value(n1, n2), mann_whitney_u(x, y).p_value, 1e-12) << n1 << " " << n2;
    }
  }
  EXPECT_THROW((void)smallest_p_value(0, 3), Error);
}

TEST(MannWhitney, TiesUseMidRanksAndTheTieCorrection) {
  // Pooled sorted: 1x 2x 2x 2y 3x 3y 4y 5y → ranks 1, 3, 3, 3, 5.5, 5.5, 7, 8.
  // R_x = 1 + 3 + 3 + 5.5 = 12.5, U = 12.5 − 10 = 2.5 (pairs: 0 + ½ + ½ + 1½).
  // Ties: t = 3 and t = 2 → Σ(t³ − t) = 24 + 6 = 30; N = 8;
  // σ² = 16/12 · (9 − 30/56) = 11.285714285714285; z = −(8 − 2.5 − 0.5)/σ = −1.4883513944689681;
  // p = 0.13665824773814753.
  const std::vector<double> x = {1, 2, 2, 3}, y = {2, 3, 4, 5};
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.u, 2.5);
  EXPECT_DOUBLE_EQ(r.mean, 8.0);
  EXPECT_NEAR(r.sigma * r.sigma, 11.285714285714285, 1e-12);
  EXPECT_NEAR(r.z, -1.4883513944689681, 1e-12);
  EXPECT_NEAR(r.p_value, 0.13665824773814753, 1e-12);
}

TEST(MannWhitney, MatchesTheScipyDocumentationExample) {
  // scipy.stats.mannwhitneyu documentation: males = [19, 22, 16, 29, 24], females =
  // [20, 11, 17, 12]; U1 = 17 and, with method="asymptotic", p = 0.11134688653314041.
  // By hand: R_x = 32, U = 32 − 15 = 17, σ² = 20/12 · 10 = 16.667, z = 6.5/4.0825 = 1.5922.
  const std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  const MannWhitney r = mann_whitney_u(males, females);
  EXPECT_DOUBLE_EQ(r.u, 17.0);
  EXPECT_NEAR(r.z, 1.5921683328090657, 1e-12);
  EXPECT_NEAR(r.p_value, 0.11134688653314041, 1e-12);
}

TEST(MannWhitney, SwappingTheSamplesMirrorsUAndKeepsP) {
  const std::vector<double> x = {19, 22, 16, 29, 24}, y = {20, 11, 17, 12};
  const MannWhitney a = mann_whitney_u(x, y);
  const MannWhitney b = mann_whitney_u(y, x);
  EXPECT_DOUBLE_EQ(a.u + b.u, 5.0 * 4.0);
  EXPECT_DOUBLE_EQ(a.z, -b.z);
  EXPECT_DOUBLE_EQ(a.p_value, b.p_value);
}

TEST(MannWhitney, IdenticalSamplesGiveNoEvidence) {
  const std::vector<double> x = {5, 1, 4, 2, 3};
  const MannWhitney r = mann_whitney_u(x, x);
  EXPECT_DOUBLE_EQ(r.u, 12.5);  // n1·n2/2
  EXPECT_DOUBLE_EQ(r.z, 0.0);   // |U − μ| − ½ clamps to 0
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);
  // Every value equal: σ = 0, p = 1 rather than a division by zero.
  const std::vector<double> flat = {7, 7, 7};
  const MannWhitney f = mann_whitney_u(flat, flat);
  EXPECT_DOUBLE_EQ(f.sigma, 0.0);
  EXPECT_DOUBLE_EQ(f.p_value, 1.0);
}

TEST(MannWhitney, LargeShiftIsHighlySignificant) {
  std::vector<double> x, y;
  for (int i = 0; i < 64; ++i) {
    y.push_back(1000 + i);
    x.push_back(1100 + i);  // every x above every y: U = 64·64
  }
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.u, 4096.0);
  // z = (2048 − 0.5) / √(64·64·129/12) = 2047.5 / 209.838 = 9.7575.
  EXPECT_NEAR(r.z, 2047.5 / std::sqrt(64.0 * 64.0 * 129.0 / 12.0), 1e-9);
  EXPECT_LT(r.p_value, 1e-20);
}

TEST(MannWhitney, EmptySampleIsAnError) {
  const std::vector<double> x = {1, 2}, none;
  try {
    (void)mann_whitney_u(x, none);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

}  // namespace
}  // namespace decodebench
