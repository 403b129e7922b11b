// Activations as the GEMV kernels read them, and the 8-bit rounding rule shared by the
// activation quantizer and the INT8 KV cache.
//
// The q8 rule (one scale per 32 values) is exactly ggml's quantize_row_q8_0_ref and
// gguf's Q8_0.quantize_blocks: d = max|x| / 127, q = round-half-away(x * (1/d)), 0 when
// d is 0. The KV cache stores d as fp16 (like a Q8_0 block); activations keep d in float.
#pragma once

#include <edgerun/quant/blocks.hpp>

#include <cstdint>
#include <cmath>

namespace edgerun::cuda_orin {

inline constexpr int kQ8Group = 32;

// Quantized activations: `q` holds n_pad signed bytes (n_pad a multiple of 32, the tail
// zero), `d` one float scale per 32 values.
struct ActivationQ8 {
    const uint8_t* q;
    const float* d;
};

// Everything a GEMV may read of its input: q8 for quantized weights (dp4a), float for F16
// and for quantized weights when q8.q is null (the exact path).
struct Activation {
    ActivationQ8 q8;
    const float* f;  // n_pad floats, the tail zero
    int32_t n;       // logical length
    int32_t n_pad;   // rounded up to 32
    // A fused RMS_NORM: the row of f is normalised, times this weight, as the one-row GEMV
    // stages it in shared memory (other launches are refused); null: none.
    const float* norm = nullptr;
    float norm_eps = 0.0f;
};

// Where the GEMV puts 16-byte unit u (four floats) of a row of x it stages in shared
// memory. Rows of eight units (128 bytes, 32 floats) stay in place; inside one, the units
// are permuted by an XOR with a function of the row. A 16-byte shared load is served a
// quarter-warp at a time, and the eight lanes of a quarter read eight different tasks: at
// one 128-byte row per task, unpermuted, they would all hit the same four banks. The
// function makes the eight lanes hit eight different groups of four banks for the task
// order of every weight type (quant_tasks.hpp; test_kernel_math.cpp checks each).
ER_HD int staged_unit(int u) {
    const int r = (u >> 3) & 7;
    const int swizzle = ((r >> 2) & 1) | ((((r >> 1) ^ r) & 1) << 1) | ((r & 1) << 2);
    return u ^ swizzle;
}

// The stage of n_x rows of float x in two parts: every row's values (16-byte units at
// their staged_unit places), then every row's segment sums (one float per 16 values:
// the sum of x that the dot of a type with a minimum subtracts, quant_tasks.hpp).
struct FloatStage {
    int sums_offset, bytes;
};

ER_HD FloatStage float_stage(int n_x, int n_pad) {
    const int x_bytes = n_x * n_pad * 4;
    return {x_bytes, x_bytes + n_x * (n_pad / 16) * 4};
}

// The 8-bit form of the same stage (GemvLaunch::quantize_x): each block quantizes x by
// the q8 rule as it stages it. A segment's 16 bytes are one 16-byte unit, and lanes 8q..
// 8q+7 load the units of eight consecutive tasks: for every type's task order those fall
// two to a group of four banks, unless the units of every other 128-byte row are
// reversed (XOR 7), which spreads them over all eight groups (test_kernel_math.cpp checks
// each type).
ER_HD int staged_q8_unit(int u) { return u ^ (((u >> 3) & 1) * 7); }

// Units (16 bytes) a row's bytes take in the stage: the XOR above moves a unit within its
// group of 16, so a row is padded to whole groups.
ER_HD int q8_stage_row_units(int n_pad) { return (n_pad / 16 + 15) / 16 * 16; }

// The stage of n_x rows in two parts, each 16-byte aligned: every row's bytes, then every
// row's segment words (8 bytes per 16 values: the float scale of the segment's group of
// 32, and the int32 sum of its bytes), read together in one 8-byte load.
struct Q8Stage {
    int meta_offset, bytes;
};

ER_HD Q8Stage q8_stage(int n_x, int n_pad) {
    const int q_bytes = n_x * q8_stage_row_units(n_pad) * 16;
    return {q_bytes, q_bytes + n_x * (n_pad / 16) * 8};  // a multiple of 16: n_pad is of 32
}

ER_HD float q8_scale(float amax) { return amax / 127.0f; }
ER_HD float q8_inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }
ER_HD int8_t q8_round(float x, float inverse_d) { return int8_t(roundf(x * inverse_d)); }

// One group of 32 values of the INT8 KV cache: the bytes and the fp16 scale a Q8_0 block
// of the same values would hold.
ER_HD uint16_t kv_q8_quantize_group(const float* x, int8_t* q) {
    float amax = 0.0f;
    for (int i = 0; i < kQ8Group; ++i) amax = fmaxf(amax, fabsf(x[i]));
    const float d = q8_scale(amax);
    const float inverse = q8_inverse(d);
    for (int i = 0; i < kQ8Group; ++i) q[i] = q8_round(x[i], inverse);
    return quant::fp32_to_fp16(d);
}

ER_HD float kv_q8_value(int8_t q, uint16_t d_half) { return quant::fp16_to_fp32(d_half) * float(q); }

// Activations: the same rule with d kept in float (no reason to round it here).
ER_HD float activation_q8_quantize_group(const float* x, int8_t* q) {
    float amax = 0.0f;
    for (int i = 0; i < kQ8Group; ++i) amax = fmaxf(amax, fabsf(x[i]));
    const float d = q8_scale(amax);
    const float inverse = q8_inverse(d);
    for (int i = 0; i < kQ8Group; ++i) q[i] = q8_round(x[i], inverse);
    return d;
}

}  // namespace edgerun::cuda_orin
