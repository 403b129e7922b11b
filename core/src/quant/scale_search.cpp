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
    float best_num = 0, best_den = 1, best_t = float(qmin) / extreme;
    for (int k = -10; k <= 20; ++k) {
        const float t = (float(qmin) - 0.1f * float(k)) / extreme;
        float sxq = 0, sqq = 0;
        for (int i = 0; i < n; ++i) {
            const float l = float(clamp_level(t * x[i], qmin, qmax));
            sxq += w[i] * x[i] * l;
            sqq += w[i] * l * l;
        }
        if (sqq > 0 && sxq * sxq * best_den > best_num * sqq) {
            best_num = sxq * sxq;
            best_den = sqq;
            best_t = t;
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

    uint8_t levels[64];
    for (int k = -5; k <= 5; ++k) {
        const float t = (float(nmax) + 0.2f * float(k)) / (hi - lo);
        float sl = 0, sl2 = 0, sxl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_level(t * (x[i] - lo), 0, nmax);
            levels[i] = uint8_t(l);
            sl += float(l);
            sl2 += float(l) * float(l);
            sxl += x[i] * float(l);
        }
        float a = 0, c = 0;
        const float error = solve_affine(s, sl, sl2, sxl, offset_nonpositive, a, c);
        if (error < best.error && a > 0) {
            best = {a, c, error};
            for (int i = 0; i < n; ++i) q[i] = levels[i];
        }
    }
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
