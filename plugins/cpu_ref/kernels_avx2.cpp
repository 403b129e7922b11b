// AVX2 row kernels (x86-64 with AVX2, FMA and F16C, chosen at run time). Each dequantizer
// turns 32 stored weights into four 8-wide F32 registers with the same operations, in
// the same order, as blocks.hpp, so the values are bit-identical; dot products keep
// the canonical lane order of kernels.hpp. Built on x86 only; elsewhere the portable
// kernels run.
#include "kernels.hpp"

#include <edgerun/quant/blocks.hpp>

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// Everything below is compiled for AVX2 + FMA + F16C, and only called after the CPU
// said it has them. Headers are included above, so their inline functions stay
// generic (no AVX2 instructions leak into copies other files may link).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace edgerun::cpu_ref::avx2 {
namespace {

using namespace edgerun::quant;

inline float h2f(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);  // exact, like fp16_to_fp32
}

inline __m256 to_f32(__m256i v) { return _mm256_cvtepi32_ps(v); }
inline __m128i lo_half(__m256i v) { return _mm256_castsi256_si128(v); }
inline __m128i hi_half(__m256i v) { return _mm256_extracti128_si256(v, 1); }
inline __m128i high8(__m128i v) { return _mm_srli_si128(v, 8); }

// Four registers from 32 unsigned bytes (as two 16-byte halves).
inline void u8x32_to_i32(__m128i a, __m128i b, __m256i out[4]) {
    out[0] = _mm256_cvtepu8_epi32(a);
    out[1] = _mm256_cvtepu8_epi32(high8(a));
    out[2] = _mm256_cvtepu8_epi32(b);
    out[3] = _mm256_cvtepu8_epi32(high8(b));
}
inline void i8x32_to_i32(__m128i a, __m128i b, __m256i out[4]) {
    out[0] = _mm256_cvtepi8_epi32(a);
    out[1] = _mm256_cvtepi8_epi32(high8(a));
    out[2] = _mm256_cvtepi8_epi32(b);
    out[3] = _mm256_cvtepi8_epi32(high8(b));
}

// The 32 nibbles of 16 bytes (low nibbles are weights 0..15, high nibbles 16..31) as
// four registers: widen bytes first, then split in 32-bit lanes (3 shuffles, not 6).
inline void u4x32_to_i32(__m128i raw, __m256i out[4]) {
    const __m256i b0 = _mm256_cvtepu8_epi32(raw), b1 = _mm256_cvtepu8_epi32(high8(raw));
    const __m256i m4 = _mm256_set1_epi32(0xF);
    out[0] = _mm256_and_si256(b0, m4);
    out[1] = _mm256_and_si256(b1, m4);
    out[2] = _mm256_srli_epi32(b0, 4);
    out[3] = _mm256_srli_epi32(b1, 4);
}

// (x >> shift) & mask on every byte of 32 bytes.
inline __m256i bits_of_bytes(__m256i x, int shift, int mask) {
    return _mm256_and_si256(_mm256_srl_epi16(x, _mm_cvtsi32_si128(shift)), _mm256_set1_epi8(char(mask)));
}

// ------------------------------------------------------------- dequantizers --
// Each calls sink(chunk, w) for the block's 32-weight chunks in order. They are forced
// inline: GCC 12 at -O3 otherwise summarised the out-of-line Q2_K dequantizer as writing
// no memory and deleted the dequantize loop that calls it (seen with objdump).
#define ER_DEQUANTIZER template <class Sink> __attribute__((always_inline)) inline void

ER_DEQUANTIZER dequantize_q4_0(const uint8_t* p, Sink&& sink) {
    const __m256 d = _mm256_set1_ps(h2f(p));
    __m256i q[4];
    u4x32_to_i32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2)), q);
    const __m256i eight = _mm256_set1_epi32(8);
    __m256 w[4];
    for (int g = 0; g < 4; ++g) w[g] = _mm256_mul_ps(to_f32(_mm256_sub_epi32(q[g], eight)), d);
    sink(0, w);
}

