// Launch-shape decisions of the kernel library, as plain functions of the problem and
// the device's SM count (host-only C++, tested on the CPU). They fix grid shapes once
// per model and context size: nothing here depends on a per-step value, so a captured
// CUDA graph stays valid while positions and KV lengths change.
#pragma once

#include <algorithm>
#include <cstdint>

namespace edgerun::cuda_orin {

inline constexpr int kGemvWarps = 8;          // warps per GEMV block (256 threads)
inline constexpr int kAttentionWarps = 4;     // warps per attention block
inline constexpr int kAttentionTile = 32;     // keys per warp per step
inline constexpr int kAttentionMaxGroup = 4;  // query heads sharing one block's K/V loads

// Warps that share one GEMV row (split-K inside a block). One warp per row keeps the
// most rows in flight; when there are too few rows to give every SM about half its
// warp slots, rows are split across 2, 4 or 8 warps, but never into slices of fewer than
// 32 tasks (one pass of a warp).
inline int choose_warps_per_row(int64_t total_rows, int min_tasks_per_row, int n_sms) {
    const int64_t target_warps = int64_t(std::max(n_sms, 1)) * 32;
    int wpr = 1;
    while (wpr < kGemvWarps && total_rows * wpr < target_warps && min_tasks_per_row >= 32 * (wpr * 2)) wpr *= 2;
    return wpr;
}

// Rows per warp of the one-row GEMV (gemv_kernel). Every block stages x (copies the whole
// row, or quantizes it: GemvLaunch::quantize_x) before its warps take a row each, so
// blocks of more rows spend less on it per row; but fewer blocks than the SMs hold leave
// warp slots empty, and bigger blocks make a partial last wave cost more. Takes the R in
// 1..kGemvMaxRowsPerWarp that minimises waves(R) * (R + stage_cost), the time of a block
// in passes of its warps over one row each; stage_cost is the staging's time in such
// passes (the constants below); ties go to the smaller R.
inline constexpr int kGemvMaxRowsPerWarp = 8;
inline constexpr int kGemvBlocksPerSm = 3;  // gemv_kernel's __launch_bounds__
// A quantized stage against one pass of the block's warps over a Q4_K row of the same
// length, from the SASS instruction counts on sm_90 (kernels/README.md, "Rows per warp"):
// about as much as a pass of the dp4a loop. An estimate from the compiler, not a
// measurement; option gemv_rows_per_warp=N overrides the choice.
inline constexpr double kGemvQuantizeStageCost = 1.0;

inline int choose_rows_per_warp(const int64_t* rows, int n_ranges, int blocks_per_sm, int n_sms, double stage_cost) {
    const int64_t slots = int64_t(std::max(n_sms, 1)) * std::max(blocks_per_sm, 1);
    int best = 1;
    double best_time = 0.0;
    for (int r = 1; r <= kGemvMaxRowsPerWarp; ++r) {
        int64_t blocks = 0;
        for (int i = 0; i < n_ranges; ++i) blocks += (rows[i] + kGemvWarps * r - 1) / (kGemvWarps * r);
        const int64_t waves = (blocks + slots - 1) / slots;
        const double time = double(waves) * (r + stage_cost);
        if (r == 1 || time < best_time) {
            best = r;
            best_time = time;
        }
    }
    return best;
}

// Number of KV splits for a context of n_ctx positions: enough blocks for about four per
// SM at full context, each split at least 4 tiles of keys.
inline int choose_kv_splits(int n_ctx, int n_head_kv, int n_sms) {
    const int want = (4 * std::max(n_sms, 1) + std::max(n_head_kv, 1) - 1) / std::max(n_head_kv, 1);
    const int most = std::max(1, n_ctx / (4 * kAttentionTile));
    return std::clamp(want, 1, most);
}

// The tiled attention (attention_tiles.cu): a block of 4 warps takes 64 query vectors
// (rows x the query heads of one KV head), 16 per warp (the M of an m16n8k16 mma), and
// walks the KV range 32 keys at a time.
inline constexpr int kTiledAttentionWarps = 4;
inline constexpr int kTiledAttentionVectors = 16 * kTiledAttentionWarps;
inline constexpr int kTiledAttentionKeys = 32;

// Step rows one tile holds, all query heads of a KV head for each: 64 / group (16 for
// Llama's and Qwen3's groups of 4); 0 when a group is wider than a block.
inline int tiled_attention_rows_per_tile(int group) {
    return group > 0 && group <= kTiledAttentionVectors ? kTiledAttentionVectors / group : 0;
}

// Tiles a step of n_rows needs at most: each sequence's rows fill whole tiles but its
// last, so ceil(n_rows / rows_per_tile) plus one per further sequence, of which a step
// has at most min(n_rows, n_seqs) - 1.
inline int max_attention_tiles(int n_rows, int n_seqs, int rows_per_tile) {
    if (n_rows < 1 || rows_per_tile < 1) return 0;
    const int sequences = std::max(1, std::min(n_rows, n_seqs));
    return (n_rows + rows_per_tile - 1) / rows_per_tile + sequences - 1;
}

// The tiled attention's table for a step (AttentionParams::tiles, tile_rows): the rows
// (row_seq[r] in [0, n_seqs)) grouped by sequence, in step order within each, into
// tile_rows[n_rows]; each sequence's rows cut into tiles of rows_per_tile, into
// tiles[2 * max_tiles] as (first index into tile_rows, row count), unused tiles (0, 0).
// Returns the tiles used, at most max_attention_tiles(n_rows, n_seqs, rows_per_tile).
inline int fill_attention_tiles(const int32_t* row_seq, int n_rows, int n_seqs, int rows_per_tile, int32_t* tiles,
                                int32_t* tile_rows, int max_tiles) {
    int placed = 0, used = 0;
    for (int seq = 0; seq < n_seqs && placed < n_rows; ++seq) {
        const int first = placed;
        for (int r = 0; r < n_rows; ++r)
            if (row_seq[r] == seq) tile_rows[placed++] = r;
        for (int begin = first; begin < placed && used < max_tiles; begin += rows_per_tile, ++used) {
            tiles[2 * used] = begin;
            tiles[2 * used + 1] = std::min(rows_per_tile, placed - begin);
        }
    }
    for (int t = used; t < max_tiles; ++t) tiles[2 * t] = tiles[2 * t + 1] = 0;
    return used;
}

// KV splits of the tiled attention: like choose_kv_splits, about four blocks per SM over
// the tiles and KV heads, each split at least 8 key tiles at full context. A prompt chunk
// of hundreds of rows has enough tiles for one split; a verification step of a few rows
// over a long context needs many.
inline int choose_tiled_kv_splits(int n_tiles, int n_head_kv, int n_ctx, int n_sms) {
    const int64_t blocks = int64_t(std::max(n_tiles, 1)) * std::max(n_head_kv, 1);
    const int64_t want = (4 * int64_t(std::max(n_sms, 1)) + blocks - 1) / blocks;
    const int most = std::max(1, n_ctx / (8 * kTiledAttentionKeys));
    return int(std::clamp<int64_t>(want, 1, most));
}

// Floats of scratch the split attention needs: o per head and split, then (m, l) pairs.
inline int64_t attention_workspace_floats(int n_head, int head_dim, int n_splits) {
    return int64_t(n_head) * n_splits * (head_dim + 2);
}

// Counters the split kernel's merge in its last blocks needs (AttentionParams::
// merge_tickets): one per row, KV head and chunk of up to kAttentionMaxGroup query heads.
inline int64_t attention_merge_tickets(int n_head, int n_head_kv, int n_rows) {
    if (n_head_kv < 1) return 0;
    const int group = n_head / n_head_kv;
    return int64_t(n_head_kv) * ((group + kAttentionMaxGroup - 1) / kAttentionMaxGroup) * n_rows;
}

}  // namespace edgerun::cuda_orin
