// K-quants: 256-weight super-blocks whose sub-block scales are themselves quantized.
//
// Q4_K / Q5_K: eight sub-blocks of 32, x ≈ d·sc_j·q − dmin·m_j with 6-bit sc_j, m_j.
// Q6_K: sixteen sub-blocks of 16, x ≈ d·s_j·q with int8 s_j.
//
// The plan for both: fit each sub-block on its own (scale search, least squares), then
// pick the fp16 super-scales, then for every sub-block try the integer scales (and
// minimums) on either side of the ideal one, re-rounding the weights for each and keeping
// the pair with the least error. Finally the super-scales are refitted by least squares
// for the chosen integers and kept when that lowers the block's error. The sub-block
// integers are where a naive quantizer loses most: a sub-block whose scale is a tenth of
// the largest one has only ~6 scale steps to choose from.
#include "fp16_store.hpp"
#include "scale_search.hpp"

#include <edgerun/quant/quantize.hpp>

#include <cmath>
#include <cstring>
#include <initializer_list>

namespace edgerun::quant {

using detail::affine_error;
using detail::affine_errors;
using detail::fit_affine;
using detail::fit_symmetric;
using detail::kAffineGrids;
using detail::kSymmetricGrids;
using detail::symmetric_error;
using detail::symmetric_errors;

namespace {

// ------------------------------------------------------------ Q4_K / Q5_K --

struct KPlan {
    uint16_t d = 0, dmin = 0;
    uint8_t sc[8] = {}, m[8] = {};
    uint8_t q[QK_K] = {};
    float error = INFINITY;
};

// The integers from one below floor(v) to one above ceil(v), clamped to [0, hi].
struct IntRange {
    int first, last;
};
IntRange around(float v, int hi) {
    const int lo = int(std::floor(v));
    return {lo - 1 < 0 ? 0 : (lo - 1 > hi ? hi : lo - 1), lo + 2 > hi ? hi : (lo + 2 < 0 ? 0 : lo + 2)};
}

// For fixed super-scales, the best 6-bit scale and minimum of every sub-block near the
// ideal ones (`scale`, `min`), with their levels. Returns the block's squared error.
template <int NMAX>
float choose_sub_block_ints(const float* x, const float* scale, const float* min, KPlan& plan) {
    const float d = fp16_to_fp32(plan.d), dmin = fp16_to_fp32(plan.dmin);
    float total = 0;
    for (int j = 0; j < 8; ++j) {
        // Searching one step further than the two integers bracketing the ideal values
        // pays: rounding the weights again moves the optimum.
        const IntRange sc = d > 0 ? around(scale[j] / d, 63) : IntRange{0, 0};
        const IntRange mn = dmin > 0 ? around(min[j] / dmin, 63) : IntRange{0, 0};
        const int n_min = mn.last - mn.first + 1, n_pairs = (sc.last - sc.first + 1) * n_min;
        // Every pair's error at once (at most 4 x 4 pairs); then the first least one in the
        // order scale, minimum, as trying one pair at a time found it.
        float a[kAffineGrids], c[kAffineGrids], error[kAffineGrids];
        for (int p = 0; p < kAffineGrids; ++p) {
            const int q = p < n_pairs ? p : 0;
            a[p] = d * float(sc.first + q / n_min);
            c[p] = -(dmin * float(mn.first + q % n_min));
        }
        affine_errors(x + 32 * j, 32, a, c, NMAX, error);
        float best = INFINITY;
        for (int p = 0; p < n_pairs; ++p) {
            if (error[p] < best) {
                best = error[p];
                plan.sc[j] = uint8_t(sc.first + p / n_min);
                plan.m[j] = uint8_t(mn.first + p % n_min);
            }
        }
        if (best < INFINITY) affine_error(x + 32 * j, 32, d * float(plan.sc[j]), -(dmin * float(plan.m[j])), NMAX, plan.q + 32 * j);
        total += best;
    }
    return total;
}

// Least-squares d and dmin for the chosen integers: x_i ≈ d·(sc_j q_i) − dmin·m_j is
// linear in the two. False when the system is singular.
bool refit_super_scales(const float* x, const KPlan& plan, float& d, float& dmin) {
    double uu = 0, uv = 0, vv = 0, xu = 0, xv = 0;
    for (int i = 0; i < QK_K; ++i) {
        const double u = double(plan.sc[i / 32]) * plan.q[i];
        const double v = -double(plan.m[i / 32]);
        uu += u * u;
        uv += u * v;
        vv += v * v;
        xu += x[i] * u;
        xv += x[i] * v;
    }
    if (vv == 0) {  // no minimums in use: d alone
        if (uu == 0) return false;
        d = float(xu / uu);
        dmin = 0;
        return true;
    }
    const double det = uu * vv - uv * uv;
    if (det <= 1e-12 * uu * vv) return false;
    d = float((xu * vv - xv * uv) / det);
    dmin = float((uu * xv - uv * xu) / det);
    return true;
}

template <int NMAX>
void plan_k_block(const float* x, KPlan& plan) {
    float scale[8], min[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const detail::AffineFit fit = fit_affine(x + 32 * j, 32, NMAX, true, plan.q + 32 * j);
        scale[j] = fit.scale;
        min[j] = -fit.offset;
        max_scale = std::fmax(max_scale, scale[j]);
        max_min = std::fmax(max_min, min[j]);
    }
    plan.d = detail::to_fp16(max_scale / 63.f);
    plan.dmin = detail::to_fp16(max_min / 63.f);
    plan.error = choose_sub_block_ints<NMAX>(x, scale, min, plan);

    // One least-squares refit of the super-scales for the chosen integers; a second
    // round gains too little to pay for itself.
    float d = 0, dmin = 0;
    if (!refit_super_scales(x, plan, d, dmin)) return;
    KPlan next = plan;
    next.d = detail::to_fp16(d);
    next.dmin = detail::to_fp16(dmin);
    if (next.d == plan.d && next.dmin == plan.dmin) return;
    next.error = choose_sub_block_ints<NMAX>(x, scale, min, next);
    if (next.error < plan.error) plan = next;
}

void pack_k_scales(const uint8_t* sc, const uint8_t* m, uint8_t* out) {
    for (int j = 0; j < 4; ++j) {
        out[j] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));
        out[j + 4] = uint8_t(m[j] | ((m[j + 4] >> 4) << 6));
        out[j + 8] = uint8_t((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
    }
}

// ------------------------------------------------------------------ Q6_K --

struct Q6Plan {
    uint16_t d = 0;
    int8_t scales[16] = {};
    int8_t q[QK_K] = {};
    float error = INFINITY;
};

// For a fixed super-scale, the best int8 scale near each sub-block's ideal one.
float choose_q6_scales(const float* x, const float* sub_scale, Q6Plan& plan) {
    const float d = fp16_to_fp32(plan.d);
    float total = 0;
    for (int j = 0; j < 16; ++j) {
        const float ideal = d != 0 ? sub_scale[j] / d : 0.f;
        const int base = int(std::floor(ideal));
        const int lo = base - 1 < -128 ? -128 : (base - 1 > 127 ? 127 : base - 1);
        const int hi = base + 2 > 127 ? 127 : (base + 2 < -128 ? -128 : base + 2);
        float step[kSymmetricGrids], error[kSymmetricGrids];
        for (int s = 0; s < kSymmetricGrids; ++s) step[s] = d * float(lo + s <= hi ? lo + s : lo);
        symmetric_errors(x + 16 * j, 16, step, -32, 31, error);
        float best = INFINITY;
        for (int s = lo; s <= hi; ++s) {
            if (error[s - lo] < best) {
                best = error[s - lo];
                plan.scales[j] = int8_t(s);
            }
        }
        if (best < INFINITY) symmetric_error(x + 16 * j, 16, d * float(plan.scales[j]), -32, 31, plan.q + 16 * j);
        total += best;
    }
    return total;
}

void plan_q6_block(const float* x, Q6Plan& plan) {
    float sub_scale[16];
    int8_t scratch[16];
    float extreme = 0;
    for (int j = 0; j < 16; ++j) {
        sub_scale[j] = fit_symmetric(x + 16 * j, 16, -32, 31, scratch);
        if (std::fabs(sub_scale[j]) > std::fabs(extreme)) extreme = sub_scale[j];
    }
    if (extreme == 0) {
        plan = Q6Plan{};
        plan.error = 0;
        return;
    }
    // The largest sub-block scale on -128 (int8's long end) or on 127; keep the better.
    for (float target : {-128.f, 127.f}) {
        Q6Plan candidate;
        candidate.d = detail::to_fp16(extreme / target);
        candidate.error = choose_q6_scales(x, sub_scale, candidate);
        if (candidate.error < plan.error) plan = candidate;
    }
    for (int round = 0; round < 2; ++round) {
        double num = 0, den = 0;
        for (int i = 0; i < QK_K; ++i) {
            const double u = double(plan.scales[i / 16]) * plan.q[i];
            num += x[i] * u;
            den += u * u;
        }
        if (den == 0) break;
        Q6Plan next;
        next.d = detail::to_fp16(float(num / den));
        if (next.d == plan.d) break;
        next.error = choose_q6_scales(x, sub_scale, next);
        if (!(next.error < plan.error)) break;
        plan = next;
    }
}

}  // namespace

void quantize_block(const float* x, BlockQ4_K& y) {
    KPlan plan;
    plan_k_block<15>(x, plan);
    y.d = plan.d;
    y.dmin = plan.dmin;
    pack_k_scales(plan.sc, plan.m, y.scales);
    for (int chunk = 0; chunk < 4; ++chunk)
        for (int l = 0; l < 32; ++l)
            y.qs[32 * chunk + l] = uint8_t(plan.q[64 * chunk + l] | (plan.q[64 * chunk + 32 + l] << 4));
}

void quantize_block(const float* x, BlockQ5_K& y) {
    KPlan plan;
    plan_k_block<31>(x, plan);
    y.d = plan.d;
    y.dmin = plan.dmin;
    pack_k_scales(plan.sc, plan.m, y.scales);
    std::memset(y.qh, 0, sizeof y.qh);
    for (int chunk = 0; chunk < 4; ++chunk) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t lo = plan.q[64 * chunk + l], hi = plan.q[64 * chunk + 32 + l];
            y.qs[32 * chunk + l] = uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
            y.qh[l] |= uint8_t(((lo >> 4) << (2 * chunk)) | ((hi >> 4) << (2 * chunk + 1)));
        }
    }
}

void quantize_block(const float* x, BlockQ6_K& y) {
    Q6Plan plan;
    plan_q6_block(x, plan);
    y.d = plan.d;
    std::memcpy(y.scales, plan.scales, sizeof y.scales);
    // Levels stored as q + 32 in six bits: low nibbles in ql, high pairs in qh, per
    // 128-weight half as blocks.hpp's q6k_value reads them.
    for (int half = 0; half < 2; ++half) {
        uint8_t* ql = y.ql + 64 * half;
        uint8_t* qh = y.qh + 32 * half;
        const int8_t* q = plan.q + 128 * half;
        for (int l = 0; l < 32; ++l) {
            uint8_t level[4];
            for (int g = 0; g < 4; ++g) level[g] = uint8_t(q[32 * g + l] + 32);
            ql[l] = uint8_t((level[0] & 0xF) | ((level[2] & 0xF) << 4));
            ql[l + 32] = uint8_t((level[1] & 0xF) | ((level[3] & 0xF) << 4));
            qh[l] = uint8_t((level[0] >> 4) | ((level[1] >> 4) << 2) | ((level[2] >> 4) << 4) | ((level[3] >> 4) << 6));
        }
    }
}

}  // namespace edgerun::quant
