// The Mann-Whitney U rank test of two independent samples (used by `compare` on per-token times).
#pragma once

#include <cstdint>
#include <span>

namespace decodebench {

/// Result of a two-sided Mann-Whitney U test of samples x (n1 values) and y (n2 values).
struct MannWhitney {
  double u = 0;        ///< U of x: #{(i, j): x_i > y_j} + ½·#{(i, j): x_i = y_j}; in [0, n1·n2]
  double mean = 0;     ///< E[U] under H0: n1·n2 / 2
  double sigma = 0;    ///< tie-corrected standard deviation of U under H0 (0: every value is equal)
  double z = 0;        ///< continuity-corrected z, signed: > 0 when x tends to be larger than y
  double p_value = 1;  ///< two-sided p-value of the normal approximation, in [0, 1]
};

/// Two-sided Mann-Whitney U test (Mann & Whitney 1947, "On a test of whether one of two random
/// variables is stochastically larger than the other", Ann. Math. Statist. 18(1):50-60) with the
/// normal approximation as in Conover, Practical Nonparametric Statistics, 3rd ed., §5.1, and
/// Hollander, Wolfe & Chicken, Nonparametric Statistical Methods, 3rd ed., §4.1:
///   ranks of the pooled sample, ties get their mid-rank; U = R_x − n1(n1 + 1)/2;
///   σ² = n1·n2/12 · [(N + 1) − Σ(t³ − t) / (N(N − 1))], N = n1 + n2, t = size of each tie group;
///   z = sign(U − n1·n2/2) · max(0, |U − n1·n2/2| − ½) / σ (continuity correction);
///   p = erfc(|z| / √2) = 2·(1 − Φ(|z|)).
/// The same as scipy.stats.mannwhitneyu(x, y, method="asymptotic", use_continuity=True).
/// When σ = 0 (all N values equal) z = 0 and p = 1. Values are any unit (only their order counts).
/// Throws decodebench::Error (exit 2) when x or y is empty.
MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y);

/// The smallest two-sided p-value mann_whitney_u returns for samples of n1 and n2 distinct values:
/// that of complete separation (U = 0 or n1·n2), by mann_whitney_u's formulas (Conover, Practical
/// Nonparametric Statistics, 3rd ed., §5.1, without ties): z = (n1·n2/2 − ½) /
/// √(n1·n2·(n1 + n2 + 1)/12), p = erfc(|z| / √2); unitless, in (0, 1]. When it is not below
/// alpha the test cannot find a difference between untied samples, however large: 1 against 1
/// gives 1, 2 against 2 0.245, 3 against 3 0.0809, 4 against 4 0.0304. Tied values shrink σ and
/// can give less (3 tied against 3 tied: 0.0469). Throws decodebench::Error (exit 2) when n1 or
/// n2 is below 1.
double smallest_p_value(int64_t n1, int64_t n2);

}  // namespace decodebench
