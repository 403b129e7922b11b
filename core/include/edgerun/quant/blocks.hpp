// GGUF quantized block layouts and their scalar dequantization, written from the format's
// definition. Shared by every backend: compiled as host code by cpu_ref and the tools,
// and as __host__ __device__ code by CUDA kernels (so the CPU tests of this file test
// the math the GPU runs). No CUDA header is included; only nvcc's keywords are used.
//
// Conventions: a block of `QK` weights is dequantized as y[i] = scale * q[i] (- min); the
// fp16 fields are stored as raw uint16_t so the structs are plain on both sides.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define ER_HD __host__ __device__ __forceinline__
#else
#define ER_HD inline
#endif

namespace edgerun::quant {

inline constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32;
inline constexpr int QK_K = 256;
inline constexpr int K_SCALE_SIZE = 12;

// ------------------------------------------------------------ fp16 / bf16 --

ER_HD float bits_to_float(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

ER_HD uint32_t float_to_bits(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

// IEEE half to float, exact for every input including subnormals, inf and NaN.
ER_HD float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0x1F) return bits_to_float(sign | 0x7F800000u | (mantissa << 13));
    if (exponent != 0) return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
    if (mantissa == 0) return bits_to_float(sign);
    // Subnormal: normalise the mantissa.
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --e;
    }
    return bits_to_float(sign | (e << 23) | ((mantissa & 0x3FFu) << 13));
}

// Float to IEEE half, round to nearest even (as the hardware conversion does).
ER_HD uint16_t fp32_to_fp16(float f) {
    const uint32_t x = float_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7FFFFFFFu;
    if (abs >= 0x7F800000u) return uint16_t(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
    if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to infinity
    if (abs < 0x38800000u) {                                    // subnormal or zero in half
        if (abs < 0x33000001u) return uint16_t(sign);
        const uint32_t e = abs >> 23;
        const uint32_t m = (abs & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - e;  // 14..24
        uint32_t half = m >> shift;
        const uint32_t rest = m & ((1u << shift) - 1);
        const uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u))) ++half;
        return uint16_t(sign | half);
    }
    uint32_t half = ((abs - 0x38000000u) >> 13);
    const uint32_t rest = abs & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return uint16_t(sign | half);
}

ER_HD float bf16_to_fp32(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }

ER_HD uint16_t fp32_to_bf16(float f) {
    uint32_t x = float_to_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7FFFu + ((x >> 16) & 1u);
    return uint16_t(x >> 16);
}

// ---------------------------------------------------------------- layouts --

struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[QK4_0 / 2];  // low nibbles: weights 0..15, high nibbles: 16..31
};
struct BlockQ4_1 {
    uint16_t d, m;
    uint8_t qs[QK4_1 / 2];
};
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];  // fifth bit of each weight
    uint8_t qs[QK5_0 / 2];
};
struct BlockQ5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
};
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[QK8_0];
};
struct BlockQ8_1 {
    uint16_t d, s;  // s = d * sum(qs)
    int8_t qs[QK8_1];
};
struct BlockQ2_K {
    uint8_t scales[QK_K / 16];  // 4-bit scale and 4-bit min per 16 weights
    uint8_t qs[QK_K / 4];
    uint16_t d, dmin;
};
struct BlockQ3_K {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];  // sixteen 6-bit scales
    uint16_t d;
};
struct BlockQ4_K {
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];  // eight 6-bit scales and eight 6-bit mins
    uint8_t qs[QK_K / 2];
};
struct BlockQ5_K {
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
};
struct BlockQ6_K {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    uint16_t d;
};
struct BlockQ8_K {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// ------------------------------------------------------- scale unpacking --

// Q4_K / Q5_K: scale and min of sub-block j (0..7) from the 12 packed bytes.
ER_HD void q4k_scale_min(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
    if (j < 4) {
        *scale = q[j] & 63;
        *min = q[j + 4] & 63;
    } else {
        *scale = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Q3_K: the sixteen signed 6-bit scales (already minus 32) from the 12 packed bytes.
ER_HD void q3k_scales(const uint8_t* packed, int8_t* out) {
    for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
        const int high = (packed[8 + (j % 4)] >> (2 * (j / 4))) & 3;
        out[j] = int8_t((low | (high << 4)) - 32);
    }
}

// ------------------------------------------------------------- dequantization --

ER_HD void dequant_q4_0(const BlockQ4_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
        y[j] = float((b.qs[j] & 0xF) - 8) * d;
        y[j + QK4_0 / 2] = float((b.qs[j] >> 4) - 8) * d;
    }
}

ER_HD void dequant_q4_1(const BlockQ4_1& b, float* y) {
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    for (int j = 0; j < QK4_1 / 2; ++j) {
        y[j] = float(b.qs[j] & 0xF) * d + m;
        y[j + QK4_1 / 2] = float(b.qs[j] >> 4) * d + m;
    }
}

ER_HD uint32_t load_u32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

ER_HD void dequant_q5_0(const BlockQ5_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < QK5_0 / 2; ++j) {
        const int lo = (b.qs[j] & 0xF) | int(((qh >> j) & 1u) << 4);
        const int hi = (b.qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
        y[j] = float(lo - 16) * d;
        y[j + QK5_0 / 2] = float(hi - 16) * d;
    }
}

ER_HD void dequant_q5_1(const BlockQ5_1& b, float* y) {
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < QK5_1 / 2; ++j) {
        const int lo = (b.qs[j] & 0xF) | int(((qh >> j) & 1u) << 4);
        const int hi = (b.qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
        y[j] = float(lo) * d + m;
        y[j + QK5_1 / 2] = float(hi) * d + m;
    }
}

ER_HD void dequant_q8_0(const BlockQ8_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < QK8_0; ++j) y[j] = float(b.qs[j]) * d;
}

ER_HD void dequant_q8_1(const BlockQ8_1& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < QK8_1; ++j) y[j] = float(b.qs[j]) * d;
}

// Weight i of a Q2_K block: 128-weight halves, each 4 groups of 32 sharing one byte
// column at shifts 0,2,4,6; a 4-bit scale and min per 16 weights.
ER_HD void dequant_q2_k(const BlockQ2_K& b, float* y) {
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    for (int i = 0; i < QK_K; ++i) {
        const int half = i / 128, group = (i % 128) / 32, l = i % 32;
        const int q = (b.qs[half * 32 + l] >> (2 * group)) & 3;
        const uint8_t sc = b.scales[i / 16];
        y[i] = d * float(sc & 0xF) * float(q) - dmin * float(sc >> 4);
    }
}

ER_HD void dequant_q3_k(const BlockQ3_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    int8_t scales[16];
    q3k_scales(b.scales, scales);
    for (int i = 0; i < QK_K; ++i) {
        const int half = i / 128, group = (i % 128) / 32, l = i % 32;
        const int low = (b.qs[half * 32 + l] >> (2 * group)) & 3;
        const bool high = (b.hmask[l] >> (half * 4 + group)) & 1;
        y[i] = d * float(scales[i / 16]) * float(low - (high ? 0 : 4));
    }
}

ER_HD void dequant_q4_k(const BlockQ4_K& b, float* y) {
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    for (int chunk = 0; chunk < QK_K / 64; ++chunk) {
        uint8_t s0, m0, s1, m1;
        q4k_scale_min(2 * chunk, b.scales, &s0, &m0);
        q4k_scale_min(2 * chunk + 1, b.scales, &s1, &m1);
        const uint8_t* q = b.qs + 32 * chunk;
        for (int l = 0; l < 32; ++l) {
            y[64 * chunk + l] = d * s0 * float(q[l] & 0xF) - dmin * m0;
            y[64 * chunk + 32 + l] = d * s1 * float(q[l] >> 4) - dmin * m1;
        }
    }
}