ER_DEQUANTIZER dequantize_q4_1(const uint8_t* p, Sink&& sink) {
    const __m256 d = _mm256_set1_ps(h2f(p)), m = _mm256_set1_ps(h2f(p + 2));
    __m256i q[4];
    u4x32_to_i32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4)), q);
    __m256 w[4];
    for (int g = 0; g < 4; ++g) w[g] = _mm256_add_ps(_mm256_mul_ps(to_f32(q[g]), d), m);
    sink(0, w);
}

// Q5_0 / Q5_1: 4-bit values from qs plus the fifth bit from the 32-bit qh.
inline void q5_values(const uint8_t* qh_bytes, const uint8_t* qs, __m256i q[4]) {
    const __m256i qh = _mm256_set1_epi32(int(load_u32(qh_bytes)));
    u4x32_to_i32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)), q);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1);
    for (int g = 0; g < 4; ++g) {
        const __m256i bit = _mm256_and_si256(_mm256_srlv_epi32(qh, _mm256_add_epi32(lane, _mm256_set1_epi32(8 * g))), one);
        q[g] = _mm256_or_si256(q[g], _mm256_slli_epi32(bit, 4));
    }
}

ER_DEQUANTIZER dequantize_q5_0(const uint8_t* p, Sink&& sink) {
    const __m256 d = _mm256_set1_ps(h2f(p));
    __m256i q[4];
    q5_values(p + 2, p + 6, q);
    const __m256i sixteen = _mm256_set1_epi32(16);
    __m256 w[4];
    for (int g = 0; g < 4; ++g) w[g] = _mm256_mul_ps(to_f32(_mm256_sub_epi32(q[g], sixteen)), d);
    sink(0, w);
}

ER_DEQUANTIZER dequantize_q5_1(const uint8_t* p, Sink&& sink) {
    const __m256 d = _mm256_set1_ps(h2f(p)), m = _mm256_set1_ps(h2f(p + 2));
    __m256i q[4];
    q5_values(p + 4, p + 8, q);
    __m256 w[4];
    for (int g = 0; g < 4; ++g) w[g] = _mm256_add_ps(_mm256_mul_ps(to_f32(q[g]), d), m);
    sink(0, w);
}

ER_DEQUANTIZER dequantize_q8_0(const uint8_t* p, Sink&& sink) {
    const __m256 d = _mm256_set1_ps(h2f(p));
    __m256 w[4];
    for (int g = 0; g < 4; ++g) {
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2 + 8 * g));
        w[g] = _mm256_mul_ps(to_f32(_mm256_cvtepi8_epi32(bytes)), d);
    }
    sink(0, w);
}

ER_DEQUANTIZER dequantize_q2_k(const uint8_t* p, Sink&& sink) {
    const uint8_t* scales = p;
    const uint8_t* qs = p + 16;
    const float d = h2f(p + 80), dmin = h2f(p + 82);
    for (int half = 0; half < 2; ++half) {
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * half));
        for (int group = 0; group < 4; ++group) {
            const int chunk = 4 * half + group;
            const __m256i v = bits_of_bytes(bytes, 2 * group, 3);
            __m256i q[4];
            u8x32_to_i32(lo_half(v), hi_half(v), q);
            __m256 w[4];
            for (int g = 0; g < 4; ++g) {
                const uint8_t sc = scales[2 * chunk + g / 2];
                const __m256 dl = _mm256_set1_ps(d * float(sc & 0xF)), ml = _mm256_set1_ps(dmin * float(sc >> 4));
                w[g] = _mm256_sub_ps(_mm256_mul_ps(dl, to_f32(q[g])), ml);
            }
            sink(chunk, w);
        }
    }
}

