// Bytes read per decoded token and the bandwidth roofline: single-stream decode reads
// every weight matrix once per token, plus the KV cache up to the current position, so
// tokens/s <= bandwidth / bytes-per-token. `edgerun inspect` counts the bytes from the
// decode graph (traffic.hpp, what bench and --trace count too) where edgerun builds one
// for the file's architecture, and estimates them from the tensor table elsewhere.
#pragma once

#include <edgerun/abi.h>
#include <edgerun/model.hpp>
#include <edgerun/traffic.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::roofline {

struct Device {
    std::string_view name;
    double bandwidth_gbps;  // peak DRAM bandwidth, GB/s (1e9 bytes/s)
    std::string_view description;
};

// Orin Nano, Orin Nano Super, Orin AGX, H100 (peak DRAM bandwidth from NVIDIA's data sheets).
std::span<const Device> devices();
const Device* find_device(std::string_view name);

// How a weight is read while decoding one token.
enum class WeightRead {
    Whole,    // a matrix or vector every token reads in full
    OneRow,   // an embedding table: the lookup reads one row
};
// Embedding tables (token_embd, position_embd, token_types) are looked up by row; every
// other tensor is read whole.
WeightRead weight_read(std::string_view tensor_name);

struct TokenBytes {
    uint64_t weights = 0;      // every weight read for one token
    uint64_t lm_head = 0;      // part of `weights`: the output matrix (token_embd when tied)
    bool tied_embeddings = false;
    uint64_t kv = 0;           // KV cache read at this context length
    uint64_t activations = 0;  // approximate activation traffic (f32), small
    uint64_t total() const { return weights + kv + activations; }
};

// The model geometry the KV and activation terms need; any field may be 0 when unknown
// (that term is then 0).
struct Geometry {
    int64_t n_layer = 0, n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;
    int64_t n_embd = 0, n_ff = 0, n_vocab = 0;
};
Geometry geometry_of(const er_model_desc& desc);
Geometry geometry_of(const HParams& hparams);

// Weight bytes from the tensor table: whole tensors, one row of each embedding table,
// and, when there is no output.weight (tied embeddings), token_embd once more in full
// for the LM head.
TokenBytes weight_bytes_per_token(std::span<const er_tensor_desc> tensors);

// 2 (K and V) * n_layer * n_head_kv * head_dim * ctx * bytes_per_value, with K and V
// head dimensions taken separately; `kv_type` is an ER_KV_* value.
uint64_t kv_bytes_per_token(const Geometry& g, int64_t ctx, int32_t kv_type);

// f32 activation traffic that reaches DRAM in one decode step: the residual stream
// between layers and the logits row. An estimate, well under 1% for real models
// (attention scores of a flash-decode kernel and per-layer intermediates stay on chip).
uint64_t activation_bytes_per_token(const Geometry& g);

// The estimate from the tensor table: the three terms above.
TokenBytes bytes_per_token(std::span<const er_tensor_desc> tensors, const Geometry& g, int64_t ctx, int32_t kv_type);

// From one decode step's traffic (decode_traffic over the decode graph): its weight and
// KV bytes, the LM head as the LOGITS op reads it (tied when the embedding lookup reads
// the same tensor), and the activation estimate above.
TokenBytes bytes_per_token(const StepTraffic& step, const Geometry& g);

// Upper bound on decode speed at `bandwidth_gbps`.
double tokens_per_second(double bandwidth_gbps, uint64_t bytes_per_token);

}  // namespace edgerun::roofline