ER_HD void dequant_q5_k(const BlockQ5_K& b, float* y) {
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    for (int chunk = 0; chunk < QK_K / 64; ++chunk) {
        uint8_t s0, m0, s1, m1;
        q4k_scale_min(2 * chunk, b.scales, &s0, &m0);
        q4k_scale_min(2 * chunk + 1, b.scales, &s1, &m1);
        const uint8_t* q = b.qs + 32 * chunk;
        for (int l = 0; l < 32; ++l) {
            const int h0 = (b.qh[l] >> (2 * chunk)) & 1, h1 = (b.qh[l] >> (2 * chunk + 1)) & 1;
            y[64 * chunk + l] = d * s0 * float((q[l] & 0xF) | (h0 << 4)) - dmin * m0;
            y[64 * chunk + 32 + l] = d * s1 * float((q[l] >> 4) | (h1 << 4)) - dmin * m1;
        }
    }
}

// Q6_K: per 128-weight half, ql holds 64 bytes of low nibbles (two 32-weight groups in
// each nibble position) and qh 32 bytes of 2-bit high parts for four groups.
ER_HD int q6k_value(const BlockQ6_K& b, int i) {
    const int half = i / 128, group = (i % 128) / 32, l = i % 32;
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    const int low = group < 2 ? (ql[l + 32 * group] & 0xF) : (ql[l + 32 * (group - 2)] >> 4);
    const int high = (qh[l] >> (2 * group)) & 3;
    return (low | (high << 4)) - 32;
}

ER_HD void dequant_q6_k(const BlockQ6_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int i = 0; i < QK_K; ++i) y[i] = d * float(b.scales[i / 16]) * float(q6k_value(b, i));
}

ER_HD void dequant_q8_k(const BlockQ8_K& b, float* y) {
    for (int i = 0; i < QK_K; ++i) y[i] = b.d * float(b.qs[i]);
}

// Dequantizes `n` consecutive values of a row of GGUF type `dtype` (n a multiple of the
// block size); returns false for a type this file does not dequantize.
ER_HD bool dequantize_row(int32_t dtype, const void* src, float* dst, int64_t n) {
    const uint8_t* p = static_cast<const uint8_t*>(src);
    switch (dtype) {
        case 0: memcpy(dst, src, size_t(n) * sizeof(float)); return true;
        case 1:
            for (int64_t i = 0; i < n; ++i) {
                uint16_t h;
                memcpy(&h, p + 2 * i, 2);
                dst[i] = fp16_to_fp32(h);
            }
            return true;
        case 30:
            for (int64_t i = 0; i < n; ++i) {
                uint16_t h;
                memcpy(&h, p + 2 * i, 2);
                dst[i] = bf16_to_fp32(h);
            }
            return true;
#define ER_DEQUANT_CASE(id, Block, QK, fn)                              \
    case id:                                                            \
        for (int64_t i = 0; i < n / QK; ++i) {                          \
            Block block;                                                \
            memcpy(&block, p + i * int64_t(sizeof(Block)), sizeof block); \
            fn(block, dst + i * QK);                                    \
        }                                                               \
        return true;
        ER_DEQUANT_CASE(2, BlockQ4_0, QK4_0, dequant_q4_0)
        ER_DEQUANT_CASE(3, BlockQ4_1, QK4_1, dequant_q4_1)
        ER_DEQUANT_CASE(6, BlockQ5_0, QK5_0, dequant_q5_0)
        ER_DEQUANT_CASE(7, BlockQ5_1, QK5_1, dequant_q5_1)
        ER_DEQUANT_CASE(8, BlockQ8_0, QK8_0, dequant_q8_0)
        ER_DEQUANT_CASE(9, BlockQ8_1, QK8_1, dequant_q8_1)
        ER_DEQUANT_CASE(10, BlockQ2_K, QK_K, dequant_q2_k)
        ER_DEQUANT_CASE(11, BlockQ3_K, QK_K, dequant_q3_k)
        ER_DEQUANT_CASE(12, BlockQ4_K, QK_K, dequant_q4_k)
        ER_DEQUANT_CASE(13, BlockQ5_K, QK_K, dequant_q5_k)
        ER_DEQUANT_CASE(14, BlockQ6_K, QK_K, dequant_q6_k)
        ER_DEQUANT_CASE(15, BlockQ8_K, QK_K, dequant_q8_k)
#undef ER_DEQUANT_CASE
        default: return false;
    }
}

}  // namespace edgerun::quant