ER_DEQUANTIZER dequantize_q3_k(const uint8_t* p, Sink&& sink) {
    const uint8_t* qs = p + 32;
    const float d = h2f(p + 108);
    int8_t scales[16];
    q3k_scales(p + 96, scales);
    const __m256i hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    for (int half = 0; half < 2; ++half) {
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * half));
        for (int group = 0; group < 4; ++group) {
            const int chunk = 4 * half + group;
            const __m256i low = bits_of_bytes(bytes, 2 * group, 3);
            const __m256i high = bits_of_bytes(hmask, chunk, 1);
            // low - 4 where the high bit is clear: low - ((high ^ 1) << 2), in [-4, 3].
            const __m256i minus = _mm256_slli_epi16(_mm256_xor_si256(high, _mm256_set1_epi8(1)), 2);
            const __m256i v = _mm256_sub_epi8(low, minus);
            __m256i q[4];
            i8x32_to_i32(lo_half(v), hi_half(v), q);
            __m256 w[4];
            for (int g = 0; g < 4; ++g) {
                const __m256 dl = _mm256_set1_ps(d * float(scales[2 * chunk + g / 2]));
                w[g] = _mm256_mul_ps(dl, to_f32(q[g]));
            }
            sink(chunk, w);
        }
    }
}

// Q4_K / Q5_K share scales; Q5_K adds a fifth bit per weight from qh.
template <bool kFive, class Sink>
__attribute__((always_inline)) inline void dequantize_q45_k(const uint8_t* p, Sink&& sink) {
    const float d = h2f(p), dmin = h2f(p + 2);
    const uint8_t* packed = p + 4;
    const uint8_t* qs = kFive ? p + 48 : p + 16;
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFive) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
    for (int pair = 0; pair < 4; ++pair) {
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * pair));
        for (int nibble = 0; nibble < 2; ++nibble) {
            const int chunk = 2 * pair + nibble;
            uint8_t sc, mn;
            q4k_scale_min(chunk, packed, &sc, &mn);
            __m256i v = bits_of_bytes(bytes, 4 * nibble, 0xF);
            if constexpr (kFive) v = _mm256_or_si256(v, _mm256_slli_epi16(bits_of_bytes(qh, chunk, 1), 4));
            __m256i q[4];
            u8x32_to_i32(lo_half(v), hi_half(v), q);
            const __m256 dl = _mm256_set1_ps(d * float(sc)), ml = _mm256_set1_ps(dmin * float(mn));
            __m256 w[4];
            for (int g = 0; g < 4; ++g) w[g] = _mm256_sub_ps(_mm256_mul_ps(dl, to_f32(q[g])), ml);
            sink(chunk, w);
        }
    }
}

ER_DEQUANTIZER dequantize_q6_k(const uint8_t* p, Sink&& sink) {
    const auto* scales = reinterpret_cast<const int8_t*>(p + 192);
    const float d = h2f(p + 208);
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = p + 64 * half;
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * half));
        for (int group = 0; group < 4; ++group) {
            const int chunk = 4 * half + group;
            const __m256i low = bits_of_bytes(group % 2 == 0 ? l0 : l1, group < 2 ? 0 : 4, 0xF);
            const __m256i high = bits_of_bytes(h, 2 * group, 3);
            const __m256i v = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
            __m256i q[4];
            i8x32_to_i32(lo_half(v), hi_half(v), q);
            __m256 w[4];
            for (int g = 0; g < 4; ++g) {
                const __m256 dl = _mm256_set1_ps(d * float(scales[2 * chunk + g / 2]));
                w[g] = _mm256_mul_ps(dl, to_f32(q[g]));
            }
            sink(chunk, w);
        }
    }
}

// ------------------------------------------------------------ reductions --

// The 32 canonical lanes: lane 8k + j lives in a[k], element j.
struct Lanes {
    __m256 a[4];

    Lanes() {
        for (auto& v : a) v = _mm256_setzero_ps();
    }

