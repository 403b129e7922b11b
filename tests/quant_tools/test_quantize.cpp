// Quantize-then-dequantize error bounds for every target type, against the decoder the
// backends use (blocks.hpp), and the edge cases a real tensor can hold.
#include <doctest/doctest.h>

#include <edgerun/dtype.hpp>
#include <edgerun/quant/blocks.hpp>
#include <edgerun/quant/quantize.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace edgerun;
using namespace edgerun::quant;

namespace {

std::vector<float> gaussian(size_t n, float sigma, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, sigma);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

// Gaussian with a log-normal scale per value: heavier tails, like trained weights.
std::vector<float> heavy_tailed(size_t n, float sigma, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> v(n);
    for (float& x : v) x = sigma * normal(rng) * std::exp(0.5f * normal(rng));
    return v;
}

std::vector<float> round_trip(DType type, const std::vector<float>& x, int64_t n_per_row) {
    const int64_t rows = int64_t(x.size()) / n_per_row;
    std::vector<uint8_t> blocks(*row_bytes(int32_t(type), n_per_row) * rows);
    REQUIRE(quantize_rows(int32_t(type), x.data(), blocks.data(), rows, n_per_row));
    std::vector<float> y(x.size());
    REQUIRE(dequantize_row(int32_t(type), blocks.data(), y.data(), int64_t(x.size())));
    return y;
}

double rms(const std::vector<float>& x) {
    double s = 0;
    for (float v : x) s += double(v) * v;
    return std::sqrt(s / double(x.size()));
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    return std::sqrt(s / double(a.size()));
}

bool all_finite(const std::vector<float>& v) {
    for (float x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

const DType kTargets[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                          DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16, DType::BF16};

// Relative RMSE (error / signal RMS) of Gaussian weights each type must stay under.
// Derived from the error of a uniform quantizer with the type's levels per block, plus
// about 5% for the quantized scales; a max/min quantizer lands above most of them.
double gaussian_bound(DType type) {
    switch (type) {
        case DType::Q4_0: return 0.084;
        case DType::Q4_1: return 0.073;
        case DType::Q5_0: return 0.042;
        case DType::Q5_1: return 0.036;
        case DType::Q8_0: return 0.0052;
        case DType::Q4_K: return 0.072;
        case DType::Q5_K: return 0.0357;
        case DType::Q6_K: return 0.0179;
        case DType::F16: return 0.0003;
        case DType::BF16: return 0.0023;
        default: return 0;
    }
}

}  // namespace

TEST_CASE("every target type round-trips Gaussian weights within its error bound") {
    const auto x = gaussian(256 * 1024, 0.02f, 1);
    for (DType type : kTargets) {
        CAPTURE(dtype_name(type));
        const auto y = round_trip(type, x, 1024);
        const double relative = rmse(x, y) / rms(x);
        MESSAGE(dtype_name(type), " relative RMSE ", relative);
        CHECK(relative < gaussian_bound(type));
        CHECK(relative > 0);
    }
}

TEST_CASE("heavy-tailed weights: error grows with the spread but stays bounded") {
    const auto x = heavy_tailed(128 * 1024, 0.02f, 2);
    for (DType type : kTargets) {
        CAPTURE(dtype_name(type));
        const auto y = round_trip(type, x, 1024);
        CHECK(all_finite(y));
        CHECK(rmse(x, y) / rms(x) < 1.6 * gaussian_bound(type));
    }
}

namespace {

// The weights each symmetric type's search minimises with (see quantize_legacy.cpp):
// |x| + the block's RMS for Q4_0 and Q5_0, all ones for Q8_0.
std::vector<double> error_weights(const float* x, bool magnitude_weighted) {
    double sum_sq = 0;
    for (int i = 0; i < 32; ++i) sum_sq += double(x[i]) * x[i];
    std::vector<double> w(32, 1.0);
    if (magnitude_weighted)
        for (int i = 0; i < 32; ++i) w[size_t(i)] = std::fabs(x[i]) + std::sqrt(sum_sq / 32);
    return w;
}

// The naive symmetric choice the search must beat: largest magnitude on the long end.
double naive_symmetric_error(const float* x, const std::vector<double>& w, int qmin, int qmax) {
    float amax = 0, extreme = 0;
    for (int i = 0; i < 32; ++i)
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), extreme = x[i];
    const float d = fp16_to_fp32(fp32_to_fp16(extreme / float(qmin)));
    double error = 0;
    for (int i = 0; i < 32; ++i) {
        float q = d != 0 ? std::nearbyint(x[i] / d) : 0.f;
        q = std::fmin(std::fmax(q, float(qmin)), float(qmax));
        error += w[size_t(i)] * (x[i] - d * q) * (x[i] - d * q);
    }
    return error;
}

}  // namespace

TEST_CASE("symmetric types beat the max-magnitude scale on every block") {
    const auto x = heavy_tailed(32 * 4096, 1.f, 3);
    struct Case {
        DType type;
        int qmin, qmax;
        bool weighted;
        double plain_ratio;  // the most our plain squared error may be of the naive one's
    };
    for (Case c : {Case{DType::Q4_0, -8, 7, true, 0.97}, Case{DType::Q5_0, -16, 15, true, 0.97},
                   Case{DType::Q8_0, -127, 127, false, 0.95}}) {
        CAPTURE(dtype_name(c.type));
        const auto y = round_trip(c.type, x, 32 * 64);
        double ours_total = 0, naive_total = 0;
        int worse = 0;
        for (size_t b = 0; b < x.size() / 32; ++b) {
            const auto w = error_weights(&x[32 * b], c.weighted);
            double ours = 0;
            for (int i = 0; i < 32; ++i)
                ours += w[size_t(i)] * (x[32 * b + i] - y[32 * b + i]) * (x[32 * b + i] - y[32 * b + i]);
            const double naive = naive_symmetric_error(&x[32 * b], w, c.qmin, c.qmax);
            // Both are rounded through an fp16 scale; allow that much noise per block.
            worse += ours > naive * 1.002 + 1e-12;
            const std::vector<double> ones(32, 1.0);
            double plain = 0;
            for (int i = 0; i < 32; ++i) plain += (x[32 * b + i] - y[32 * b + i]) * (x[32 * b + i] - y[32 * b + i]);
            ours_total += plain;
            naive_total += naive_symmetric_error(&x[32 * b], ones, c.qmin, c.qmax);
        }
        CHECK(worse == 0);
        MESSAGE(dtype_name(c.type), " RMSE vs naive ", std::sqrt(ours_total / naive_total));
        CHECK(ours_total < c.plain_ratio * naive_total);
    }
}

TEST_CASE("values already on a type's grid come back exactly") {
    std::mt19937 rng(4);
    struct Case {
        DType type;
        int qmin, qmax, group;
    };
    for (Case c : {Case{DType::Q4_0, -8, 7, 32}, Case{DType::Q5_0, -16, 15, 32}, Case{DType::Q8_0, -127, 127, 32}}) {
        CAPTURE(dtype_name(c.type));
        std::vector<float> x(32 * 64);
        std::uniform_int_distribution<int> level(c.qmin, c.qmax);
        for (size_t b = 0; b < x.size() / 32; ++b) {
            const float d = fp16_to_fp32(fp32_to_fp16(0.001f * float(1 + b % 7)));
            for (int i = 0; i < 32; ++i) x[32 * b + i] = d * float(level(rng));
            x[32 * b + b % 32] = d * float(b % 2 ? c.qmin : c.qmax);  // the full range in use
        }
        const auto y = round_trip(c.type, x, 32 * 64);
        CHECK(rmse(x, y) == 0.0);
    }
    // K-quants: quantizing decoded values again adds much less error than the first pass
    // (their two-level scales are not recovered exactly).
    for (DType type : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        CAPTURE(dtype_name(type));
        const auto x = gaussian(256 * 64, 0.02f, 5);
        const auto once = round_trip(type, x, 256 * 16);
        const auto twice = round_trip(type, once, 256 * 16);
        MESSAGE(dtype_name(type), " second pass / first pass ", rmse(once, twice) / rmse(x, once));
        CHECK(rmse(once, twice) < 0.4 * rmse(x, once));
    }
}

TEST_CASE("edge-case blocks decode finite and sensible") {
    for (DType type : kTargets) {
        CAPTURE(dtype_name(type));
        const int64_t n = 512;
        SUBCASE("zeros stay exactly zero") {
            const std::vector<float> x(n, 0.f);
            CHECK(rmse(x, round_trip(type, x, n)) == 0.0);
        }
        SUBCASE("a constant block") {
            const std::vector<float> x(n, -0.75f);
            const auto y = round_trip(type, x, n);
            CHECK(rmse(x, y) < 0.01 * 0.75);
        }
        SUBCASE("one outlier a thousand times the rest") {
            auto x = gaussian(n, 0.01f, 6);
            x[77] = 10.f;
            const auto y = round_trip(type, x, n);
            CHECK(all_finite(y));
            CHECK(std::fabs(y[77] - 10.f) < 0.1f);
        }
        SUBCASE("tiny values underflow to zero or stay tiny, never blow up") {
            auto x = gaussian(n, 1e-9f, 7);
            const auto y = round_trip(type, x, n);
            CHECK(all_finite(y));
            CHECK(rmse(x, y) <= 1.01 * rms(x));
        }
        SUBCASE("values past fp16's range clip instead of turning infinite") {
            auto x = gaussian(n, 1.f, 8);
            x[3] = 1e9f;
            const auto y = round_trip(type, x, n);
            if (type == DType::BF16) {
                CHECK(all_finite(y));
            } else if (type != DType::F16) {
                CHECK(all_finite(y));
                CHECK(y[3] > 1e4f);
            }
        }
    }
}

TEST_CASE("output does not depend on how rows are split") {
    const auto x = heavy_tailed(8 * 768, 0.05f, 9);
    for (DType type : {DType::Q4_0, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
        CAPTURE(dtype_name(type));
        const uint64_t row = *row_bytes(int32_t(type), 768);
        std::vector<uint8_t> whole(row * 8), pieces(row * 8);
        REQUIRE(quantize_rows(int32_t(type), x.data(), whole.data(), 8, 768));
        for (int r = 0; r < 8; ++r) REQUIRE(quantize_rows(int32_t(type), &x[768 * r], &pieces[row * r], 1, 768));
        CHECK(whole == pieces);
    }
}

TEST_CASE("types without a quantizer are refused") {
    for (DType type : {DType::Q2_K, DType::Q3_K, DType::Q8_K, DType::IQ4_XS, DType::I32}) {
        CAPTURE(dtype_name(type));
        CHECK_FALSE(can_quantize(int32_t(type)));
        float x[256] = {};
        uint8_t out[1024];
        CHECK_FALSE(quantize_rows(int32_t(type), x, out, 1, 256));
    }
    for (DType type : kTargets) CHECK(can_quantize(int32_t(type)));
}
