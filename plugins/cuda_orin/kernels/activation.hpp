// Activations as the GEMV kernels read them, and the 8-bit rounding rule shared by the
// activation quantizer and the INT8 KV cache.
//
// The q8 rule (one scale per 32 values) is exactly ggml's quantize_row_q8_0_ref and
// gguf's Q8_0.quantize_blocks: d = max|x| / 127, q = round-half-away(x * (1/d)), 0 when
// d is 0. The KV cache stores d as fp16 (like a Q8_0 block); activations keep d in float.
#pragma once

#include "device_math.hpp"

#include <edgerun/quant/blocks.hpp>

#include <cstdint>
#include <cmath>

namespace edgerun::cuda_orin {

inline constexpr int kQ8Group = 32;

// The word pair 8-bit x keeps per segment of 16 values, beside its bytes (ActivationQ8,
// Q8Stage): the float bits of the scale of the segment's group of 32, then the sum of its
// 16 bytes, read together in one 8-byte load. The sum is what the dot of a type with a
// minimum or a zero point subtracts (segment_dot, quant_tasks.hpp); kept here, it is made
// once per x instead of by four dp4a in every task of every row.
ER_HD Words2 q8_segment_words(float d, int32_t sum) { return {{quant::float_to_bits(d), uint32_t(sum)}}; }

// Quantized activations: `q` holds n_pad signed bytes (n_pad a multiple of 32, the tail
// zero), `segments` a word pair per 16 values (q8_segment_words).
struct ActivationQ8 {
    const uint8_t* q;
    const Words2* segments;
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
    // x.q8 made by the GEMV before (GemvLaunch::q8_out) from a row that an RMS norm
    // follows: the bytes of the row times the norm's weight, without the norm's scale,
    // which is here (Q8Out::norm_scale); each output's dot is multiplied by it. Null: x.q8
    // is x itself.
    const float* norm_scale = nullptr;
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
// row's segment words (q8_segment_words).
struct Q8Stage {
    int segments_offset, bytes;
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

// The word pair of the segment of 16 bytes q of a group with scale d, summed one byte at
// a time (the kernels sum in a warp: quantize_q8_in_warp).
ER_HD Words2 q8_segment_words_of(float d, const int8_t* q) {
    int32_t sum = 0;
    for (int i = 0; i < 16; ++i) sum += q[i];
    return q8_segment_words(d, sum);
}

// ---------------------------------------------------------------- readers of x --
// What a GEMV thread reads of x for a segment of 16 weights (quant_tasks.hpp), by where x
// is: prepared in global memory or staged by the block in shared memory, as floats or
// 8-bit. A segment is named by its group of 256 values and its offset in it.

// 16 values of 8-bit x: the bytes, the scale of their group of 32, the sum of the bytes.
struct Q8Segment {
    Words4 q;
    float d;
    int32_t sum;
};

ER_HD Q8Segment q8_segment(const Words4& q, const Words2& words) {
    return {q, quant::bits_to_float(words.w[0]), int32_t(words.w[1])};
}

// Where a thread reads 8-bit activations, a segment at a time.
// GlobalQ8X reads a row prepared in global memory (by prepare.cu, or by the GEMV that
// wrote it: GemvLaunch::q8_out); StagedQ8X reads the block's copy in shared memory, which
// the GEMV quantized from float x as it staged it (gemv_stage.cuh). Both hold a segment's
// scale and sum in one word pair (q8_segment_words), and the same bytes, scales and sums,
// so the dots are the same either way.
struct GlobalQ8X {
    static constexpr bool kQ8 = true;
    ActivationQ8 x;
    ER_HD Q8Segment segment(int group, int offset) const {
        return q8_segment(load_16B(x.q + (256 * group + offset)), load_8B(x.segments + (16 * group + offset / 16)));
    }
    ER_HD GlobalQ8X row_at(int r, int n_pad) const {
        return {{x.q + int64_t(r) * n_pad, x.segments + int64_t(r) * (n_pad / 16)}};
    }
};

struct StagedQ8X {
    static constexpr bool kQ8 = true;
    const Words4* units;  // one row's bytes, 16-byte unit u at staged_q8_unit(u)
    const Words2* segments;  // a word pair per segment (q8_segment_words)
    // staged_q8_unit moves a unit only inside its 16 (one group of 256 values): unit 16
    // group + v is at 16 group + staged_q8_unit(v), the second term the same for every
    // task of a thread (TaskIndex).
    ER_HD Q8Segment segment(int group, int offset) const {
        const Words2 words = load_shared<Words2>(segments + (16 * group + offset / 16));
        return q8_segment(load_shared<Words4>(units + (16 * group + staged_q8_unit(offset / 16))), words);
    }
    // Row 0 of the n_x rows a GEMV block quantized into `stage` (Q8Stage).
    ER_HD static StagedQ8X in_stage(const void* stage, int n_x, int n_pad) {
        const uint8_t* bytes = static_cast<const uint8_t*>(stage);
        return {static_cast<const Words4*>(stage), reinterpret_cast<const Words2*>(bytes + q8_stage(n_x, n_pad).segments_offset)};
    }
    // The stage holds rows one after another in each of its parts (Q8Stage).
    ER_HD StagedQ8X row_at(int r, int n_pad) const {
        return {units + int64_t(r) * q8_stage_row_units(n_pad), segments + int64_t(r) * (n_pad / 16)};
    }
};

// Where a thread reads float activations: eight values at `pos` (a multiple of 8) of one
// row of x, in two 16-byte loads; or the 16 values of a segment, whose four loads share
// one address computation, and their sum. GlobalFloatX reads the row in global memory
// and adds the sum from the four loads; StagedFloatX reads the block's copy in shared
// memory (FloatStage: 16-byte units placed by staged_unit, then the segments' sums, which
// gemv.cu's stage adds in the same order), so the dots are the same either way. Two
// types, not a flag, so that the compiler sees which memory each load reads.
struct Words8 {
    Words4 a, b;
};

struct GlobalFloatX {
    static constexpr bool kQ8 = false;
    const float* row;
    ER_HD Words8 load8(int pos) const { return {load_16B(row + pos), load_16B(row + pos + 4)}; }
    ER_HD GlobalFloatX row_at(int r, int n_pad) const { return {row + int64_t(r) * n_pad}; }

