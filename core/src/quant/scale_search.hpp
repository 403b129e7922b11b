// The searches every quantizer is built from: find the scale (and offset) that makes a
// group of values, rounded to a grid of integer levels, closest to the originals in
// squared error. Internal to the quantizers.
#pragma once

#include <cstdint>
#include <cstring>

namespace edgerun::quant::detail {

// Round to nearest (ties to even) for |v| < 2^22; callers clamp first. Written with the
// float magic-number trick so loops over it vectorise.
inline int nearest_int(float v) {
    const float shifted = v + 12582912.f;  // 1.5 * 2^23: the integer lands in the low bits
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007FFFFF) - 0x00400000;
}

// Two selects one after the other rather than nested: the same value for every v (NaN
// included) when lo <= hi, and GCC vectorises loops over it (the nested form it did not).
inline int clamp_level(float v, int lo, int hi) {
    float c = v < float(lo) ? float(lo) : v;
    c = c > float(hi) ? float(hi) : c;
    return nearest_int(c);
}

// Symmetric grid x ≈ d * q, q in [qmin, qmax] (qmin < 0 < qmax), minimising the squared
// error weighted by `w` (nullptr: all weights 1). Returns d (may be negative: the sign is
// chosen so the largest magnitude lands on the longer side) and writes q. All-zero input
// gives d = 0 and q = 0.
float fit_symmetric(const float* x, int n, int qmin, int qmax, int8_t* q, const float* w = nullptr);

// Weighted squared error of x against d * clamp(round(x / d)) and the levels that achieve it.
float symmetric_error(const float* x, int n, float d, int qmin, int qmax, int8_t* q, const float* w = nullptr);

// Affine grid x ≈ a * q + c, q in [0, nmax], a >= 0. With `offset_nonpositive` the
// offset is held at c <= 0 (K-quants store it as a subtracted non-negative minimum).
struct AffineFit {
    float scale = 0;   // a
    float offset = 0;  // c
    float error = 0;   // squared error of the fit before any rounding of a and c
};
AffineFit fit_affine(const float* x, int n, int nmax, bool offset_nonpositive, uint8_t* q);

// Squared error of x against a * clamp(round((x - c) / a)) + c, and those levels.
float affine_error(const float* x, int n, float a, float c, int nmax, uint8_t* q);

// The errors of several grids at once, error[g] being symmetric_error(x, n, d[g], qmin,
// qmax) or affine_error(x, n, a[g], c[g], nmax), bit for bit: each sum adds its terms in
// the order of the values, and the loop over the grids vectorises. The K-quants' searches
// of integer scales spend most of their time here. Unweighted; n <= 64.
inline constexpr int kSymmetricGrids = 4, kAffineGrids = 16;
void symmetric_errors(const float* x, int n, const float* d, int qmin, int qmax, float* error);
void affine_errors(const float* x, int n, const float* a, const float* c, int nmax, float* error);

}  // namespace edgerun::quant::detail
