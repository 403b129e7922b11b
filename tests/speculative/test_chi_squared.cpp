// The hand-written chi-squared p-value against values it must give.
#include "chi_squared.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace edgerun::test;

TEST_CASE("chi-squared p-values: closed forms and table values") {
    // Two degrees of freedom: P(X >= x) = exp(-x / 2) exactly.
    for (double x : {0.1, 1.0, 3.0, 10.0, 40.0}) CHECK(chi_squared_p_value(x, 2) == doctest::Approx(std::exp(-x / 2)).epsilon(1e-12));
    // One degree of freedom: P(X >= x) = erfc(sqrt(x / 2)).
    for (double x : {0.2, 1.0, 3.84, 12.0}) CHECK(chi_squared_p_value(x, 1) == doctest::Approx(std::erfc(std::sqrt(x / 2))).epsilon(1e-12));
    // Table critical values for 15 degrees of freedom (the 16-outcome test).
    CHECK(chi_squared_p_value(24.996, 15) == doctest::Approx(0.05).epsilon(1e-3));
    CHECK(chi_squared_p_value(30.578, 15) == doctest::Approx(0.01).epsilon(1e-3));
    CHECK(chi_squared_p_value(37.697, 15) == doctest::Approx(0.001).epsilon(1e-3));
    CHECK(chi_squared_p_value(0.0, 15) == 1.0);
    CHECK(chi_squared_statistic({10, 20}, {15, 15}) == doctest::Approx(25.0 / 15 * 2));
}