    struct Segment16 {
        const float* first;
        ER_HD Words4 load4(int part) const { return load_16B(first + 4 * part); }  // values 4 part .. 4 part + 3
        // From the sums of the four loads (each added in order): (0 + 1) + (2 + 3).
        ER_HD float sum(const float (&part_sums)[4]) const {
            return (part_sums[0] + part_sums[1]) + (part_sums[2] + part_sums[3]);
        }
    };
    ER_HD Segment16 segment(int group, int offset) const { return {row + (256 * group + offset)}; }
};

struct StagedFloatX {
    static constexpr bool kQ8 = false;
    const float* row;
    const float* sums;  // the row's segment sums
    // Units 2k and 2k + 1 are at staged_unit(2k) and staged_unit(2k) ^ 1 (the swizzle is an
    // XOR of the low three bits with a function of the 32-value row both are in).
    ER_HD Words8 load8(int pos) const {
        const Words4* units = reinterpret_cast<const Words4*>(row);
        const int first = staged_unit(pos / 4);
        return {load_shared<Words4>(units + first), load_shared<Words4>(units + (first ^ 1))};
    }
    ER_HD StagedFloatX row_at(int r, int n_pad) const {
        return {row + int64_t(r) * n_pad, sums + int64_t(r) * (n_pad / 16)};
    }
    // Row 0 of the n_x rows a GEMV block staged in `stage` (FloatStage).
    ER_HD static StagedFloatX in_stage(const void* stage, int n_x, int n_pad) {
        const uint8_t* bytes = static_cast<const uint8_t*>(stage);
        const float* sums = reinterpret_cast<const float*>(bytes + float_stage(n_x, n_pad).sums_offset);
        return {static_cast<const float*>(stage), sums};
    }

    // staged_unit permutes units only inside a 32-value row, by an XOR of the low three
    // bits with a function of the row's place among eight (one group of 256 values): so
    // unit 64 group + v is at 64 group + staged_unit(v), the second term the same for
    // every task of a thread (TaskIndex), and unit u0 + part, u0 a multiple of 4 and
    // part < 4, is at staged_unit(u0) ^ part.
    struct Segment16 {
        const Words4* units;
        int first;
        const float* sum_at;
        ER_HD Words4 load4(int part) const { return load_shared<Words4>(units + (first ^ part)); }
        ER_HD float sum(const float (&)[4]) const { return *sum_at; }
    };
    ER_HD Segment16 segment(int group, int offset) const {
#if !defined(__CUDA_ARCH__)
        if (offset % 16 != 0 || offset < 0 || offset >= 256) {
            std::fprintf(stderr, "cuda_orin: a staged segment of x at offset %d of a group, not a multiple of 16 below 256\n",
                         offset);
            std::abort();
        }
#endif
        return {reinterpret_cast<const Words4*>(row) + 64 * group, staged_unit(offset / 4), sums + (16 * group + offset / 16)};
    }
};

}  // namespace edgerun::cuda_orin
