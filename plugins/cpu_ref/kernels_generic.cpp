// Portable row kernels: blocks.hpp's values (dequantize_generic.hpp), plain loops that
// accumulate in the canonical lane order (kernels.hpp), written so compilers vectorise
// them (NEON on aarch64).
#include "dequantize_generic.hpp"
#include "kernels.hpp"

#include <edgerun/quant/blocks.hpp>

#include <cmath>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace edgerun::cpu_ref {

float lane_sum(const float* acc) {
    float r8[8], r4[4];
    for (int j = 0; j < 8; ++j) r8[j] = (acc[j] + acc[j + 8]) + (acc[j + 16] + acc[j + 24]);
    for (int j = 0; j < 4; ++j) r4[j] = r8[j] + r8[j + 4];
    const float r2a = r4[0] + r4[2], r2b = r4[1] + r4[3];
    return r2a + r2b;
}

namespace generic {
namespace {

using namespace edgerun::quant;

// acc[lane0 + l] += w[l] * x[l] for l < n, fused (n + lane0 <= 32).
inline void lanes_fma(float* __restrict acc, const float* __restrict w, const float* __restrict x, int n) {
    for (int l = 0; l < n; ++l) acc[l] = std::fma(w[l], x[l], acc[l]);
}

// The batched attention forms, as the loops that define them.
template <DotFn kDot>
void dot_rows(const void* rows, uint64_t stride, int64_t n_rows, const float* x, int64_t n, float scale, float* out) {
    for (int64_t j = 0; j < n_rows; ++j) out[j] = kDot(static_cast<const uint8_t*>(rows) + j * stride, x, n) * scale;
}

template <AxpyFn kAxpy>
void weighted_sum(const void* rows, uint64_t stride, const float* weights, int64_t n_rows, float* y, int64_t n) {
    for (int64_t j = 0; j < n_rows; ++j) kAxpy(weights[j], static_cast<const uint8_t*>(rows) + j * stride, y, n);
}

// dot() of one stored row with n_x vectors: the row decoded once into `scratch`, then
// per vector the same fused multiply-adds into the same lanes as dot() (element i into
// lane i % 32), so the same bits.
template <DotFn kDot, DequantFn kDequant>
void dot_multi(const void* row, const float* x, int64_t x_stride, int32_t n_x, int64_t n, float* out,
               int64_t out_stride, float* scratch) {
    if (n_x == 1) {
        out[0] = kDot(row, x, n);
        return;
    }
    kDequant(row, scratch, n);
    for (int32_t r = 0; r < n_x; ++r) {
        const float* xr = x + r * x_stride;
        float acc[kLanes] = {};
        for (int64_t i = 0; i < n; i += kLanes) lanes_fma(acc, scratch + i, xr + i, n - i < kLanes ? int(n - i) : kLanes);
        out[r * out_stride] = lane_sum(acc);
    }
}

// ---------------------------------------------------------- plain types --

// Converts values [i0, i0 + n) of a plain row to F32.
template <int32_t kType>
inline void plain_to_f32(const uint8_t* __restrict p, int64_t i0, int n, float* __restrict out) {
    if constexpr (kType == 0) {
        std::memcpy(out, p + 4 * i0, size_t(n) * 4);
    } else {
        uint16_t h[kLanes];
        std::memcpy(h, p + 2 * i0, size_t(n) * 2);
        if (n == kLanes) {  // the common case, with a constant trip count
            for (int l = 0; l < kLanes; ++l) out[l] = kType == 1 ? half_to_float(h[l]) : bf16_to_fp32(h[l]);
        } else {
            for (int l = 0; l < n; ++l) out[l] = kType == 1 ? half_to_float(h[l]) : bf16_to_fp32(h[l]);
        }
    }
}

template <int32_t kType>
float dot_plain(const void* row, const float* x, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(row);
    float acc[kLanes] = {};
    float w[kLanes];
    for (int64_t i = 0; i < n; i += kLanes) {
        const int len = n - i < kLanes ? int(n - i) : kLanes;
        plain_to_f32<kType>(p, i, len, w);
        lanes_fma(acc, w, x + i, len);
    }
    return lane_sum(acc);
}

template <int32_t kType>
void dequant_plain(const void* row, float* y, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(row);
    for (int64_t i = 0; i < n; i += kLanes) plain_to_f32<kType>(p, i, n - i < kLanes ? int(n - i) : kLanes, y + i);
}

template <int32_t kType>
void axpy_plain(float a, const void* row, float* y, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(row);
    float w[kLanes];
    for (int64_t i = 0; i < n; i += kLanes) {
        const int len = n - i < kLanes ? int(n - i) : kLanes;
        plain_to_f32<kType>(p, i, len, w);
        for (int l = 0; l < len; ++l) y[i + l] = std::fma(a, w[l], y[i + l]);
    }
}

// ------------------------------------------------------- quantized types --

template <class Dec>
struct Quant {
    static constexpr int kChunks = Dec::kQK / kLanes;

