// Causal grouped-query attention over the KV cache, as llama.cpp's unfused path
// (mul_mat, soft_max_ext with scale, mul_mat) defines it: scores = scale * q·k,
// p = exp(s - max) / sum (the sum in double), out = sum_j p_j v_j.
#include "ops.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace edgerun::cpu_ref {

void run_attention(const AttentionOp& op, KvCache& kv, const StepRows& rows_of_step, ThreadPool& pool, float* scores,
                   int64_t scores_per_thread) {
    const int32_t n_rows = rows_of_step.n;
    const er_attention_params& p = op.params;
    const int64_t q_width = int64_t{p.n_head} * p.head_dim_k;
    const int64_t k_width = int64_t{p.n_head_kv} * p.head_dim_k;
    const int64_t v_width = int64_t{p.n_head_kv} * p.head_dim_v;
    const int64_t out_width = int64_t{p.n_head} * p.head_dim_v;

    pool.run(n_rows, [&](int64_t r, int) {
        const int32_t seq = rows_of_step.seq[r], pos = rows_of_step.pos[r];
        for (int32_t g = 0; g < p.n_head_kv; ++g) {
            kv.encode_row(op.k + r * k_width + g * p.head_dim_k, p.head_dim_k, kv.k_row(op.layer, seq, pos, g));
            kv.encode_row(op.v + r * v_width + g * p.head_dim_v, p.head_dim_v, kv.v_row(op.layer, seq, pos, g));
        }
    });

    const RowKernels& rows = kv.kernels();
    const int32_t heads_per_kv = p.n_head / p.n_head_kv;
    const uint64_t k_stride = kv.k_row_bytes() * p.n_head_kv, v_stride = kv.v_row_bytes() * p.n_head_kv;
    pool.run(int64_t{n_rows} * p.n_head, [&](int64_t task, int thread) {
        const int64_t r = task / p.n_head;
        const int32_t h = static_cast<int32_t>(task % p.n_head);
        const int32_t g = h / heads_per_kv;
        const int32_t seq = rows_of_step.seq[r];
        const int32_t last = rows_of_step.pos[r];  // causal: positions [0, last] of its own sequence
        const float* q = op.q + r * q_width + int64_t{h} * p.head_dim_k;
        float* s = scores + thread * scores_per_thread;

        // Rows of one KV head are n_head_kv rows apart in the cache.
        rows.dot_rows(kv.k_row(op.layer, seq, 0, g), k_stride, last + 1, q, p.head_dim_k, p.scale, s);
        float max = -std::numeric_limits<float>::infinity();
        for (int32_t j = 0; j <= last; ++j) max = s[j] > max ? s[j] : max;
        double sum = 0.0;
        for (int32_t j = 0; j <= last; ++j) {
            s[j] = std::exp(s[j] - max);
            sum += s[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int32_t j = 0; j <= last; ++j) s[j] *= inv;

        float* out = op.out + r * out_width + int64_t{h} * p.head_dim_v;
        std::memset(out, 0, sizeof(float) * static_cast<size_t>(p.head_dim_v));
        rows.weighted_sum(kv.v_row(op.layer, seq, 0, g), v_stride, s, last + 1, out, p.head_dim_v);
    });
}

}  // namespace edgerun::cpu_ref
