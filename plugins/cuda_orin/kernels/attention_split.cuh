// What the two split flash-decode kernels share (attention.cu on CUDA cores,
// attention_mma.cu on tensor cores): which row, KV head, query heads and keys a block
// takes, and how its warps' partials become the split's partial for
// attention_merge_kernel. Grid: (n_splits, n_head_kv, query-head chunks x rows), as
// plan_attention gives it.
#pragma once

#include "kernel_params.hpp"
#include "softmax_merge.hpp"

namespace edgerun::cuda_orin {

inline constexpr int kSplitWarps = kAttentionWarps, kSplitTile = kAttentionTile, kSplitMaxGroup = kAttentionMaxGroup;

struct SplitBlock {
    int row, kv_head, split;
    int q_head0, n_q;  // its query heads: q_head0 .. q_head0 + n_q - 1 (n_q <= kSplitMaxGroup)
    int begin, end;    // its keys; empty past the row's length (the merge skips it)
    KvCacheLayer cache;  // the row's sequence's
};

// The row's KV length, clamped to the cache.
__device__ inline int split_kv_len(const AttentionParams& p, int row) { return max(min(p.kv_len[row], p.cache.n_ctx), 0); }

__device__ inline SplitBlock split_block(const AttentionParams& p) {
    SplitBlock b;
    const int group = p.n_head / p.cache.n_head_kv;
    const int n_chunks = (group + kSplitMaxGroup - 1) / kSplitMaxGroup;
    b.split = blockIdx.x;
    b.kv_head = blockIdx.y;
    b.row = int(blockIdx.z) / n_chunks;
    const int chunk = int(blockIdx.z) % n_chunks;
    b.q_head0 = b.kv_head * group + chunk * kSplitMaxGroup;
    b.n_q = min(kSplitMaxGroup, group - chunk * kSplitMaxGroup);
    split_range(split_kv_len(p, b.row), p.n_splits, kSplitTile, b.split, &b.begin, &b.end);
    b.cache = p.row_seq ? sequence_cache(p.cache, p.row_seq[b.row], p.seq_stride_values, p.seq_stride_scales) : p.cache;
    return b;
}

// After the block's warps have left their partials (o unnormalised, m, l per query head;
// an empty warp's m = -inf) in shared memory and synchronised: the split's partial, into
// the workspace.
template <int Dim>
__device__ void write_split_partial(const AttentionParams& p, const SplitBlock& b,
                                    const float (*warp_o)[kSplitMaxGroup][Dim], const float (*warp_ml)[kSplitMaxGroup][2]) {
    float* part_o = p.workspace;
    float* part_ml = p.workspace + size_t(p.n_rows) * p.n_head * p.n_splits * Dim;
    for (int i = threadIdx.x; i < b.n_q * Dim; i += blockDim.x) {
        const int g = i / Dim, d = i % Dim;
        float m_all = -INFINITY;
        for (int w = 0; w < kSplitWarps; ++w) m_all = fmaxf(m_all, warp_ml[w][g][0]);
        float o = 0.0f, l_all = 0.0f;
        for (int w = 0; w < kSplitWarps; ++w) {
            const float weight = partial_weight(warp_ml[w][g][0], m_all);
            o += weight * warp_o[w][g][d];
            l_all += weight * warp_ml[w][g][1];
        }
        const size_t slot = (size_t(b.row) * p.n_head + b.q_head0 + g) * p.n_splits + b.split;
        part_o[slot * Dim + d] = o;
        if (d == 0) {
            part_ml[2 * slot] = m_all;
            part_ml[2 * slot + 1] = l_all;
        }
    }
}

}  // namespace edgerun::cuda_orin
