#include "scale_search.hpp"

#include <cassert>
#include <cmath>

namespace edgerun::quant::detail {

namespace {

// Below this every value of a group is treated as zero: a scale this small would
// underflow fp16 anyway.
constexpr float kTiny = 1e-30f;

}  // namespace

float symmetric_error(const float* x, int n, float d, int qmin, int qmax, int8_t* q, const float* w) {
    float error = 0;
    if (d == 0) {
        for (int i = 0; i < n; ++i) {
            q[i] = 0;
            error += (w ? w[i] : 1.f) * x[i] * x[i];
        }
        return error;
    }
    const float id = 1.f / d;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_level(x[i] * id, qmin, qmax);
        q[i] = int8_t(l);
        const float diff = x[i] - d * float(l);
        error += (w ? w[i] : 1.f) * diff * diff;
    }
    return error;
}

float fit_symmetric(const float* x, int n, int qmin, int qmax, int8_t* q, const float* weights) {
    assert(n <= 64);
    float ones[64];
    if (!weights) {
        for (int i = 0; i < n; ++i) ones[i] = 1.f;
        weights = ones;
    }
    const float* w = weights;
    float amax = 0, extreme = 0;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            extreme = x[i];
        }
    }
    if (amax < kTiny) {
        for (int i = 0; i < n; ++i) q[i] = 0;
        return 0.f;
    }
    // For a fixed set of levels q the best d is sum(wxq)/sum(wq²), leaving an error of
    // sum(wx²) - sum(wxq)²/sum(wq²); so the search maximises sum(wxq)²/sum(wq²). The levels
    // come from inverse scales that put the extreme value anywhere from one level inside
    // the long end of the grid to two levels past it (clipping pays off for outliers).
    // Every candidate's sums at once, value by value: each sum still adds its terms in
    // the order of the values, so the result is the one-candidate-at-a-time loop's, but
    // the loop over candidates vectorises (the search is most of the K-quants' time).
    constexpr int kCandidates = 31, kLanes = 32;
    float t[kLanes], sum_xq[kLanes] = {}, sum_qq[kLanes] = {};
    for (int k = 0; k < kLanes; ++k) t[k] = (float(qmin) - 0.1f * float(k < kCandidates ? k - 10 : 20)) / extreme;
    for (int i = 0; i < n; ++i) {
        const float wx = w[i] * x[i];
        for (int k = 0; k < kLanes; ++k) {
            const float l = float(clamp_level(t[k] * x[i], qmin, qmax));
            sum_xq[k] += wx * l;
            sum_qq[k] += w[i] * l * l;
        }
    }
    float best_num = 0, best_den = 1, best_t = float(qmin) / extreme;
    for (int k = 0; k < kCandidates; ++k) {
        if (sum_qq[k] > 0 && sum_xq[k] * sum_xq[k] * best_den > best_num * sum_qq[k]) {
            best_num = sum_xq[k] * sum_xq[k];
            best_den = sum_qq[k];
            best_t = t[k];
        }
    }
    // Alternate: best levels for the scale, best scale for the levels. Each step can only
    // lower the error, so stop when the levels settle.
    float sxq = 0, sqq = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_level(best_t * x[i], qmin, qmax);
        q[i] = int8_t(l);
        sxq += w[i] * x[i] * float(l);
        sqq += w[i] * float(l) * float(l);
    }
    if (sqq <= 0) return 0.f;
    float d = sxq / sqq;
    int8_t levels[64];
    for (int iter = 0; iter < 4; ++iter) {
        const float id = 1.f / d;
        bool changed = false;
        float nxq = 0, nqq = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_level(x[i] * id, qmin, qmax);
            levels[i] = int8_t(l);
            changed |= levels[i] != q[i];
            nxq += w[i] * x[i] * float(l);
            nqq += w[i] * float(l) * float(l);
        }
        if (!changed || nqq <= 0 || nxq * nxq * sqq <= sxq * sxq * nqq) break;
        for (int i = 0; i < n; ++i) q[i] = levels[i];
        sxq = nxq;
        sqq = nqq;
        d = sxq / sqq;
    }
    return d;
}

float affine_error(const float* x, int n, float a, float c, int nmax, uint8_t* q) {
    float error = 0;
    if (a == 0) {
        for (int i = 0; i < n; ++i) {
            q[i] = 0;
            error += (x[i] - c) * (x[i] - c);
        }
        return error;
    }
    const float ia = 1.f / a;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_level((x[i] - c) * ia, 0, nmax);
        q[i] = uint8_t(l);
        const float diff = x[i] - (a * float(l) + c);
        error += diff * diff;
    }
    return error;
}

// Both are kept from being inlined or specialised (noipa): where the level bounds were
// known at compile time GCC turned the clamp's selects into branches and vectorised
// nothing.
[[gnu::noipa]] void symmetric_errors(const float* x, int n, const float* d, int qmin, int qmax, float* error) {
    float step[kSymmetricGrids], inverse[kSymmetricGrids], sum[kSymmetricGrids] = {};  // local: no aliasing
    for (int g = 0; g < kSymmetricGrids; ++g) {
        step[g] = d[g];
        inverse[g] = 1.f / d[g];  // d == 0: the level is meaningless, 0 * level is 0, as symmetric_error's d == 0
    }
    for (int i = 0; i < n; ++i) {
        const float v = x[i];
        for (int g = 0; g < kSymmetricGrids; ++g) {
            const float diff = v - step[g] * float(clamp_level(v * inverse[g], qmin, qmax));
            sum[g] += diff * diff;
        }
    }
    for (int g = 0; g < kSymmetricGrids; ++g) error[g] = sum[g];
}

