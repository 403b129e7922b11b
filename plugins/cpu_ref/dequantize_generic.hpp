// Portable block dequantizers for the row kernels: the values of blocks.hpp (same F32
// operations in the same order, so the same bits; the tests compare them on random
// blocks of every type), written 32 weights at a time in straight loops without
// per-element branches, so compilers vectorise them (NEON on aarch64).
//
// Each dequantizer is a struct with the block geometry, a per-block `State` (scales dequantized
// once per block) and `chunk(p, state, c, w)`, which writes weights [32c, 32c + 32).
#pragma once

#include <edgerun/quant/blocks.hpp>

#include <cstdint>
#include <cstring>

namespace edgerun::cpu_ref::generic {

inline uint16_t read_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// fp16_to_fp32 without branches: the half's exponent and mantissa moved into a float
// and scaled by 2^112 (exact for normal and subnormal halves alike), inf and NaN
// patched in. Assumes subnormal floats are not flushed to zero (the default).
// Not aarch64's hardware conversion (__fp16): it quiets signalling NaNs, so 1022 halves
// came out other than blocks.hpp's (seen under qemu-aarch64, scripts/aarch64-check.sh).
inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t rest = uint32_t(h & 0x7FFFu) << 13;
    const uint32_t scaled = quant::float_to_bits(quant::bits_to_float(rest) * 0x1p112f);
    const uint32_t bits = (h & 0x7C00u) == 0x7C00u ? (0x7F800000u | rest) : scaled;
    return quant::bits_to_float(sign | bits);
}

inline float half_at(const uint8_t* p) { return half_to_float(read_u16(p)); }

// The 32 4-bit values of a Q4/Q5 block (low nibbles are weights 0..15, high nibbles
// 16..31) minus `offset`, as bytes. Split 8 bytes at a time in 64-bit words: compilers
// turn element-wise nibble loops into slow byte inserts.
inline void nibbles(const uint8_t* __restrict qs, int8_t* __restrict q, int offset) {
    const uint64_t mask = 0x0F0F0F0F0F0F0F0Full, bias = 0x0101010101010101ull * uint64_t(offset);
    for (int half = 0; half < 2; ++half) {
        uint64_t v;
        std::memcpy(&v, qs + 8 * half, 8);
        uint64_t a = v & mask, b = (v >> 4) & mask;
        // Byte-wise x - offset mod 256: x + 128 - offset stays in 0..255 (x <= 15,
        // offset <= 16), so no byte borrows from its neighbour; xor 128 undoes the +128.
        a = ((a | 0x8080808080808080ull) - bias) ^ 0x8080808080808080ull;
        b = ((b | 0x8080808080808080ull) - bias) ^ 0x8080808080808080ull;
        std::memcpy(q + 8 * half, &a, 8);
        std::memcpy(q + 16 + 8 * half, &b, 8);
    }
}

// w[l] = dl[l / 16] * q[l] (- ml[l / 16]) for the two 16-weight halves of a chunk.
inline void scale_pairs(const int8_t* __restrict q, const float* dl, const float* ml, float* __restrict w) {
    for (int h = 0; h < 2; ++h) {
        const float d = dl[h];
        if (ml) {
            const float m = ml[h];
            for (int l = 16 * h; l < 16 * h + 16; ++l) w[l] = d * float(q[l]) - m;
        } else {
            for (int l = 16 * h; l < 16 * h + 16; ++l) w[l] = d * float(q[l]);
        }
    }
}

struct DecQ4_0 {
    static constexpr int kQK = 32, kBytes = 18;
    struct State {
        float d;
    };
    static State prepare(const uint8_t* p) { return {half_at(p)}; }
    static void chunk(const uint8_t* __restrict p, const State& s, int, float* __restrict w) {
        int8_t q[32];
        nibbles(p + 2, q, 8);
        for (int l = 0; l < 32; ++l) w[l] = float(q[l]) * s.d;
    }
};

struct DecQ4_1 {
    static constexpr int kQK = 32, kBytes = 20;
    struct State {
        float d, m;
    };
    static State prepare(const uint8_t* p) { return {half_at(p), half_at(p + 2)}; }
    static void chunk(const uint8_t* __restrict p, const State& s, int, float* __restrict w) {
        int8_t q[32];
        nibbles(p + 4, q, 0);
        for (int l = 0; l < 32; ++l) w[l] = float(q[l]) * s.d + s.m;
    }
};

// Q5_0 and Q5_1: the fifth bit of weight i is bit i of the 32-bit qh.
template <bool kMin>
struct DecQ5 {
    static constexpr int kQK = 32, kBytes = kMin ? 24 : 22;
    struct State {
        float d, m;
        uint32_t qh;
    };
    static State prepare(const uint8_t* p) {
        return {half_at(p), kMin ? half_at(p + 2) : 0.0f, quant::load_u32(p + (kMin ? 4 : 2))};
    }
    static void chunk(const uint8_t* __restrict p, const State& s, int, float* __restrict w) {
        int8_t q[32];
        nibbles(p + (kMin ? 8 : 6), q, 0);
        for (int l = 0; l < 32; ++l) q[l] = int8_t(q[l] | (((s.qh >> l) & 1u) << 4));
        if constexpr (kMin) {
            for (int l = 0; l < 32; ++l) w[l] = float(q[l]) * s.d + s.m;
        } else {
            for (int l = 0; l < 32; ++l) w[l] = float(q[l] - 16) * s.d;
        }
    }
};

