// Warp- and block-level reductions used by the kernels (device code only).
#pragma once

#include "activation.hpp"

#include <cmath>

namespace edgerun::cuda_orin {

inline constexpr unsigned kFullMask = 0xFFFFFFFFu;

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
    return v;
}

// Sum over the `width` consecutive lanes (a power of two) that v's lane belongs to.
__device__ __forceinline__ float group_sum(float v, int width) {
    for (int offset = width / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

// Sum over the 16 lanes of v's half of the warp (a segment of 8-bit x: q8_segment_words).
__device__ __forceinline__ int half_warp_sum(int v) {
    for (int offset = 8; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

// A warp quantizing group `group` of 32 values of 8-bit x by the q8 rule, one value a lane
// (v): returns the lane's byte; lanes 0 and 16 store their segment's word pair
// (q8_segment_words) at segments[2 group + lane / 16]. Every lane of the warp calls it.
__device__ __forceinline__ int8_t quantize_q8_in_warp(float v, int lane, int group, Words2* segments) {
    const float d = q8_scale(warp_max(fabsf(v)));
    const int8_t q = q8_round(v, q8_inverse(d));
    const int sum = half_warp_sum(q);
    if (lane % 16 == 0) segments[2 * group + lane / 16] = q8_segment_words(d, sum);
    return q;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every thread
// gets the result. `scratch` holds 32 floats; the call contains two __syncthreads.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = lane < n_warps ? scratch[lane] : 0.0f;
    total = warp_sum(total);
    __syncthreads();  // scratch may be reused right after
    return total;
}

// The largest v over the whole block, as block_sum (same scratch, same barriers).
__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = lane < n_warps ? scratch[lane] : -INFINITY;
    total = warp_max(total);
    __syncthreads();
    return total;
}

}  // namespace edgerun::cuda_orin
