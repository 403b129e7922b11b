// Row-wise ops, written to match llama.cpp's scalar definitions (ggml-cpu) operation
// for operation. Work is split by rows; a single row runs on the calling thread.
#include "ops.hpp"

#include <cmath>

namespace edgerun::cpu_ref {

void run_embed(const int32_t* ids, int32_t n_rows, const WeightRef& table, float* out, ThreadPool& pool) {
    pool.run(n_rows, [&](int64_t r, int) { table.kernels->dequant(table.row(ids[r]), out + r * table.cols, table.cols); });
}

void run_rms_norm(const float* x, float* y, int32_t n_rows, int64_t width, int32_t group, const float* weight,
                  float eps, ThreadPool& pool) {
    pool.run(n_rows, [&](int64_t r, int) {
        for (int64_t g0 = 0; g0 < width; g0 += group) {
            const float* in = x + r * width + g0;
            float* out = y + r * width + g0;
            double sum = 0.0;
            for (int32_t i = 0; i < group; ++i) sum += static_cast<double>(in[i] * in[i]);
            const float mean = static_cast<float>(sum / group);
            const float scale = 1.0f / std::sqrt(mean + eps);
            for (int32_t i = 0; i < group; ++i) out[i] = (in[i] * scale) * weight[i];
        }
    });
}

void RopeTable::init(const er_rope_params& params, const float* freq_factors, int32_t max_rows) {
    params_ = params;
    factors_ = freq_factors;
    values_.assign(static_cast<size_t>(max_rows) * params.n_rot, 0.0f);
}

void RopeTable::compute(const int32_t* positions, int32_t n_rows) {
    // ggml_rope_cache_init: theta starts at the position and is multiplied by
    // theta_scale per pair (in float), divided by the pair's frequency factor, then
    // scaled by freq_scale; mscale is 1 (attn_factor 1, no YaRN ramp).
    const int32_t n_pairs = params_.n_rot / 2;
    const float theta_scale = std::pow(params_.freq_base, -2.0f / static_cast<float>(params_.n_rot));
    for (int32_t r = 0; r < n_rows; ++r) {
        float* cs = values_.data() + static_cast<int64_t>(r) * params_.n_rot;
        float theta = static_cast<float>(positions[r]);
        for (int32_t k = 0; k < n_pairs; ++k) {
            const float factor = factors_ ? factors_[k] : 1.0f;
            const float angle = params_.freq_scale * (theta / factor);
            cs[2 * k] = std::cos(angle);
            cs[2 * k + 1] = std::sin(angle);
            theta *= theta_scale;
        }
    }
}

void run_rope(const float* x, float* y, int32_t n_rows, int64_t width, const RopeTable& table, ThreadPool& pool) {
    const er_rope_params& p = table.params();
    const int64_t n_heads = width / p.head_dim;
    const int32_t n_pairs = p.n_rot / 2;
    // NORMAL rotates adjacent pairs (2k, 2k+1); NEOX rotates (k, k + n_rot/2).
    const int32_t stride = p.mode == ER_ROPE_NEOX ? n_pairs : 1;
    pool.run(n_rows, [&](int64_t r, int) {
        const float* cs = table.row(static_cast<int32_t>(r));
        for (int64_t h = 0; h < n_heads; ++h) {
            const float* in = x + r * width + h * p.head_dim;
            float* out = y + r * width + h * p.head_dim;
            for (int32_t k = 0; k < n_pairs; ++k) {
                const int32_t i0 = p.mode == ER_ROPE_NEOX ? k : 2 * k;
                const float c = cs[2 * k], s = cs[2 * k + 1];
                const float x0 = in[i0], x1 = in[i0 + stride];
                out[i0] = x0 * c - x1 * s;
                out[i0 + stride] = x0 * s + x1 * c;
            }
            for (int32_t i = p.n_rot; i < p.head_dim; ++i) out[i] = in[i];
        }
    });
}

void run_swiglu(const float* gate, const float* up, float* y, int32_t n_rows, int64_t width, ThreadPool& pool) {
    pool.run(n_rows, [&](int64_t r, int) {
        const float* g = gate + r * width;
        const float* u = up + r * width;
        float* out = y + r * width;
        for (int64_t i = 0; i < width; ++i) out[i] = (g[i] / (1.0f + std::exp(-g[i]))) * u[i];
    });
}

void run_add(const float* a, const float* b, float* y, int32_t n_rows, int64_t width, ThreadPool& pool) {
    pool.run(n_rows, [&](int64_t r, int) {
        for (int64_t i = r * width; i < (r + 1) * width; ++i) y[i] = a[i] + b[i];
    });
}

}  // namespace edgerun::cpu_ref
