// CPU references and test data for the cuda_orin kernel checks (emulated and GPU).
// The references are written from the formulas in double precision and dequantize weights
// with blocks.hpp (tested against gguf elsewhere), never with the kernels' own dequantizers.
#pragma once

#include "kernel_params.hpp"

#include <edgerun/quant/blocks.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace edgerun::cuda_orin::testing {

// Random weights in GGUF layout with realistic structure: uniform quants, per-block
// scales around 1/sqrt(n_cols), minimums that centre the values (as a quantizer's would).
inline std::vector<uint8_t> make_weights(int32_t type, int n_rows, int n_cols, std::mt19937& rng) {
    using namespace quant;
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const float unit = 1.0f / std::sqrt(float(n_cols));
    auto half = [](float f) { return fp32_to_fp16(f); };
    auto scale = [&](float typical) { return half(typical * (0.5f + std::fabs(normal(rng)))); };
    std::vector<uint8_t> out;
    if (const int value_bytes = plain_value_bytes(type)) {
        out.resize(size_t(n_rows) * n_cols * value_bytes);
        for (size_t i = 0; i < size_t(n_rows) * n_cols; ++i) {
            const float v = normal(rng) * unit;
            const uint32_t bits = type == kF32 ? float_to_bits(v) : type == kF16 ? half(v) : float_to_bits(v) >> 16;
            std::memcpy(&out[value_bytes * i], &bits, value_bytes);  // little-endian: the low bytes
        }
        return out;
    }
    const PlaneGeometry g = plane_geometry(type);
    const size_t n_blocks = size_t(n_rows) * (n_cols / g.block_elems);
    out.resize(n_blocks * g.gguf_block_bytes);
    for (uint8_t& b : out) b = uint8_t(byte(rng));
    for (size_t i = 0; i < n_blocks; ++i) {
        uint8_t* b = &out[i * g.gguf_block_bytes];
        auto put = [&](size_t offset, uint16_t v) { std::memcpy(b + offset, &v, 2); };
        switch (type) {
            case kQ4_0: put(0, scale(unit / 4)); break;
            case kQ5_0: put(0, scale(unit / 8)); break;
            case kQ8_0: put(0, scale(unit / 64)); break;
            case kQ5_1: {
                const uint16_t d = scale(unit / 8);
                put(0, d);
                put(2, half(-15.5f * fp16_to_fp32(d)));
                break;
            }
            case kQ2_K: {
                // Sub-block scales 1..10 with minimums that centre the 2-bit quants (mean 1.5).
                const uint16_t d = scale(unit / 8);
                put(80, d);
                put(82, d);
                for (int j = 0; j < 16; ++j) {
                    const int sc = 1 + byte(rng) % 10;
                    b[j] = uint8_t(sc | (int(std::lround(1.5f * float(sc))) << 4));
                }
                break;
            }
            case kQ3_K: put(108, scale(unit / 64)); break;  // random 6-bit scales of both signs
            case kQ4_1: {
                const uint16_t d = scale(unit / 4);
                put(0, d);
                put(2, half(-7.5f * fp16_to_fp32(d)));
                break;
            }
            case kQ4_K:
            case kQ5_K: {
                // Sub-block scales 1..16, dmin = 2d (Q4_K) or 4d (Q5_K), mins that centre.
                const float levels = type == kQ4_K ? 7.5f : 15.5f, dmin_ratio = type == kQ4_K ? 2.0f : 4.0f;
                const uint16_t d = scale(unit / 32);
                put(0, d);
                put(2, half(dmin_ratio * fp16_to_fp32(d)));
                uint8_t sc[8], mn[8];
                for (int j = 0; j < 8; ++j) {
                    sc[j] = uint8_t(1 + byte(rng) % 16);
                    mn[j] = uint8_t(std::lround(sc[j] * levels / dmin_ratio));
                }
                uint8_t* s = b + 4;  // the 12 packed bytes, inverse of q4k_scale_min
                for (int j = 0; j < 4; ++j) {
                    s[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
                    s[j + 4] = uint8_t((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
                    s[j + 8] = uint8_t((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
                }
                break;
            }
            case kQ6_K: {
                for (int j = 0; j < 16; ++j) b[192 + j] = uint8_t(int8_t(1 + byte(rng) % 64));
                put(208, scale(unit / 1024));
                break;
            }
        }
    }
    return out;
}

// Weights dequantized with blocks.hpp, as floats [n_rows][n_cols].
inline std::vector<float> dequantize_weights(int32_t type, const std::vector<uint8_t>& gguf, int n_rows, int n_cols) {
    std::vector<float> w(size_t(n_rows) * n_cols);
    const uint64_t row_bytes = gguf_matrix_bytes(type, 1, n_cols);
    for (int r = 0; r < n_rows; ++r)
        quant::dequantize_row(type, gguf.data() + r * row_bytes, w.data() + size_t(r) * n_cols, n_cols);
    return w;
}

inline std::vector<double> ref_gemv(const std::vector<float>& w, int n_rows, int n_cols, const std::vector<double>& x) {
    std::vector<double> y(n_rows, 0.0);
    for (int r = 0; r < n_rows; ++r)
        for (int c = 0; c < n_cols; ++c) y[r] += double(w[size_t(r) * n_cols + c]) * x[c];
    return y;
}

// The energy of the products a GEMV sums: sum over rows and columns of (w x)^2. For many
// rows of random weights it equals the energy of the result (E[y_r^2] = sum_c (w_rc x_c)^2);
// for a handful of rows, whose sums can cancel to near zero, it is the scale the kernel's
// rounding and quantization noise actually has (nmse's min_energy).
inline double gemv_term_energy(const std::vector<float>& w, int n_rows, int n_cols, const std::vector<double>& x) {
    double energy = 0;
    for (int r = 0; r < n_rows; ++r)
        for (int c = 0; c < n_cols; ++c) {
            const double t = double(w[size_t(r) * n_cols + c]) * x[c];
            energy += t * t;
        }
    return energy;
}

inline std::vector<double> ref_rms_norm(const std::vector<double>& x, const std::vector<float>& weight, double eps) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * weight[i];
    return y;
}

// Rotary embedding of one head in double: pair i turns by
// pos * freq_scale * base^(-2i/n_rot) / factor_i.
inline void ref_rope(double* head, int n_rot, int mode, double base, double freq_scale, const float* factors, int pos) {
    for (int i = 0; i < n_rot / 2; ++i) {
        const double theta = pos * freq_scale * std::pow(base, -2.0 * i / n_rot) / (factors ? factors[i] : 1.0);
        const int a = mode == kRopeNeox ? i : 2 * i, b = mode == kRopeNeox ? i + n_rot / 2 : 2 * i + 1;
        const double x0 = head[a], x1 = head[b];
        head[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
        head[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
}

// softmax(q k^T * scale) v for one query head over kv_len rows of k and v [kv_len][dim].
inline std::vector<double> ref_attention_head(const float* q, const std::vector<float>& k, const std::vector<float>& v,
                                              int kv_len, int dim, double scale) {
    std::vector<double> s(kv_len), out(dim, 0.0);
    double mx = -1e300;
    for (int t = 0; t < kv_len; ++t) {
        double dot = 0;
        for (int d = 0; d < dim; ++d) dot += double(q[d]) * k[size_t(t) * dim + d];
        s[t] = dot * scale;
        mx = std::max(mx, s[t]);
    }
    double denom = 0;
    for (int t = 0; t < kv_len; ++t) {
        const double p = std::exp(s[t] - mx);
        denom += p;
        for (int d = 0; d < dim; ++d) out[d] += p * v[size_t(t) * dim + d];
    }
    for (double& o : out) o = kv_len > 0 ? o / denom : 0.0;  // no keys: zeros, as the kernels write
    return out;
}

// Normalised mean squared error of a result against a reference over a whole vector. The
// energy it normalises by is at least min_energy (gemv_term_energy: a GEMV's rounding
// noise scales with its products, not with a sum that happens to cancel).
template <class A, class B>
double nmse(const A& got, const B& ref, double min_energy = 0) {
    double err = 0, energy = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double e = double(got[i]) - double(ref[i]);
        err += e * e;
        energy += double(ref[i]) * double(ref[i]);
    }
    energy = std::max(energy, min_energy);
    return energy > 0 ? err / energy : err;
}

inline std::vector<float> random_vector(size_t n, std::mt19937& rng, float sigma = 1.0f) {
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> v(n);
    for (float& e : v) e = normal(rng);
    return v;
}

}  // namespace edgerun::cuda_orin::testing
