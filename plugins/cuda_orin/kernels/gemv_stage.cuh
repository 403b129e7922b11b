// How a GEMV block stages its input x in shared memory (gemv.cu, GemvLaunch::stage_x and
// quantize_x): float x copied with each segment's sum (FloatStage), normalised on the way
// for a fused RMS norm, or quantized to 8 bits by prepare's rule (Q8Stage). Every block
// of a launch repeats this over the whole row, so it is kept short.
#pragma once

#include "kernel_params.hpp"
#include "warp.cuh"

namespace edgerun::cuda_orin {

// The sum of a segment's 16 values, a unit (four) per lane of four consecutive lanes
// aligned to four, added as GlobalFloatX::Segment16::sum adds them: each unit's four in
// order, then (0 + 1) + (2 + 3). Every lane of the warp calls it.
__device__ inline float segment_sum(const Words4& v) {
    float s = quant::bits_to_float(v.w[0]);
    for (int j = 1; j < 4; ++j) s += quant::bits_to_float(v.w[j]);
    s += __shfl_xor_sync(kFullMask, s, 1);
    return s + __shfl_xor_sync(kFullMask, s, 2);
}

__device__ inline float* stage_sums(Words4* stage, int n_x, int n_pad) {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(stage) + float_stage(n_x, n_pad).sums_offset);
}

// kBatch: units of x (16 bytes) a thread loads at once while staging, before it stores
// the first. With four a stage of 2560 values is one round trip to L2 instead of three,
// 9728 values three instead of ten; with two, two and five. One unit an iteration, the
// loads waited one after another: the compiler neither unrolled the loop nor moved the
// next load ahead of the shared store. Each kernel takes the most its registers allow
// without a spill (gemv_kernel's kStageBatch).

// Units first, first + blockDim.x, ... (kBatch of them) of a row of n_units 16-byte
// units, all loads issued before any is used; those past the row are left unset.
template <int kBatch>
__device__ __forceinline__ void load_unit_batch(const float* row, int first, int n_units, Words4 (&v)[kBatch]) {
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
        const int u = first + b * blockDim.x;
        if (u < n_units) v[b] = load_16B(row + 4 * u);
    }
}

// Copies n_x rows of float activations into `stage` (FloatStage): each row's 16-byte
// units at their staged_unit places, then each segment's sum. A lane takes a unit of
// each of kBatch groups of the block's threads; the loop's bound is the same for the
// lanes of a warp (shuffles), and whole segments are in or out (a row is a multiple of 8
// units). Waits for the whole block's copy.
template <int kBatch>
__device__ void stage_x(const Activation& x, int n_x, Words4* stage) {
    const int units_per_row = x.n_pad / 4, n_units = n_x * units_per_row, lane = threadIdx.x % 32;
    float* sums = stage_sums(stage, n_x, x.n_pad);
    for (int first = threadIdx.x - lane; first < n_units; first += kBatch * blockDim.x) {
        Words4 v[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const int i = first + lane + b * blockDim.x, r = i / units_per_row, u = i % units_per_row;
            v[b] = i < n_units ? load_16B(x.f + int64_t(r) * x.n_pad + 4 * u) : Words4{};
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const int i = first + lane + b * blockDim.x, r = i / units_per_row, u = i % units_per_row;
            if (i < n_units) store_shared(stage + r * units_per_row + staged_unit(u), v[b]);
            const float sum = segment_sum(v[b]);
            if (i < n_units && u % 4 == 0) sums[r * (x.n_pad / 16) + u / 4] = sum;
        }
    }
    __syncthreads();
}

__device__ inline float sum_of_squares(const Words4& v) {
    float s = 0.0f;
    for (int j = 0; j < 4; ++j) s += quant::bits_to_float(v.w[j]) * quant::bits_to_float(v.w[j]);
    return s;
}

// x * rsqrt(mean(x^2) + eps) as rms_norm_kernel forms it, from each thread's sum of the
// squares of the units u = threadIdx.x, threadIdx.x + blockDim.x, ... of the row: both
// stages below sum in that order, so they normalise x to the same floats.
__device__ inline float staged_inverse_rms(const Activation& x, float sum_sq) {
    __shared__ float warp_sums[kGemvWarps];
    ER_SHARED_ARRAY(warp_sums);
    sum_sq = warp_sum(sum_sq);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum_sq;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < kGemvWarps; ++w) total += warp_sums[w];
    return rsqrtf(total / float(x.n) + x.norm_eps);
}