[[gnu::noipa]] void affine_errors(const float* x, int n, const float* a, const float* c, int nmax, float* error) {
    float scale[kAffineGrids], offset[kAffineGrids], inverse[kAffineGrids], sum[kAffineGrids] = {};
    for (int g = 0; g < kAffineGrids; ++g) {
        scale[g] = a[g];
        offset[g] = c[g];
        inverse[g] = 1.f / a[g];  // a == 0: as symmetric_errors' d == 0
    }
    for (int i = 0; i < n; ++i) {
        const float v = x[i];
        for (int g = 0; g < kAffineGrids; ++g) {
            const float l = float(clamp_level((v - offset[g]) * inverse[g], 0, nmax));
            const float diff = v - (scale[g] * l + offset[g]);
            sum[g] += diff * diff;
        }
    }
    for (int g = 0; g < kAffineGrids; ++g) error[g] = sum[g];
}

namespace {

struct Sums {
    float n = 0, x = 0, x2 = 0;
};

// Least squares a, c for fixed levels l, holding c <= 0 when asked; returns the error.
float solve_affine(const Sums& s, float sl, float sl2, float sxl, bool offset_nonpositive, float& a,
                   float& c) {
    const float det = s.n * sl2 - sl * sl;
    if (det <= 0) return INFINITY;
    a = (s.n * sxl - s.x * sl) / det;
    c = (sl2 * s.x - sl * sxl) / det;
    if (offset_nonpositive && c > 0) {
        c = 0;
        a = sxl / sl2;
    }
    return s.x2 - 2 * a * sxl - 2 * c * s.x + a * a * sl2 + 2 * a * c * sl + s.n * c * c;
}

}  // namespace

AffineFit fit_affine(const float* x, int n, int nmax, bool offset_nonpositive, uint8_t* q) {
    assert(n <= 64);
    Sums s;
    s.n = float(n);
    float lo = x[0], hi = x[0];
    for (int i = 0; i < n; ++i) {
        lo = std::fmin(lo, x[i]);
        hi = std::fmax(hi, x[i]);
        s.x += x[i];
        s.x2 += x[i] * x[i];
    }
    if (offset_nonpositive && lo > 0) lo = 0;
    if (hi - lo < kTiny) {
        for (int i = 0; i < n; ++i) q[i] = 0;
        return {0.f, lo, 0.f};
    }
    // Start from the plain min/max grid, then try grids a little finer and coarser than
    // it, refitting a and c by least squares for each set of levels.
    AffineFit best;
    best.scale = (hi - lo) / float(nmax);
    best.offset = lo;
    best.error = affine_error(x, n, best.scale, best.offset, nmax, q);

    // Every grid's sums at once, as fit_symmetric does (the same sums, vectorised).
    constexpr int kCandidates = 11, kLanes = 12;
    float t[kLanes], sl[kLanes] = {}, sl2[kLanes] = {}, sxl[kLanes] = {};
    for (int k = 0; k < kLanes; ++k) t[k] = (float(nmax) + 0.2f * float((k < kCandidates ? k : 0) - 5)) / (hi - lo);
    for (int i = 0; i < n; ++i) {
        const float v = x[i] - lo;
        for (int k = 0; k < kLanes; ++k) {
            const float l = float(clamp_level(t[k] * v, 0, nmax));
            sl[k] += l;
            sl2[k] += l * l;
            sxl[k] += x[i] * l;
        }
    }
    int chosen = -1;
    for (int k = 0; k < kCandidates; ++k) {
        float a = 0, c = 0;
        const float error = solve_affine(s, sl[k], sl2[k], sxl[k], offset_nonpositive, a, c);
        if (error < best.error && a > 0) {
            best = {a, c, error};
            chosen = k;
        }
    }
    if (chosen >= 0)
        for (int i = 0; i < n; ++i) q[i] = uint8_t(clamp_level(t[chosen] * (x[i] - lo), 0, nmax));
    uint8_t levels[64];
    // Alternate levels and least-squares fit while the error keeps falling.
    for (int iter = 0; iter < 4; ++iter) {
        const float ia = 1.f / best.scale;
        bool changed = false;
        float sl = 0, sl2 = 0, sxl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_level((x[i] - best.offset) * ia, 0, nmax);
            levels[i] = uint8_t(l);
            changed |= levels[i] != q[i];
            sl += float(l);
            sl2 += float(l) * float(l);
            sxl += x[i] * float(l);
        }
        if (!changed) break;
        float a = 0, c = 0;
        const float error = solve_affine(s, sl, sl2, sxl, offset_nonpositive, a, c);
        if (!(error < best.error) || a <= 0) break;
        best = {a, c, error};
        for (int i = 0; i < n; ++i) q[i] = levels[i];
    }
    if (best.error < 0) best.error = 0;  // rounding in the closed form
    return best;
}

}  // namespace edgerun::quant::detail