struct DecQ8_0 {
    static constexpr int kQK = 32, kBytes = 34;
    struct State {
        float d;
    };
    static State prepare(const uint8_t* p) { return {half_at(p)}; }
    static void chunk(const uint8_t* __restrict p, const State& s, int, float* __restrict w) {
        const auto* qs = reinterpret_cast<const int8_t*>(p + 2);
        for (int l = 0; l < 32; ++l) w[l] = float(qs[l]) * s.d;
    }
};

struct DecQ2_K {
    static constexpr int kQK = 256, kBytes = 84;
    struct State {
        float dl[16], ml[16];  // d * scale and dmin * min per 16 weights
    };
    static State prepare(const uint8_t* p) {
        State s;
        const float d = half_at(p + 80), dmin = half_at(p + 82);
        for (int k = 0; k < 16; ++k) {
            s.dl[k] = d * float(p[k] & 0xF);
            s.ml[k] = dmin * float(p[k] >> 4);
        }
        return s;
    }
    static void chunk(const uint8_t* __restrict p, const State& s, int c, float* __restrict w) {
        const uint8_t* qs = p + 16 + 32 * (c / 4);
        const int shift = 2 * (c % 4);
        int8_t q[32];
        for (int l = 0; l < 32; ++l) q[l] = int8_t((qs[l] >> shift) & 3);
        scale_pairs(q, s.dl + 2 * c, s.ml + 2 * c, w);
    }
};

struct DecQ3_K {
    static constexpr int kQK = 256, kBytes = 110;
    struct State {
        float dl[16];
    };
    static State prepare(const uint8_t* p) {
        State s;
        int8_t scales[16];
        quant::q3k_scales(p + 96, scales);
        const float d = half_at(p + 108);
        for (int k = 0; k < 16; ++k) s.dl[k] = d * float(scales[k]);
        return s;
    }
    static void chunk(const uint8_t* __restrict p, const State& s, int c, float* __restrict w) {
        const uint8_t* hmask = p;
        const uint8_t* qs = p + 32 + 32 * (c / 4);
        const int shift = 2 * (c % 4);
        int8_t q[32];
        for (int l = 0; l < 32; ++l) q[l] = int8_t(((qs[l] >> shift) & 3) - ((((hmask[l] >> c) & 1) ^ 1) << 2));
        scale_pairs(q, s.dl + 2 * c, nullptr, w);
    }
};

// Q4_K and Q5_K: eight sub-blocks of 32 with a 6-bit scale and min each.
template <bool kFive>
struct DecQ45_K {
    static constexpr int kQK = 256, kBytes = kFive ? 176 : 144;
    struct State {
        float dl[8], ml[8];
    };
    static State prepare(const uint8_t* p) {
        State s;
        const float d = half_at(p), dmin = half_at(p + 2);
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, mn;
            quant::q4k_scale_min(j, p + 4, &sc, &mn);
            s.dl[j] = d * float(sc);
            s.ml[j] = dmin * float(mn);
        }
        return s;
    }
    static void chunk(const uint8_t* __restrict p, const State& s, int c, float* __restrict w) {
        const uint8_t* qs = p + (kFive ? 48 : 16) + 32 * (c / 2);
        const int shift = 4 * (c % 2);
        int8_t q[32];
        for (int l = 0; l < 32; ++l) q[l] = int8_t((qs[l] >> shift) & 0xF);
        if constexpr (kFive)
            for (int l = 0; l < 32; ++l) q[l] = int8_t(q[l] | (((p[16 + l] >> c) & 1) << 4));
        for (int l = 0; l < 32; ++l) w[l] = s.dl[c] * float(q[l]) - s.ml[c];
    }
};

struct DecQ6_K {
    static constexpr int kQK = 256, kBytes = 210;
    struct State {
        float dl[16];
        int8_t q[256];  // the whole block's 6-bit values minus 32, dequantized with fixed shifts
    };
    static State prepare(const uint8_t* p) {
        State s;
        const float d = half_at(p + 208);
        for (int k = 0; k < 16; ++k) s.dl[k] = d * float(int8_t(p[192 + k]));
        for (int half = 0; half < 2; ++half) {
            const uint8_t* ql = p + 64 * half;
            const uint8_t* qh = p + 128 + 32 * half;
            int8_t* q = s.q + 128 * half;
            for (int l = 0; l < 32; ++l) {
                q[l] = int8_t(((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
                q[l + 32] = int8_t(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
                q[l + 64] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                q[l + 96] = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
        }
        return s;
    }
    static void chunk(const uint8_t* __restrict, const State& s, int c, float* __restrict w) {
        scale_pairs(s.q + 32 * c, s.dl + 2 * c, nullptr, w);
    }
};

}  // namespace edgerun::cpu_ref::generic