    void fma32(const __m256 w[4], const float* x) {
        for (int k = 0; k < 4; ++k) a[k] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(x + 8 * k), a[k]);
    }
    float sum() const {
        const __m256 v = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
        const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
        return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
    }
    void store(float* out) const {
        for (int k = 0; k < 4; ++k) _mm256_storeu_ps(out + 8 * k, a[k]);
    }
};

// --------------------------------------------------------- batched forms --

template <float (*kDot)(const void*, const float*, int64_t)>
void dot_rows(const void* rows, uint64_t stride, int64_t n_rows, const float* x, int64_t n, float scale, float* out) {
    for (int64_t j = 0; j < n_rows; ++j) out[j] = kDot(static_cast<const uint8_t*>(rows) + j * stride, x, n) * scale;
}

template <void (*kAxpy)(float, const void*, float*, int64_t)>
void weighted_sum(const void* rows, uint64_t stride, const float* weights, int64_t n_rows, float* y, int64_t n) {
    for (int64_t j = 0; j < n_rows; ++j) kAxpy(weights[j], static_cast<const uint8_t*>(rows) + j * stride, y, n);
}

// dot() of one stored row with n_x vectors (kernels.hpp, dot_multi). Past eight vectors
// the row is decoded once into `w`, then the vectors go in groups of up to three whose 32
// lanes each stay in registers (12 accumulators and one weight register). Every lane is
// fed in the order dot() feeds it, so each result has dot()'s bits.
template <int G>
void dot_group(const float* w, const float* x, int64_t x_stride, int64_t n, float* out, int64_t out_stride) {
    __m256 acc[G][4];
    for (int g = 0; g < G; ++g)
        for (int k = 0; k < 4; ++k) acc[g][k] = _mm256_setzero_ps();
    const int64_t full = n / 32 * 32;
    for (int64_t c = 0; c < full; c += 32)
        for (int k = 0; k < 4; ++k) {
            const __m256 wk = _mm256_loadu_ps(w + c + 8 * k);
            for (int g = 0; g < G; ++g) acc[g][k] = _mm256_fmadd_ps(wk, _mm256_loadu_ps(x + g * x_stride + c + 8 * k), acc[g][k]);
        }
    for (int g = 0; g < G; ++g) {
        Lanes lanes;
        for (int k = 0; k < 4; ++k) lanes.a[k] = acc[g][k];
        if (full == n) {
            out[g * out_stride] = lanes.sum();
            continue;
        }
        // The tail of a plain row: lanes 0.. in order, as Plain::dot.
        float tail[kLanes];
        lanes.store(tail);
        const float* xg = x + g * x_stride;
        for (int64_t i = full; i < n; ++i) tail[i - full] = __builtin_fmaf(w[i], xg[i], tail[i - full]);
        out[g * out_stride] = lane_sum(tail);
    }
}

// Up to eight vectors, each block is decoded in registers for two or three vectors at a
// time (K::dot2, K::dot3): cheaper than decoding the row to memory once and reading it
// back for each vector (measured on SmolLM2's Q4_1 rows: 3 vectors 1.6x, 8 vectors 1.05x
// faster). More vectors: the row is decoded once to scratch for all of them.
template <class K>
void dot_multi(const void* row, const float* x, int64_t x_stride, int32_t n_x, int64_t n, float* out,
               int64_t out_stride, float* scratch) {
    if (n_x <= 8) {
        int32_t r = 0;
        // Threes, then twos: a vector goes alone only when it is the only one.
        for (; n_x - r > 4 || n_x - r == 3; r += 3) K::dot3(row, x + r * x_stride, x_stride, n, out + r * out_stride, out_stride);
        for (; n_x - r >= 2; r += 2)
            K::dot2(row, x + r * x_stride, x + (r + 1) * x_stride, n, out + r * out_stride, out + (r + 1) * out_stride);
        if (r < n_x) out[r * out_stride] = K::dot(row, x + r * x_stride, n);
        return;
    }
    K::dequant(row, scratch, n);
    int32_t r = 0;
    for (; r + 3 <= n_x; r += 3) dot_group<3>(scratch, x + r * x_stride, x_stride, n, out + r * out_stride, out_stride);
    if (n_x - r == 2) dot_group<2>(scratch, x + r * x_stride, x_stride, n, out + r * out_stride, out_stride);
    if (n_x - r == 1) dot_group<1>(scratch, x + r * x_stride, x_stride, n, out + r * out_stride, out_stride);
}

