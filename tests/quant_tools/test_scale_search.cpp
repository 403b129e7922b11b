// The batched grid errors of the quantizers' searches (core/src/quant/scale_search.hpp)
// against the one-grid functions they stand for: the same floats, bit for bit, so that the
// K-quants choose the same integer scales whichever way the errors are summed.
#include <doctest/doctest.h>

#include "scale_search.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace edgerun::quant::detail;

namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Blocks of every kind the searches meet: Gaussian, heavy-tailed, zeros, a constant,
// subnormal-small, and one outlier among small values.
std::vector<std::vector<float>> blocks(int n) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<std::vector<float>> out;
    for (int kind = 0; kind < 6; ++kind)
        for (int rep = 0; rep < 20; ++rep) {
            std::vector<float> x(static_cast<size_t>(n));
            for (int i = 0; i < n; ++i) {
                const float v = normal(rng);
                x[size_t(i)] = kind == 0   ? 0.02f * v
                               : kind == 1 ? 0.02f * v * std::exp(2.f * normal(rng))
                               : kind == 2 ? 0.f
                               : kind == 3 ? 0.25f
                               : kind == 4 ? 1e-39f * v
                                           : (i == rep % n ? 3.f : 0.01f * v);
            }
            out.push_back(x);
        }
    return out;
}

}  // namespace

TEST_CASE("symmetric_errors: symmetric_error of each grid, bit for bit") {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> unit(-1.f, 1.f);
    for (const auto& [qmin, qmax] : {std::pair{-32, 31}, std::pair{-8, 7}, std::pair{-128, 127}})
        for (int n : {16, 32})
            for (const auto& x : blocks(n)) {
                float d[kSymmetricGrids], error[kSymmetricGrids];
                for (int g = 0; g < kSymmetricGrids; ++g) d[g] = g == 0 ? 0.f : 0.01f * unit(rng);  // 0, and either sign
                symmetric_errors(x.data(), n, d, qmin, qmax, error);
                int8_t levels[64];
                for (int g = 0; g < kSymmetricGrids; ++g) {
                    const float one = symmetric_error(x.data(), n, d[g], qmin, qmax, levels);
                    CHECK_MESSAGE(same_bits(error[g], one), "d=", d[g], " batched ", error[g], " one ", one);
                }
            }
}

TEST_CASE("affine_errors: affine_error of each grid, bit for bit") {
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    for (int nmax : {15, 31, 3})
        for (int n : {16, 32})
            for (const auto& x : blocks(n)) {
                float a[kAffineGrids], c[kAffineGrids], error[kAffineGrids];
                for (int g = 0; g < kAffineGrids; ++g) {
                    a[g] = g % 5 == 0 ? 0.f : 0.005f * unit(rng);                       // 0 among them
                    c[g] = g % 7 == 0 ? (g == 0 ? 0.f : -0.f) : -0.05f * unit(rng);   // both zeros too
                }
                affine_errors(x.data(), n, a, c, nmax, error);
                uint8_t levels[64];
                for (int g = 0; g < kAffineGrids; ++g) {
                    const float one = affine_error(x.data(), n, a[g], c[g], nmax, levels);
                    CHECK_MESSAGE(same_bits(error[g], one), "a=", a[g], " c=", c[g], " batched ", error[g], " one ", one);
                }
            }
}
