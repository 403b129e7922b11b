// The graph ops (abi.h ER_OP_*) as cpu_ref runs them on row-major [rows, width] F32
// buffers. Each op splits its work over independent outputs only (rows of a result,
// or (token, head) pairs), so no sum is ever split across threads and every result is
// the same for any thread count. None of these allocate.
#pragma once

#include "kv_cache.hpp"
#include "thread_pool.hpp"
#include "weights.hpp"

#include <edgerun/abi.h>

#include <cstdint>
#include <vector>

namespace edgerun::cpu_ref {

// The sequence and position of every row of a step (abi.h er_step_row), in step order.
struct StepRows {
    const int32_t* seq = nullptr;
    const int32_t* pos = nullptr;
    int32_t n = 0;
};

// ------------------------------------------------------------------ matmul --

// The fewest weight rows one GEMV task covers, and the rows of one dequantized prefill
// tile. The tile is fixed, so each output element comes from a BLAS call of the same
// shape whatever the thread count.
inline constexpr int64_t kGemvRowsPerTask = 16;
inline constexpr int64_t kGemmTileRows = 64;
// Steps with at least this many rows multiply dequantized tiles with BLAS; fewer run
// dot_multi (each weight row decoded once for all rows, every row as in a step alone).
inline constexpr int32_t kGemmMinRows = kMaxDotRows + 1;

struct MatmulTarget {
    const WeightRef* weight = nullptr;
    const float* bias = nullptr;  // weight->rows values, or nullptr
    float* out = nullptr;         // [rows, weight->rows]
};

struct MatmulOp {
    const float* x = nullptr;  // [rows, width]
    int64_t width = 0;
    int32_t n_targets = 0;
    MatmulTarget targets[ER_NODE_MAX_IO];
};

// Per-thread room for one dequantized tile of kGemmTileRows weight rows (BLAS steps) and
// for one decoded weight row (dot_multi steps of several rows), max width floats each.
struct MatmulScratch {
    float* tiles = nullptr;
    int64_t tile_floats_per_thread = 0;
    float* rows = nullptr;
    int64_t row_floats_per_thread = 0;
};

// out_t[r, :] = x[r, :] · W_tᵀ (+ bias_t) for r < n_rows.
void run_matmul(const MatmulOp& op, int32_t n_rows, ThreadPool& pool, const MatmulScratch& scratch);

// Calls OpenBLAS once so its lazily created state exists before any step runs, and pins
// its own threading to one thread (cpu_ref runs BLAS from its own pool).
void init_blas();

// -------------------------------------------------------------- elementwise --

// out = rows of `table` picked by ids (validated by the caller).
void run_embed(const int32_t* ids, int32_t n_rows, const WeightRef& table, float* out, ThreadPool& pool);

// llama.cpp's rms_norm followed by the weight: per group of `group` values,
// y = x * (1 / sqrtf(mean(x^2) + eps)) * w, the mean summed in double.
void run_rms_norm(const float* x, float* y, int32_t n_rows, int64_t width, int32_t group, const float* weight,
                  float eps, ThreadPool& pool);

// Cosines and sines of one rope configuration at a step's positions.
class RopeTable {
public:
    // Allocates room for max_rows rows (plan creation time).
    void init(const er_rope_params& params, const float* freq_factors, int32_t max_rows);
    void compute(const int32_t* positions, int32_t n_rows);  // ggml_rope_ext, ext_factor 0, attn_factor 1
    const er_rope_params& params() const { return params_; }
    const float* freq_factors() const { return factors_; }
    // cos and sin of pair k at row r: cs[2k], cs[2k+1] of row(r).
    const float* row(int32_t r) const { return values_.data() + static_cast<int64_t>(r) * params_.n_rot; }
    uint64_t bytes() const { return values_.size() * sizeof(float); }

private:
    er_rope_params params_{};
    const float* factors_ = nullptr;
    std::vector<float> values_;
};

void run_rope(const float* x, float* y, int32_t n_rows, int64_t width, const RopeTable& table, ThreadPool& pool);

// y = silu(gate) * up, silu(x) = x / (1 + expf(-x)).
void run_swiglu(const float* gate, const float* up, float* y, int32_t n_rows, int64_t width, ThreadPool& pool);
void run_add(const float* a, const float* b, float* y, int32_t n_rows, int64_t width, ThreadPool& pool);

// --------------------------------------------------------------- attention --

struct AttentionOp {
    const float* q = nullptr;  // [rows, n_head * head_dim_k]
    const float* k = nullptr;  // [rows, n_head_kv * head_dim_k]
    const float* v = nullptr;  // [rows, n_head_kv * head_dim_v]
    float* out = nullptr;      // [rows, n_head * head_dim_v]
    int32_t layer = 0;
    er_attention_params params{};
};

// Appends each row's k and v to the cache at its sequence and position, then causal
// grouped-query attention of every row over positions [0, its own] of its own
// sequence. `scores` has n_ctx floats per thread.
void run_attention(const AttentionOp& op, KvCache& kv, const StepRows& rows, ThreadPool& pool, float* scores,
                   int64_t scores_per_thread);

}  // namespace edgerun::cpu_ref
