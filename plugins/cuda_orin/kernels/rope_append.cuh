// rope_append's work on one head of the token being decoded: optional per-head RMSNorm
// (Qwen3's q_norm/k_norm), RoPE, then q rotated in place, or k and v stored into the cache
// at the token's position. Done by rope_append_kernel (rope_append.cu), a block a head,
// and by the Q/K/V GEMV's block that stores a head's last rows (gemv.cu, with
// GemvLaunch::rope_append_tickets): one code, so the two give the same bits.
#pragma once

#include "device_math.hpp"
#include "kernel_params.hpp"
#include "warp.cuh"

namespace edgerun::cuda_orin {

// Stores one value of a token's K or V row into the cache. For Q8 every warp holds one
// group of 32 dims (head_dim is a multiple of 32) and quantizes it like
// kv_q8_quantize_group: the same max, scale, inverse and rounding, so the bytes match.
__device__ inline void store_kv(const KvCacheLayer& c, void* values, uint16_t* scales, int kv_head, int pos, int d,
                                float x) {
    const size_t token = size_t(kv_head) * c.n_ctx + pos;
    if (c.type == kKvF16) {
        static_cast<uint16_t*>(values)[token * c.head_dim + d] = float_to_half(x);
        return;
    }
    const float scale = q8_scale(warp_max(fabsf(x)));
    static_cast<int8_t*>(values)[token * c.head_dim + d] = q8_round(x, q8_inverse(scale));
    if (d % 32 == 0) scales[kv_q8_scale_index(token, c.head_dim, d)] = float_to_half(scale);
}

// Head `head` of p (the n_head query heads, then the KV heads, each of which also stores
// its V head), thread d taking dimension d. Every thread of the block calls it (block
// barriers); threads from head_dim on, whole warps, only take part in them. kFromL2: q, k
// and v were written by other blocks of this launch (last_block.cuh). `shared`: the
// block's kRopeAppendSharedBytes for the head's row and a block reduction.
template <bool kFromL2>
__device__ void rope_append_head(const RopeAppendParams& p, int head, float* shared) {
    float* row = shared;
    float* scratch = shared + kRopeAppendMaxHeadDim;
    const int d = threadIdx.x, dim = p.rope.head_dim;
    const bool in_head = d < dim;
    const bool is_q = head < p.n_head;
    const int kv_head = head - p.n_head;
    const int pos = *p.pos;
    const KvCacheLayer cache =
        p.seq ? sequence_cache(p.cache, *p.seq, p.seq_stride_values, p.seq_stride_scales) : p.cache;

    // Every load first: the barriers below keep a load from moving ahead of them, and
    // each one left there would be a round trip of its own after the last.
    const float* norm = is_q ? p.q_norm : p.k_norm;
    const bool rotates = d < p.rope.n_rot;
    const int pair = !rotates ? 0 : p.rope.mode == kRopeNeox ? d % (p.rope.n_rot / 2) : d / 2;
    float x = 0.0f, v = 0.0f, norm_weight = 1.0f, factor = 1.0f;
    if (in_head) {
        x = is_q ? load_written<kFromL2>(p.q + size_t(head) * dim + d)
                 : load_written<kFromL2>(p.k + size_t(kv_head) * dim + d);
        if (!is_q) v = load_written<kFromL2>(p.v + size_t(kv_head) * dim + d);
        if (norm) norm_weight = norm[d];
        if (rotates && p.rope.freq_factors) factor = p.rope.freq_factors[pair];
    }
    if (norm) {
        const float inv_rms = rsqrtf(block_sum(x * x, scratch) / float(dim) + p.norm_eps);
        if (in_head) x *= inv_rms * norm_weight;
    }

    if (in_head) row[d] = x;
    __syncthreads();
    if (rotates) {
        int first, second;
        rope_pair_dims(p.rope, pair, &first, &second);
        float s, c;
        sincosf(rope_angle(p.rope, pos, pair, factor), &s, &c);
        x = d == first ? row[first] * c - row[second] * s : row[first] * s + row[second] * c;
    }
    __syncthreads();  // `row` is rewritten by the block's next head
    if (!in_head) return;

    if (is_q) {
        p.q[size_t(head) * dim + d] = x;
        return;
    }
    if (pos < 0 || pos >= cache.n_ctx) return;  // the whole block agrees: no warp is left half-way
    store_kv(cache, cache.k, cache.k_scales, kv_head, pos, d, x);
    store_kv(cache, cache.v, cache.v_scales, kv_head, pos, d, v);
}

}  // namespace edgerun::cuda_orin