// The one-row kernel's stage_x. With x.norm (a fused RMS_NORM) the row is also normalised:
// the squares are summed during the copy, and after the barrier the copy needs anyway
// each thread scales the units it copied and the segments' sums are taken from the
// scaled values; one more barrier. Every block repeats this
// over a few KiB, which costs less than a launch of its own and a round trip of the
// normalised row through memory. (One row only: in the multi-row kernel the same code
// made ptxas spill in the main loop.)
template <int kBatch>
__device__ void stage_x_row(const Activation& x, Words4* stage) {
    if (!x.norm) return stage_x<kBatch>(x, 1, stage);
    const int units_per_row = x.n_pad / 4;
    float sum_sq = 0.0f;
    for (int first = threadIdx.x; first < units_per_row; first += kBatch * blockDim.x) {
        Words4 v[kBatch];  // the batch's loads first; the sum in unit order
        load_unit_batch(x.f, first, units_per_row, v);
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const int u = first + b * blockDim.x;
            if (u >= units_per_row) continue;
            store_shared(stage + staged_unit(u), v[b]);
            sum_sq += sum_of_squares(v[b]);
        }
    }
    const float inv_rms = staged_inverse_rms(x, sum_sq);
    float* sums = stage_sums(stage, 1, x.n_pad);
    const int lane = threadIdx.x % 32;
    for (int first = threadIdx.x - lane; first < units_per_row; first += kBatch * blockDim.x) {
        float norm[kBatch][4];  // the norm's weights of the batch's units, loaded at once
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const int u = first + lane + b * blockDim.x;
#pragma unroll
            for (int j = 0; j < 4; ++j) norm[b][j] = u < units_per_row ? load_f32(x.norm + 4 * u + j) : 0.0f;
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const int u = first + lane + b * blockDim.x;
            Words4 v{};
            if (u < units_per_row) {
                v = load_shared<Words4>(stage + staged_unit(u));
                for (int j = 0; j < 4; ++j)
                    v.w[j] = quant::float_to_bits(quant::bits_to_float(v.w[j]) * inv_rms * norm[b][j]);
                store_shared(stage + staged_unit(u), v);
            }
            const float sum = segment_sum(v);
            if (u < units_per_row && u % 4 == 0) sums[u / 4] = sum;
        }
    }
    __syncthreads();
}

// GemvLaunch::quantize_x: n_x rows of float x quantized into the stage (Q8Stage) by
// prepare's rule, normalised first if x.norm (one row). Every block repeats this over the
// whole row, so it is kept short: a lane takes four values (one 16-byte load), eight lanes
// a group of 32, whose largest magnitude three shuffles find; the lane packs its four
// bytes into one word, and each four lanes' sum (a segment's, for the types with a
// minimum) takes two more shuffles. A value a lane, as prepare does it, cost about three
// times the instructions, more than the dp4a loop after it.
template <int kBatch>
__device__ void stage_x_q8(const Activation& x, int n_x, uint8_t* stage) {
    float inv_rms = 1.0f;
    if (x.norm) {
        float sum_sq = 0.0f;
        const int n_units = x.n_pad / 4;
        for (int first = threadIdx.x; first < n_units; first += kBatch * blockDim.x) {
            Words4 v[kBatch];  // the batch's loads first; the sum in unit order
            load_unit_batch(x.f, first, n_units, v);
#pragma unroll
            for (int b = 0; b < kBatch; ++b)
                if (first + b * int(blockDim.x) < n_units) sum_sq += sum_of_squares(v[b]);
        }
        inv_rms = staged_inverse_rms(x, sum_sq);
    }
    Words2* segments = reinterpret_cast<Words2*>(stage + q8_stage(n_x, x.n_pad).segments_offset);
    const int quads_per_row = x.n_pad / 4, n_quads = n_x * quads_per_row, lane = threadIdx.x % 32;
    const int row_bytes = q8_stage_row_units(x.n_pad) * 16;
    // Quad j of row r, kBatch of them a thread, loaded first; the loop's bound is the
    // same for the lanes of a warp (shuffles), and whole groups of eight lanes are in or
    // out (quads_per_row is a multiple of 8).
    for (int first = threadIdx.x - lane; first < n_quads; first += kBatch * blockDim.x) {
        float f[kBatch][4];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const int i = first + lane + b * blockDim.x, j = i % quads_per_row;
            const bool active = i < n_quads;
            const Words4 v = active ? load_16B(x.f + int64_t(i / quads_per_row) * x.n_pad + 4 * j) : Words4{};
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                f[b][k] = quant::bits_to_float(v.w[k]);
                if (x.norm && active) f[b][k] = f[b][k] * inv_rms * load_f32(x.norm + 4 * j + k);  // prepare's order
            }
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const int i = first + lane + b * blockDim.x, r = i / quads_per_row, j = i % quads_per_row;
            float amax = 0.0f;
            for (int k = 0; k < 4; ++k) amax = fmaxf(amax, fabsf(f[b][k]));
            for (int offset = 4; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, offset));
            const float scale = q8_scale(amax), inverse = q8_inverse(scale);
            uint32_t word = 0;
            int32_t sum = 0;
            for (int k = 0; k < 4; ++k) {
                const int8_t q = q8_round(f[b][k], inverse);
                word |= uint32_t(uint8_t(q)) << (8 * k);
                sum += q;
            }
            for (int offset = 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullMask, sum, offset);
            if (i < n_quads) {
                uint8_t* at = stage + r * row_bytes + staged_q8_unit(j / 4) * 16 + 4 * (j % 4);
                *reinterpret_cast<uint32_t*>(at) = word;
                if (j % 4 == 0)
                    store_shared<Words2>(segments + r * (x.n_pad / 16) + j / 4, q8_segment_words(scale, sum));
            }
        }
    }
    __syncthreads();
}

}  // namespace edgerun::cuda_orin
