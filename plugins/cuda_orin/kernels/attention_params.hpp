// Parameters of the attention kernels (attention.cu, attention_mma.cu,
// attention_tiles.cu) and their launch planning: plain structs beside kernel_params.hpp's,
// likewise without a CUDA header.
#pragma once

#include "kernel_params.hpp"

#if !defined(__CUDACC_RTC__)
#include <type_traits>  // for_attention_shape
#endif

namespace edgerun::cuda_orin {

// --------------------------------------------------------------- attention --

// The query tokens of n_rows step rows against the cache of one layer: for row r and
// query head h, out[r][h] = softmax(q[r][h] k^T * scale) v over positions [0, kv_len[r])
// of row r's sequence, query head h reading KV head h / (n_head/n_head_kv). Split over
// n_splits blocks of the KV sequence (choose_kv_splits) and merged. Lengths and sequences
// are read from device memory, so a captured launch serves any step of the same shape.
// A step's rows of one sequence (a prompt) each see the keys up to their own position:
// the causal mask is kv_len.
struct AttentionParams {
    const float* q = nullptr;  // [n_rows][n_head][head_dim]
    KvCacheLayer cache{};      // sequence 0's
    const int32_t* kv_len = nullptr;  // [n_rows]
    int32_t n_rows = 1;
    const int32_t* row_seq = nullptr;  // [n_rows]; null: every row is in sequence 0
    int64_t seq_stride_values = 0, seq_stride_scales = 0;
    int32_t n_head = 0;
    float scale = 0.0f;
    int32_t n_splits = 1;
    float* workspace = nullptr;  // attention_workspace_floats(n_rows * n_head, head_dim, n_splits)
    void* out = nullptr;         // [n_rows][n_head][head_dim]
    int32_t out_is_f16 = 0;
    // Cached positions the launch reads, each once, summed over its rows' sequences (the
    // host's count; kernels read lengths from kv_len): the launch profile's bytes only.
    int64_t positions_read = 0;
    // Tiled attention (attention_tiles.cu, tensor cores), for steps of many rows: with a
    // tile table the rows are taken in n_tiles tiles of rows of one sequence, whose
    // blocks load each K/V tile once for all the tile's rows and query heads
    // (fill_attention_tiles makes the table). Tile t's rows are tile_rows[tiles[2t] ..
    // tiles[2t] + tiles[2t + 1]), at most tiled_attention_rows_per_tile of them; tiles a
    // step leaves unused have none. n_splits > 1 splits each tile's KV range as the split
    // kernel does, merged by the same merge kernel.
    const int32_t* tiles = nullptr;
    const int32_t* tile_rows = nullptr;
    int32_t n_tiles = 0;
    // With tiles: K/V tiles in flight in a block, 1 or 2 (the next tile's copies issued,
    // by cp.async, before this one is computed; attention_tiles.cu). The same values.
    int32_t tile_stages = 1;
    // Without tiles: the split kernel's blocks on tensor cores (attention_mma.cu) instead
    // of CUDA cores (attention.cu); same grid, workspace and merge.
    int32_t mma = 0;
    // Without tiles: with these counters (attention_merge_tickets of them, zero before the
    // first launch, and zero again after each) the split kernel's last block of each row,
    // KV head and query-head chunk to finish merges that group's splits
    // (attention_split.cuh), and no merge kernel is launched: one launch fewer a layer.
    int32_t* merge_tickets = nullptr;
    // Without tiles, on tensor cores (mma): each warp asks L2 for its next tile's keys and
    // values before it loads this tile's, and for its first tile's values as it starts, so
    // that DRAM streams a tile ahead of the loads a warp waits on instead of one round
    // trip for its keys and another for its values per tile (attention_mma.cu), where
    // attention_prefetches says it does.
    int32_t prefetch_next_tile = 0;
    // Without tiles, on tensor cores (mma): each warp's tiles software-pipelined, a tile's
    // value loads and the next tile's key loads issued as soon as the tile's scores are
    // taken (attention_mma.cu); the same outputs bit for bit. Takes precedence over
    // prefetch_next_tile.
    int32_t pipeline_tiles = 0;
    // Without tiles, out float: the merge (the merge kernel, or the split kernel's last
    // blocks) also writes the output's 8-bit x, each group of 32 by one warp as prepare
    // quantizes it (quantize_q8_in_warp: the same bytes and segment words), rows of
    // n_head * head_dim values one after another; the output projection's GEMV reads it
    // instead of a prepare launch's (the backend's option merge_q8=1). Both or neither.
    uint8_t* out_q = nullptr;
    Words2* out_segments = nullptr;
};

// Whether the split kernel on tensor cores prefetches next tiles (prefetch_next_tile) for
// a head dim and cache type: not INT8 at head dim 128, which is held to 128 registers for
// four blocks an SM and has none left for the prefetches' addresses (with them ptxas
// spilled in its tile loop, sm_87 and sm_90).
ER_HD constexpr bool attention_prefetches(int head_dim, int32_t kv_type) { return kv_type == kKvF16 || head_dim == 64; }

// The head dims and cache types the split kernel is built for; other attention takes the
// general row kernel (attention_rows, graph_ops.cu). The tiled kernel takes the same.
ER_HD bool split_attention_supports(int head_dim, int32_t kv_type) {
    return (head_dim == 64 || head_dim == 128) && (kv_type == kKvF16 || kv_type == kKvQ8);
}

#if !defined(__CUDACC_RTC__)
// pick(dim, kv) for launch p's head dim and cache type (each a compile-time value:
// decltype(dim)::value), one of those split_attention_supports: the attention kernels'
// one switch from a launch to an instantiation, the CUDA launchers' and the emulation's.
template <class Pick>
auto for_attention_shape(const AttentionParams& p, Pick&& pick) {
    using std::integral_constant;
    if (p.cache.head_dim == 64)
        return p.cache.type == kKvF16 ? pick(integral_constant<int, 64>{}, integral_constant<int32_t, kKvF16>{})
                                      : pick(integral_constant<int, 64>{}, integral_constant<int32_t, kKvQ8>{});
    return p.cache.type == kKvF16 ? pick(integral_constant<int, 128>{}, integral_constant<int32_t, kKvF16>{})
                                  : pick(integral_constant<int, 128>{}, integral_constant<int32_t, kKvQ8>{});
}
#endif

// Whether an attention launch ends with the merge kernel: the split kernel's unless its
// blocks merge (merge_tickets), the tiled one's when it splits (with one split it writes
// the output itself).
inline bool attention_merges(const AttentionParams& p) { return p.tiles ? p.n_splits > 1 : !p.merge_tickets; }

// Grid of the split kernel for valid params: (n_splits, n_head_kv, query-head chunks x
// n_rows), of the tiled one (n_splits, n_head_kv, n_tiles); {0,0,0,0} when the params
// are invalid. head_dim 64 or 128; n_head a multiple of n_head_kv.
struct AttentionGrid {
    int splits, kv_heads, chunks, rows;
};
inline AttentionGrid plan_attention(const AttentionParams& p) {
    const KvCacheLayer& c = p.cache;
    if (!p.q || !p.kv_len || !p.workspace || !p.out || !c.k || !c.v || c.n_head_kv <= 0 || p.n_head <= 0 ||
        p.n_head % c.n_head_kv != 0 || p.n_splits < 1 || !split_attention_supports(c.head_dim, c.type) ||
        c.n_ctx <= 0 || (c.type == kKvQ8 && (!c.k_scales || !c.v_scales)) ||
        p.n_rows < 1 || (p.row_seq && p.seq_stride_values < int64_t(c.n_head_kv) * c.n_ctx * c.head_dim))
        return {0, 0, 0, 0};
    if (!p.out_q != !p.out_segments || (p.out_q && (p.tiles || p.out_is_f16))) return {0, 0, 0, 0};
    const int group = p.n_head / c.n_head_kv;
    if (p.tiles) {  // a block per split, KV head and tile, all query heads of the KV head
        if (!p.tile_rows || tiled_attention_rows_per_tile(group) == 0 || p.n_tiles < 1 || p.n_tiles > 65535 ||
            p.merge_tickets)
            return {0, 0, 0, 0};
        return {p.n_splits, c.n_head_kv, 1, p.n_tiles};
    }
    const int chunks = (group + kAttentionMaxGroup - 1) / kAttentionMaxGroup;
    if (int64_t(chunks) * p.n_rows > 65535) return {0, 0, 0, 0};  // gridDim.z
    return {p.n_splits, c.n_head_kv, chunks, p.n_rows};
}

// One sequence's INT8 cache widened to halves in the F16 cache's layout (K and V
// [n_head_kv][n_ctx][head_dim]) over positions [0, the longest of the rows' kv_len), for
// the tiled attention of a step whose rows are all of that sequence (the backend's option
// widen_kv=1): its blocks then stage halves, where over the INT8 cache each block widens
// every K/V tile it reads, once per tile of rows (32 times a layer in a 512-row step of
// Qwen3-4B). The halves are the tiled kernel's own (int8_unit_to_halves),
// so its outputs are the same bit for bit. The sequence (row 0's) and the lengths are read
// from device memory, so a captured launch serves any step of one sequence.
struct WidenKvParams {
    KvCacheLayer cache{};              // INT8, sequence 0's
    int64_t seq_stride_values = 0, seq_stride_scales = 0;
    const int32_t* row_seq = nullptr;  // [n_rows]; null: sequence 0
    const int32_t* kv_len = nullptr;   // [n_rows]
    int32_t n_rows = 0;
    uint16_t* k = nullptr;             // n_head_kv * n_ctx * head_dim halves each
    uint16_t* v = nullptr;
};

// The head dims the widening is built for are the tiled kernel's.
inline bool valid(const WidenKvParams& p) {
    const KvCacheLayer& c = p.cache;
    return c.type == kKvQ8 && split_attention_supports(c.head_dim, c.type) && c.k && c.v && c.k_scales && c.v_scales &&
           c.n_ctx > 0 && c.n_head_kv > 0 && c.n_head_kv <= 65535 && p.kv_len && p.n_rows > 0 && p.k && p.v &&
           (!p.row_seq || p.seq_stride_values >= int64_t(c.n_head_kv) * c.n_ctx * c.head_dim);
}

// The widening of tiled attention launch p's cache (the sequence of its row 0, up to its
// longest row) into halves k and v, each as many as the INT8 cache has values.
inline WidenKvParams widening_for(const AttentionParams& p, uint16_t* k, uint16_t* v) {
    WidenKvParams w;
    w.cache = p.cache;
    w.seq_stride_values = p.seq_stride_values;
    w.seq_stride_scales = p.seq_stride_scales;
    w.row_seq = p.row_seq;
    w.kv_len = p.kv_len;
    w.n_rows = p.n_rows;
    w.k = k;
    w.v = v;
    return w;
}

// Launch p reading the halves w made instead of its INT8 cache: an F16 cache of one
// sequence, so no row_seq.
inline AttentionParams reading_widened(AttentionParams p, const WidenKvParams& w) {
    p.cache.type = kKvF16;
    p.cache.k = w.k;
    p.cache.v = w.v;
    p.cache.k_scales = p.cache.v_scales = nullptr;
    p.row_seq = nullptr;
    p.seq_stride_values = p.seq_stride_scales = 0;
    return p;
}

}  // namespace edgerun::cuda_orin