    static float dot(const void* row, const float* x, int64_t n) {
        const auto* p = static_cast<const uint8_t*>(row);
        float acc[kLanes] = {};
        float w[kLanes];
        for (int64_t b = 0; b < n / Dec::kQK; ++b, p += Dec::kBytes) {
            const auto state = Dec::prepare(p);
            for (int c = 0; c < kChunks; ++c) {
                Dec::chunk(p, state, c, w);
                lanes_fma(acc, w, x + b * Dec::kQK + c * kLanes, kLanes);
            }
        }
        return lane_sum(acc);
    }

    static void dequant(const void* row, float* y, int64_t n) {
        const auto* p = static_cast<const uint8_t*>(row);
        for (int64_t b = 0; b < n / Dec::kQK; ++b, p += Dec::kBytes) {
            const auto state = Dec::prepare(p);
            for (int c = 0; c < kChunks; ++c) Dec::chunk(p, state, c, y + b * Dec::kQK + c * kLanes);
        }
    }

    static void axpy(float a, const void* row, float* y, int64_t n) {
        const auto* p = static_cast<const uint8_t*>(row);
        float w[kLanes];
        for (int64_t b = 0; b < n / Dec::kQK; ++b, p += Dec::kBytes) {
            const auto state = Dec::prepare(p);
            for (int c = 0; c < kChunks; ++c) {
                Dec::chunk(p, state, c, w);
                float* out = y + b * Dec::kQK + c * kLanes;
                for (int l = 0; l < kLanes; ++l) out[l] = std::fma(a, w[l], out[l]);
            }
        }
    }

    static constexpr RowKernels kernels{&dot,           &dequant,
                                        &axpy,          &dot_rows<&dot>,
                                        &weighted_sum<&axpy>, &dot_multi<&dot, &dequant>};
};

template <int32_t kType>
struct Plain {
    static constexpr RowKernels kernels{&dot_plain<kType>,
                                        &dequant_plain<kType>,
                                        &axpy_plain<kType>,
                                        &dot_rows<&dot_plain<kType>>,
                                        &weighted_sum<&axpy_plain<kType>>,
                                        &dot_multi<&dot_plain<kType>, &dequant_plain<kType>>};
};

}  // namespace

const RowKernels* row_kernels(int32_t dtype) {
    switch (dtype) {
        case 0: return &Plain<0>::kernels;
        case 1: return &Plain<1>::kernels;
        case 30: return &Plain<30>::kernels;
        case 2: return &Quant<DecQ4_0>::kernels;
        case 3: return &Quant<DecQ4_1>::kernels;
        case 6: return &Quant<DecQ5<false>>::kernels;
        case 7: return &Quant<DecQ5<true>>::kernels;
        case 8: return &Quant<DecQ8_0>::kernels;
        case 10: return &Quant<DecQ2_K>::kernels;
        case 11: return &Quant<DecQ3_K>::kernels;
        case 12: return &Quant<DecQ45_K<false>>::kernels;
        case 13: return &Quant<DecQ45_K<true>>::kernels;
        case 14: return &Quant<DecQ6_K>::kernels;
        default: return nullptr;
    }
}

}  // namespace generic

bool dtype_supported(int32_t dtype) { return generic::row_kernels(dtype) != nullptr; }

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// AVX2 + FMA + F16C in the CPU, and AVX state enabled by the OS (XCR0 bits 1 and 2).
bool cpu_has_avx2_fma_f16c() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
    if (!(fma && osxsave && avx && f16c)) return false;
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 6u) != 6u) return false;
    if (__get_cpuid_max(0, nullptr) < 7) return false;
    __cpuid_count(7, 0, a, b, c, d);
    return b & (1u << 5);  // AVX2
}
#endif

}  // namespace

bool isa_available(Isa isa) {
    switch (isa) {
        case Isa::Generic: return true;
        case Isa::Avx2: {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
            static const bool has = cpu_has_avx2_fma_f16c();
            return has;
#else
            return false;
#endif
        }
    }
    return false;
}

Isa best_isa() {
    static const Isa best = isa_available(Isa::Avx2) ? Isa::Avx2 : Isa::Generic;
    return best;
}

const char* isa_name(Isa isa) { return isa == Isa::Avx2 ? "avx2" : "generic"; }

const RowKernels* row_kernels(int32_t dtype, Isa isa) {
    if (isa == Isa::Avx2 && isa_available(Isa::Avx2)) {
        if (const RowKernels* k = avx2::row_kernels(dtype)) return k;
    }
    return generic::row_kernels(dtype);
}

}  // namespace edgerun::cpu_ref