// weighted_sum for rows whose 32-value chunks dequantize on their own (plain types and
// Q8_0): each chunk of y stays in registers while every row adds to it, in row order.
template <class Chunk>
void weighted_sum_chunked(const void* rows, uint64_t stride, const float* weights, int64_t n_rows, float* y,
                          int64_t n) {
    const auto* base = static_cast<const uint8_t*>(rows);
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        __m256 acc[4];
        for (int k = 0; k < 4; ++k) acc[k] = _mm256_loadu_ps(y + c + 8 * k);
        for (int64_t j = 0; j < n_rows; ++j) {
            __m256 w[4];
            Chunk::load32(base + j * stride, c, w);
            const __m256 a = _mm256_set1_ps(weights[j]);
            for (int k = 0; k < 4; ++k) acc[k] = _mm256_fmadd_ps(a, w[k], acc[k]);
        }
        for (int k = 0; k < 4; ++k) _mm256_storeu_ps(y + c + 8 * k, acc[k]);
    }
    for (; c < n; ++c)  // plain rows only: a tail shorter than 32
        for (int64_t j = 0; j < n_rows; ++j) y[c] = __builtin_fmaf(weights[j], Chunk::load1(base + j * stride, c), y[c]);
}

// --------------------------------------------------------- quantized rows --

