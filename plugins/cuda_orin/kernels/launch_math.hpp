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

// Number of KV splits for a context of n_ctx positions: enough blocks for about four per
// SM at full context, each split at least 4 tiles of keys.
inline int choose_kv_splits(int n_ctx, int n_head_kv, int n_sms) {
    const int want = (4 * std::max(n_sms, 1) + std::max(n_head_kv, 1) - 1) / std::max(n_head_kv, 1);
    const int most = std::max(1, n_ctx / (4 * kAttentionTile));
    return std::clamp(want, 1, most);
}

// Floats of scratch the split attention needs: o per head and split, then (m, l) pairs.
inline int64_t attention_workspace_floats(int n_head, int head_dim, int n_splits) {
    return int64_t(n_head) * n_splits * (head_dim + 2);
}

}  // namespace edgerun::cuda_orin
