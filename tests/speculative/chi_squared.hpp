// The chi-squared goodness-of-fit test, written out: the statistic, and its p-value from
// the regularized upper incomplete gamma function Q(k/2, x/2) (a series below a + 1, a
// continued fraction above, as in Numerical Recipes ch. 6.2).
#pragma once

#include <cmath>
#include <stdexcept>
#include <vector>

namespace edgerun::test {

inline double chi_squared_statistic(const std::vector<double>& observed, const std::vector<double>& expected) {
    double sum = 0;
    for (size_t i = 0; i < observed.size(); ++i) sum += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
    return sum;
}

// Q(a, x) = Gamma(a, x) / Gamma(a).
inline double upper_regularized_gamma(double a, double x) {
    if (x <= 0) return 1.0;
    const double log_prefix = -x + a * std::log(x) - std::lgamma(a);
    if (x < a + 1) {
        double term = 1.0 / a, sum = term;
        for (int n = 1; n < 1000 && std::fabs(term) > std::fabs(sum) * 1e-16; ++n) {
            term *= x / (a + n);
            sum += term;
        }
        return 1.0 - sum * std::exp(log_prefix);
    }
    // Lentz's method for the continued fraction of Q.
    const double tiny = 1e-300;
    double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
    for (int i = 1; i < 1000; ++i) {
        const double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (std::fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        const double delta = d * c;
        h *= delta;
        if (std::fabs(delta - 1) < 1e-16) break;
    }
    return std::exp(log_prefix) * h;
}

// P(X >= statistic) for X chi-squared with `dof` degrees of freedom.
inline double chi_squared_p_value(double statistic, int dof) {
    if (dof < 1) throw std::invalid_argument("chi-squared needs at least one degree of freedom");
    return upper_regularized_gamma(dof / 2.0, statistic / 2.0);
}

}  // namespace edgerun::test