#define ER_AVX2_QUANT(Name, QK, kBytes, dequantize)                                                    \
    struct Name {                                                                                      \
        __attribute__((always_inline)) static float dot(const void* row, const float* x, int64_t n) {  \
            const auto* p = static_cast<const uint8_t*>(row);                                          \
            Lanes lanes;                                                                               \
            for (int64_t b = 0; b < n / (QK); ++b, p += (kBytes), x += (QK))                           \
                dequantize(p, [&](int chunk, const __m256* w) { lanes.fma32(w, x + 32 * chunk); });    \
            return lanes.sum();                                                                        \
        }                                                                                              \
        /* dot() of two (three) vectors, each block decoded once for them all */                       \
        static void dot2(const void* row, const float* x0, const float* x1, int64_t n, float* out0,     \
                         float* out1) {                                                                \
            const auto* p = static_cast<const uint8_t*>(row);                                          \
            Lanes a0, a1;                                                                              \
            for (int64_t b = 0; b < n / (QK); ++b, p += (kBytes), x0 += (QK), x1 += (QK))              \
                dequantize(p, [&](int chunk, const __m256* w) {                                        \
                    a0.fma32(w, x0 + 32 * chunk);                                                      \
                    a1.fma32(w, x1 + 32 * chunk);                                                      \
                });                                                                                    \
            *out0 = a0.sum();                                                                          \
            *out1 = a1.sum();                                                                          \
        }                                                                                              \
        static void dot3(const void* row, const float* x0, int64_t stride, int64_t n, float* out,       \
                         int64_t out_stride) {                                                         \
            const auto* p = static_cast<const uint8_t*>(row);                                          \
            const float* x1 = x0 + stride;                                                             \
            const float* x2 = x1 + stride;                                                             \
            Lanes a0, a1, a2;                                                                          \
            for (int64_t b = 0; b < n / (QK); ++b, p += (kBytes), x0 += (QK), x1 += (QK), x2 += (QK))  \
                dequantize(p, [&](int chunk, const __m256* w) {                                        \
                    a0.fma32(w, x0 + 32 * chunk);                                                      \
                    a1.fma32(w, x1 + 32 * chunk);                                                      \
                    a2.fma32(w, x2 + 32 * chunk);                                                      \
                });                                                                                    \
            out[0] = a0.sum();                                                                         \
            out[out_stride] = a1.sum();                                                                \
            out[2 * out_stride] = a2.sum();                                                            \
        }                                                                                              \
        static void dequant(const void* row, float* y, int64_t n) {                                    \
            const auto* p = static_cast<const uint8_t*>(row);                                          \
            for (int64_t b = 0; b < n / (QK); ++b, p += (kBytes), y += (QK))                           \
                dequantize(p, [&](int chunk, const __m256* w) {                                        \
                    for (int k = 0; k < 4; ++k) _mm256_storeu_ps(y + 32 * chunk + 8 * k, w[k]);        \
                });                                                                                    \
        }                                                                                              \
        static void axpy(float a, const void* row, float* y, int64_t n) {                              \
            const auto* p = static_cast<const uint8_t*>(row);                                          \
            const __m256 va = _mm256_set1_ps(a);                                                       \
            for (int64_t b = 0; b < n / (QK); ++b, p += (kBytes), y += (QK))                           \
                dequantize(p, [&](int chunk, const __m256* w) {                                        \
                    for (int k = 0; k < 4; ++k) {                                                      \
                        float* out = y + 32 * chunk + 8 * k;                                           \
                        _mm256_storeu_ps(out, _mm256_fmadd_ps(va, w[k], _mm256_loadu_ps(out)));        \
                    }                                                                                  \
                });                                                                                    \
        }                                                                                              \
        static constexpr RowKernels kernels{&dot, &dequant, &axpy, &dot_rows<&dot>, &weighted_sum<&axpy>,  \
                                            &dot_multi<Name>};                                           \
    };

ER_AVX2_QUANT(Q4_0, 32, 18, dequantize_q4_0)
ER_AVX2_QUANT(Q4_1, 32, 20, dequantize_q4_1)
ER_AVX2_QUANT(Q5_0, 32, 22, dequantize_q5_0)
ER_AVX2_QUANT(Q5_1, 32, 24, dequantize_q5_1)
ER_AVX2_QUANT(Q8_0_rows, 32, 34, dequantize_q8_0)
ER_AVX2_QUANT(Q2_K, 256, 84, dequantize_q2_k)
ER_AVX2_QUANT(Q3_K, 256, 110, dequantize_q3_k)
ER_AVX2_QUANT(Q4_K, 256, 144, dequantize_q45_k<false>)
ER_AVX2_QUANT(Q5_K, 256, 176, dequantize_q45_k<true>)
ER_AVX2_QUANT(Q6_K, 256, 210, dequantize_q6_k)
#undef ER_AVX2_QUANT

// Q8_0 is also the KV cache's INT8 row: its weighted sum keeps y in registers.
struct Q8_0 : Q8_0_rows {
    static void load32(const uint8_t* row, int64_t c, __m256 w[4]) {
        dequantize_q8_0(row + c / 32 * 34, [&](int, const __m256* v) {
            for (int k = 0; k < 4; ++k) w[k] = v[k];
        });
    }
    static float load1(const uint8_t*, int64_t) { return 0.0f; }  // rows are whole blocks
    static constexpr RowKernels kernels{&dot,           &dequant, &axpy, &dot_rows<&dot>, &weighted_sum_chunked<Q8_0>,
                                        &dot_multi<Q8_0_rows>};
};

// ------------------------------------------------------------ plain rows --

// 8 values of a plain row from element i.
template <int32_t kType>
inline __m256 load8(const uint8_t* p, int64_t i) {
    if constexpr (kType == 0) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + i);
    } else if constexpr (kType == 1) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
    } else {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    }
}

