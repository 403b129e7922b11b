// Parameters of the general graph-op kernels (graph_ops.cu): the unfused path every op of
// the llama/qwen2/qwen3 graphs takes, for any number of rows. Per-row values that change
// from step to step (positions, KV lengths, sequences) are read from device memory, so a
// launch stays valid when its step is replayed from a captured graph. No CUDA header.
#pragma once

#include "kernel_params.hpp"

#include <cstdint>

namespace edgerun::cuda_orin {

// The per-row table of a step, in device memory: row r sits at position pos[r] of
// sequence seq[r] and attends to kv_len[r] = pos[r] + 1 cached positions.
struct DeviceRows {
    const int32_t* seq = nullptr;
    const int32_t* pos = nullptr;
    const int32_t* kv_len = nullptr;
};

// out = x / rms(x over each run of `group` values) * weight, for n_rows rows of `width`.
struct RmsNormParams {
    const float* x = nullptr;
    float* out = nullptr;
    const float* weight = nullptr;  // `group` values
    int32_t n_rows = 0;
    int32_t width = 0;
    int32_t group = 0;
    float eps = 0.0f;
};

// RoPE of each head of n_rows rows (row r at position rows.pos[r]); dims past n_rot are
// copied. out may equal x.
struct RopeRowsParams {
    const float* x = nullptr;
    float* out = nullptr;
    int32_t n_rows = 0;
    int32_t width = 0;  // a multiple of rope.head_dim
    RopeConfig rope{};
    DeviceRows rows{};
};

enum ElementwiseOp : int32_t { kElementwiseAdd = 0, kElementwiseSwiGLU = 1 };

// out = a + b, or silu(a) * b, over n values. With b_period > 0, b repeats every b_period
// values (a bias added to every row of a matrix).
struct ElementwiseParams {
    int32_t op = kElementwiseAdd;
    const float* a = nullptr;
    const float* b = nullptr;
    float* out = nullptr;
    int64_t n = 0;
    int64_t b_period = 0;
};

// Rows [row0, row0 + n_rows) of a packed weight matrix as floats, row-major with n_cols
// values a row: the B operand of the matrix-matrix path (Device::gemm).
struct DequantizeRowsParams {
    PackedMatrix w{};
    int32_t row0 = 0;
    int32_t n_rows = 0;
    void* out = nullptr;      // n_rows x n_cols floats, or halves
    int32_t out_is_f16 = 0;   // the floats rounded to F16 (an F16 GEMM's tile)
};

// rows x cols floats (row stride ld) to F16, densely: the other input of an F16 GEMM.
struct HalfRowsParams {
    const float* x = nullptr;
    int64_t ld = 0;
    int32_t rows = 0, cols = 0;
    uint16_t* out = nullptr;
};

// The KV cache of one layer for every sequence: sequence s's cache is `layer` with its
// pointers advanced by s * seq_stride_values values (and s * seq_stride_scales scales).
struct KvLayerAllSeqs {
    KvCacheLayer layer{};
    int64_t seq_stride_values = 0;
    int64_t seq_stride_scales = 0;
};

// Appends the k and v rows ([n_rows][n_head_kv * head_dim] floats) of each row to its
// sequence's cache at its position (Q8: the rule of activation.hpp, per 32 values).
struct KvAppendParams {
    const float* k = nullptr;
    const float* v = nullptr;
    int32_t n_rows = 0;
    KvLayerAllSeqs cache{};
    DeviceRows rows{};
};

// Causal grouped-query attention of n_rows query rows, each over positions
// [0, rows.kv_len[r]) of its own sequence's cache: any head_dim (a multiple of 32 for a
// Q8 cache). Plain and exact (float scores, a two-pass softmax); the decode path with head
// dims 64 and 128 takes the split flash-decode kernel instead.
struct AttentionRowsParams {
    const float* q = nullptr;  // [n_rows][n_head * head_dim]
    float* out = nullptr;      // [n_rows][n_head * head_dim]
    int32_t n_rows = 0;
    int32_t n_head = 0;
    float scale = 0.0f;
    KvLayerAllSeqs cache{};
    DeviceRows rows{};
    float* scores = nullptr;  // n_rows * n_head * cache.layer.n_ctx floats
};

}  // namespace edgerun::cuda_orin
