// What the two split flash-decode kernels share (attention.cu on CUDA cores,
// attention_mma.cu on tensor cores): which row, KV head, query heads and keys a block
// takes, how its warps' partials become the split's partial, and how the splits'
// partials are merged: by attention_merge_kernel, launched after the split kernel, or
// (AttentionParams::merge_tickets) by the split block of each row, KV head and query-head
// chunk that finishes last. Grid: (n_splits, n_head_kv, query-head chunks x rows), as
// plan_attention gives it.
#pragma once

#include "attention_params.hpp"
#include "device_math.hpp"
#include "last_block.cuh"
#include "planted_faults.hpp"
#include "softmax_merge.hpp"
#include "warp.cuh"

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

// The splits' partials in the workspace: o per query (row x head) and split, then (m, l)
// pairs in the same order; slot = query * n_splits + split.
struct SplitPartials {
    float* o;
    float* ml;
};

__device__ inline SplitPartials split_partials(const AttentionParams& p) {
    return {p.workspace, p.workspace + size_t(p.n_rows) * p.n_head * p.n_splits * p.cache.head_dim};
}

// The splits of a row a merge takes: the tiled kernel writes every split (an empty one as
// m = -inf, o = 0); the split kernel those of the row's own range, a prefix of the splits.
__device__ inline int merged_splits(const AttentionParams& p, int row) {
    return p.tiles ? p.n_splits : nonempty_splits(split_kv_len(p, row), p.n_splits, kSplitTile);
}

// After the block's warps have left their partials (o unnormalised, m, l per query head;
// an empty warp's m = -inf) in shared memory and synchronised: the split's partial, into
// the workspace.
template <int Dim>
__device__ void write_split_partial(const AttentionParams& p, const SplitBlock& b,
                                    const float (*warp_o)[kSplitMaxGroup][Dim], const float (*warp_ml)[kSplitMaxGroup][2]) {
    const SplitPartials parts = split_partials(p);
    float* part_o = parts.o;
    float* part_ml = parts.ml;
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

// The largest maximum m_s of a query's splits first, first + step, ... below n_parts
// (-inf for none): a thread's share of M, which the caller reduces over its threads.
template <bool kFromL2>
__device__ float splits_max(const AttentionParams& p, size_t query, int n_parts, int first, int step) {
    const float* part_ml = split_partials(p).ml;
    float m = -INFINITY;
    for (int s = first; s < n_parts; s += step)
        m = fmaxf(m, load_written<kFromL2>(part_ml + 2 * (query * p.n_splits + s)));
    return m;
}

// Dim d of a query's output, merged from its n_parts splits' partials, given M, the
// largest of their maxima:
//   w_s = 2^(m_s - M),  out = (sum_s w_s o_s) / (sum_s w_s l_s),
// the splits in order. Against M every split's weight is known up front, so the loads of
// many splits are in flight at once (the loop unrolled); folded one split at a time into a
// running partial, as merge_partials does, each split's loads waited on the one before
// (a round trip to L2 per split: 33 of them a layer for Llama-3.2-1B at depth 4096).
template <bool kFromL2>
__device__ float merged_output(const AttentionParams& p, size_t query, int n_parts, float m, int d) {
    const SplitPartials parts = split_partials(p);
    const int dim = p.cache.head_dim;
    const size_t first_slot = query * p.n_splits;
    // kBatch splits' loads issued before the first is used.
    constexpr int kBatch = 8;
    float o = 0.0f, l = 0.0f;
    for (int first = 0; first < n_parts; first += kBatch) {
        float m_s[kBatch], l_s[kBatch], o_s[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
            const size_t slot = first_slot + min(first + i, n_parts - 1);
            m_s[i] = load_written<kFromL2>(parts.ml + 2 * slot);
            l_s[i] = load_written<kFromL2>(parts.ml + 2 * slot + 1);
            o_s[i] = load_written<kFromL2>(parts.o + slot * dim + d);
        }
        // Selects, not branches: behind a branch the loads above sank into it, one by one.
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
            // Planted: the partials added as if their maxima were equal.
            const float w = first + i >= n_parts                   ? 0.0f
                            : planted(PlantedFault::SplitMerge) ? 1.0f
                                                                : partial_weight(m_s[i], m);
            const bool empty = w == 0.0f;  // past the last split, or an empty one (its o may be anything)
            l = empty ? l : l + l_s[i] * w;
            o = empty ? o : o + o_s[i] * w;
        }
    }
    return l > 0.0f ? o / l : 0.0f;
}

// Value i of the attention's output ([n_rows][n_head][head_dim]), and with out_q its 8-bit
// form (AttentionParams::out_q): the calling warp's lanes store 32 consecutive values from
// a multiple of 32, one group of x's quantization, all of them or none.
__device__ __forceinline__ void store_attention_output(const AttentionParams& p, size_t i, float v) {
    store_float_or_half(p.out, p.out_is_f16, i, v);
    if (p.out_q) p.out_q[i] = uint8_t(quantize_q8_in_warp(v, int(i % 32), int(i / 32), p.out_segments));
}

// The merge of the block's group in its last block: warp g takes query head q_head0 + g,
// its lanes dims lane, lane + 32, ...; the same arithmetic as attention_merge_kernel's.
template <int Dim>
__device__ void merge_in_block(const AttentionParams& p, const SplitBlock& b, int n_parts) {
    static_assert(kSplitWarps >= kSplitMaxGroup, "a warp per query head of the block");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp >= b.n_q) return;
    const size_t query = size_t(b.row) * p.n_head + b.q_head0 + warp;
    const float m = warp_max(splits_max<true>(p, query, n_parts, lane, 32));
    for (int d = lane; d < Dim; d += 32)
        store_attention_output(p, query * Dim + d, merged_output<true>(p, query, n_parts, m, d));
}

// Whether the block's split holds no keys (it lies past the row's current length); such a
// block returns at once and no merge counts it. With merge tickets, a row of no keys at
// all leaves no block to merge it: its split 0 writes the row's output itself, zeros, as
// attention_merge_kernel does for it.
__device__ inline bool split_is_empty(const AttentionParams& p, const SplitBlock& b) {
    if (b.begin < b.end) return false;
    if (p.merge_tickets && b.split == 0) {
        const int dim = p.cache.head_dim;
        for (int i = threadIdx.x; i < b.n_q * dim; i += blockDim.x)  // whole warps: dim is a multiple of 32
            store_attention_output(p, (size_t(b.row) * p.n_head + b.q_head0) * dim + i, 0.0f);
    }
    return true;
}

// A split block's end: its partial into the workspace, then with merge tickets the merge
// of its group if it finished last.
template <int Dim>
__device__ void finish_split(const AttentionParams& p, const SplitBlock& b, const float (*warp_o)[kSplitMaxGroup][Dim],
                             const float (*warp_ml)[kSplitMaxGroup][2]) {
    write_split_partial<Dim>(p, b, warp_o, warp_ml);
    if (!p.merge_tickets) return;
    const int n_parts = merged_splits(p, b.row);
    // The group: the blocks that differ only in blockIdx.x, the split.
    int* counter = p.merge_tickets + size_t(blockIdx.z) * gridDim.y + blockIdx.y;
    if (takes_last_ticket(counter, 1, n_parts)) merge_in_block<Dim>(p, b, n_parts);
}

}  // namespace edgerun::cuda_orin