template <int32_t kType>
inline float plain_value(const uint8_t* p, int64_t i) {
    if constexpr (kType == 0) {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        return v;
    } else {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        return kType == 1 ? fp16_to_fp32(h) : bf16_to_fp32(h);
    }
}

template <int32_t kType>
struct Plain {
    __attribute__((always_inline)) static float dot(const void* row, const float* x, int64_t n) {
        const auto* p = static_cast<const uint8_t*>(row);
        Lanes lanes;
        const int64_t full = n / 32 * 32;
        for (int64_t i = 0; i < full; i += 32) {
            const __m256 w[4] = {load8<kType>(p, i), load8<kType>(p, i + 8), load8<kType>(p, i + 16),
                                 load8<kType>(p, i + 24)};
            lanes.fma32(w, x + i);
        }
        if (full == n) return lanes.sum();
        // The tail goes to lanes 0.. in order, exactly as the portable kernel does.
        float acc[kLanes];
        lanes.store(acc);
        for (int64_t i = full; i < n; ++i) acc[i - full] = __builtin_fmaf(plain_value<kType>(p, i), x[i], acc[i - full]);
        return lane_sum(acc);
    }
    // Plain rows cost little to decode: one vector at a time.
    static void dot2(const void* row, const float* x0, const float* x1, int64_t n, float* out0, float* out1) {
        *out0 = dot(row, x0, n);
        *out1 = dot(row, x1, n);
    }
    static void dot3(const void* row, const float* x0, int64_t stride, int64_t n, float* out, int64_t out_stride) {
        for (int i = 0; i < 3; ++i) out[i * out_stride] = dot(row, x0 + i * stride, n);
    }
    static void dequant(const void* row, float* y, int64_t n) {
        const auto* p = static_cast<const uint8_t*>(row);
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, load8<kType>(p, i));
        for (; i < n; ++i) y[i] = plain_value<kType>(p, i);
    }
    static void axpy(float a, const void* row, float* y, int64_t n) {
        const auto* p = static_cast<const uint8_t*>(row);
        const __m256 va = _mm256_set1_ps(a);
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load8<kType>(p, i), _mm256_loadu_ps(y + i)));
        for (; i < n; ++i) y[i] = __builtin_fmaf(a, plain_value<kType>(p, i), y[i]);
    }
    static void load32(const uint8_t* row, int64_t c, __m256 w[4]) {
        for (int k = 0; k < 4; ++k) w[k] = load8<kType>(row, c + 8 * k);
    }
    static float load1(const uint8_t* row, int64_t i) { return plain_value<kType>(row, i); }
    static constexpr RowKernels kernels{&dot,           &dequant, &axpy, &dot_rows<&dot>, &weighted_sum_chunked<Plain>,
                                        &dot_multi<Plain>};
};

}  // namespace
#undef ER_DEQUANTIZER

const RowKernels* row_kernels(int32_t dtype) {
    switch (dtype) {
        case 0: return &Plain<0>::kernels;
        case 1: return &Plain<1>::kernels;
        case 30: return &Plain<30>::kernels;
        case 2: return &Q4_0::kernels;
        case 3: return &Q4_1::kernels;
        case 6: return &Q5_0::kernels;
        case 7: return &Q5_1::kernels;
        case 8: return &Q8_0::kernels;
        case 10: return &Q2_K::kernels;
        case 11: return &Q3_K::kernels;
        case 12: return &Q4_K::kernels;
        case 13: return &Q5_K::kernels;
        case 14: return &Q6_K::kernels;
        default: return nullptr;
    }
}

}  // namespace edgerun::cpu_ref::avx2

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64

namespace edgerun::cpu_ref::avx2 {
const RowKernels* row_kernels(int32_t) { return nullptr; }
}  // namespace edgerun::cpu_ref::avx2

#endif
