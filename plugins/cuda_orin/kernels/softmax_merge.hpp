// Split-KV ("flash-decode") softmax arithmetic, shared by the attention kernel, its merge
// kernel and the CPU tests.
//
// Scores are kept in the log2 domain (s * log2 e, folded into the softmax scale) so every
// exponential is an exp2. A partial result over some keys is (m, l, o): m the largest
// score seen, l = Σ exp2(s - m), o = Σ exp2(s - m) v. Two partials combine exactly:
//   M = max(m_a, m_b);  l = l_a 2^(m_a-M) + l_b 2^(m_b-M);  o likewise,
// and the attention output is o / l. An empty partial has m = -inf and l = 0.
#pragma once

#include <edgerun/quant/blocks.hpp>

#include <cmath>

namespace edgerun::cuda_orin {

inline constexpr float kLog2e = 1.4426950408889634f;

// 2^(m_part - m_total): the weight of a partial with maximum m_part in a total with
// maximum m_total >= m_part; 0 for an empty partial (which also avoids -inf - -inf).
ER_HD float partial_weight(float m_part, float m_total) {
    return m_part == -INFINITY ? 0.0f : exp2f(m_part - m_total);
}

struct SoftmaxPartial {
    float m;
    float l;
};

ER_HD SoftmaxPartial empty_partial() { return {-INFINITY, 0.0f}; }

// Folds a tile whose largest score is tile_max into a running partial: returns the
// factor by which the running l and o must be multiplied, and the new maximum in *m.
// The tile's probabilities are then exp2(s - *m).
ER_HD float online_softmax_rescale(float* m, float tile_max) {
    const float m_new = fmaxf(*m, tile_max);
    const float factor = partial_weight(*m, m_new);
    *m = m_new;
    return factor;
}

// Combines b into a; *wa and *wb receive the factors for a's and b's o vectors.
ER_HD SoftmaxPartial merge_partials(SoftmaxPartial a, SoftmaxPartial b, float* wa, float* wb) {
    const float m = fmaxf(a.m, b.m);
    *wa = partial_weight(a.m, m);
    *wb = partial_weight(b.m, m);
    return {m, a.l * *wa + b.l * *wb};
}

// Keys in every split of split_range but the last non-empty one.
ER_HD int split_chunk(int kv_len, int n_splits, int granule) {
    const int chunk = (kv_len + n_splits - 1) / n_splits;
    return (chunk + granule - 1) / granule * granule;
}

// The fixed split of the KV range [0, kv_len) into n_splits pieces: the grid always has
// n_splits blocks (so a captured graph never changes shape); the pieces grow with
// kv_len, are multiples of `granule` keys, and splits past the end are empty.
ER_HD void split_range(int kv_len, int n_splits, int granule, int split, int* begin, int* end) {
    const int chunk = split_chunk(kv_len, n_splits, granule);
    const int b = split * chunk;
    *begin = b < kv_len ? b : kv_len;
    const int e = b + chunk;
    *end = e < kv_len ? e : kv_len;
}

// How many splits of split_range hold keys: they are a prefix, the rest are empty.
ER_HD int nonempty_splits(int kv_len, int n_splits, int granule) {
    if (kv_len <= 0) return 0;
    const int chunk = split_chunk(kv_len, n_splits, granule);
    const int n = (kv_len + chunk - 1) / chunk;
    return n < n_splits ? n : n_splits;
}

}  // namespace edgerun::cuda_orin
