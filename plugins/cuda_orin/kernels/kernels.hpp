// cuda_orin kernel library: the decode hot path of a Llama/Qwen layer on one CUDA stream.
//
// STATUS: compiled for sm_87/sm_90 and for compute_87 PTX, never run on a GPU yet (the
// sessions that wrote it had none). The math the kernels are made of is tested on the
// CPU (tests/cuda/test_kernel_math.cpp); the kernels themselves are tested by
// tests/cuda/gpu/, which has not run yet. Do not wire these into the backend until it has.
//
// Rules every launch here follows, so a whole decode step can be captured in a CUDA
// graph once and replayed: values that change per step (position, KV length, token id)
// are read from device memory; grid shapes depend only on model and context sizes; no
// launch allocates, copies from the host or synchronizes.
#pragma once

#include "activation.hpp"
#include "launch_math.hpp"
#include "rope.hpp"
#include "weight_layout.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace edgerun::cuda_orin {

// -------------------------------------------------------------- activations --

// x (+ residual) -> optional RMSNorm -> float and q8 copies for the GEMVs. When
// residual is given, h = x + residual is written to residual_out (the new hidden state;
// it may alias x or residual) and normalised. One block; n up to a few ten thousands.
struct PrepareParams {
    const void* x = nullptr;
    int32_t x_is_f16 = 0;
    const float* residual = nullptr;
    float* residual_out = nullptr;
    const float* norm_weight = nullptr;  // nullptr: no normalisation
    float norm_eps = 1e-6f;
    int32_t n = 0;
    // Outputs, each padded to n_pad = round_up(n, 32) (the tail written as zeros).
    float* out_f = nullptr;
    int8_t* out_q = nullptr;
    float* out_d = nullptr;  // n_pad / 32
};
cudaError_t launch_prepare(const PrepareParams& p, cudaStream_t stream);

ER_HD int32_t padded_length(int32_t n) { return (n + kQ8Group - 1) / kQ8Group * kQ8Group; }

// --------------------------------------------------------------------- GEMV --

inline constexpr int kMaxGemvOutputs = 4;

enum GemvEpilogue : int32_t {
    kEpilogueStore = 0,   // y = W x (+ bias) (+ residual)
    kEpilogueSwiGLU = 1,  // y = silu(W0 x + b0) * (W1 x + b1): gate = output 0, up = output 1
};

struct GemvOutput {
    PackedMatrix w;
    const float* bias = nullptr;
    const float* residual = nullptr;  // added after the bias; may alias y
    void* y = nullptr;
    int32_t y_is_f16 = 0;
};

// Several outputs sharing one input in one launch; their weight types may differ
// (Q/K/V of Q4_K_M: Q4_K, Q4_K, Q6_K). Every output's row length equals x.n.
struct GemvLaunch {
    Activation x{};
    GemvOutput out[kMaxGemvOutputs];
    int32_t n_outputs = 0;
    int32_t epilogue = kEpilogueStore;
    // Filled by launch_gemv: split-K width and the first block of each output.
    int32_t warps_per_row = 1;
    int32_t block_begin[kMaxGemvOutputs + 1] = {0, 0, 0, 0, 0};
};

// n_sms: the device's multiprocessor count (device_sm_count()).
cudaError_t launch_gemv(GemvLaunch launch, int n_sms, cudaStream_t stream);

// ------------------------------------------------------------ KV cache, RoPE --

enum KvType : int32_t { kKvF16 = 1, kKvQ8 = 2 };  // the ABI's ER_KV_F16 / ER_KV_Q8

// One layer's cache. K and V are [n_head_kv][n_ctx][head_dim], halves or int8; for Q8
// the scales are [n_head_kv][n_ctx][head_dim / 32] fp16 (one per 32 values of a token
// and head, so appending a token never touches older ones).
struct KvCacheLayer {
    int32_t type = kKvF16;
    void* k = nullptr;
    void* v = nullptr;
    uint16_t* k_scales = nullptr;
    uint16_t* v_scales = nullptr;
    int32_t n_ctx = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
};

// Bytes of one layer's K (or V) values and scales.
inline uint64_t kv_values_bytes(const KvCacheLayer& c) {
    return uint64_t(c.n_head_kv) * c.n_ctx * c.head_dim * (c.type == kKvF16 ? 2 : 1);
}
inline uint64_t kv_scales_bytes(const KvCacheLayer& c) {
    return c.type == kKvQ8 ? uint64_t(c.n_head_kv) * c.n_ctx * (c.head_dim / 32) * 2 : 0;
}

// For the token at *pos: optional per-head RMSNorm of q and k (Qwen3), RoPE of q (in
// place) and k, then k and v (already projected, [n_head_kv][head_dim] floats) stored
// into the cache at *pos (quantized for Q8 with the rule in activation.hpp).
// A *pos outside [0, n_ctx) writes nothing to the cache.
struct RopeAppendParams {
    float* q = nullptr;
    int32_t n_head = 0;
    const float* k = nullptr;
    const float* v = nullptr;
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    float norm_eps = 1e-6f;
    RopeConfig rope{};
    const int32_t* pos = nullptr;
    KvCacheLayer cache{};
};
cudaError_t launch_rope_append(const RopeAppendParams& p, cudaStream_t stream);

// --------------------------------------------------------------- attention --

// One query token against the cache of one layer: out[h] = softmax(q[h] k^T * scale) v
// over positions [0, *kv_len), with query head h reading KV head h / (n_head/n_head_kv).
// Split over n_splits blocks of the KV sequence (choose_kv_splits) and merged.
struct AttentionParams {
    const float* q = nullptr;  // [n_head][head_dim]
    KvCacheLayer cache{};
    const int32_t* kv_len = nullptr;
    int32_t n_head = 0;
    float scale = 0.0f;
    int32_t n_splits = 1;
    float* workspace = nullptr;  // attention_workspace_floats(n_head, head_dim, n_splits)
    void* out = nullptr;         // [n_head][head_dim]
    int32_t out_is_f16 = 0;
};
// head_dim 64 or 128; n_head a multiple of n_head_kv.
cudaError_t launch_attention(const AttentionParams& p, cudaStream_t stream);

// ----------------------------------------------------------- small kernels --

// out = row *token of a GGUF-layout table (any type blocks.hpp decodes), as floats.
// A token outside [0, n_rows) gives zeros.
struct EmbedParams {
    int32_t type = 0;
    const void* table = nullptr;
    int64_t row_bytes = 0;
    int32_t n_rows = 0;
    int32_t n_cols = 0;
    const int32_t* token = nullptr;
    float* out = nullptr;
};
cudaError_t launch_embed(const EmbedParams& p, cudaStream_t stream);

// The per-step counters a captured decode step reads, advanced on the device.
struct StepCounters {
    int32_t pos;     // position of the token being decoded
    int32_t kv_len;  // pos + 1 once its K/V are appended
    int32_t token;   // its id
};
// pos += 1, kv_len = pos + 1 (the token is left to the sampler).
cudaError_t launch_advance_step(StepCounters* counters, cudaStream_t stream);

// ------------------------------------------------------------------ device --

int device_sm_count(int device);

}  // namespace edgerun::cuda_orin
