#include <edgerun/dtype.hpp>
#include <edgerun/kv_type.hpp>
#include <edgerun/roofline.hpp>

#include <array>
#include <cmath>

namespace edgerun::roofline {

namespace {

constexpr std::array<Device, 4> kDevices{{
    {"orin-nano", 68.0, "Jetson Orin Nano 8GB"},
    {"orin-nano-super", 102.0, "Jetson Orin Nano Super"},
    {"orin-agx", 204.0, "Jetson Orin AGX 64GB"},
    {"h100", 3350.0, "H100 80GB HBM3"},
}};

std::string_view name_of(const er_tensor_desc& t) { return {t.name.data ? t.name.data : "", t.name.size}; }

uint64_t row_bytes_of(const er_tensor_desc& t) {
    const auto row = row_bytes(t.dtype, t.ne[0]);
    return row ? *row : 0;
}

uint64_t u(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

}  // namespace

std::span<const Device> devices() { return kDevices; }

const Device* find_device(std::string_view name) {
    for (const Device& d : kDevices)
        if (d.name == name) return &d;
    return nullptr;
}

WeightRead weight_read(std::string_view name) {
    for (std::string_view table : {"token_embd.weight", "position_embd.weight", "token_types.weight"})
        if (name == table) return WeightRead::OneRow;
    return WeightRead::Whole;
}

namespace {

// HParams and er_model_desc name these fields alike.
template <class Hyperparameters>
Geometry geometry_from(const Hyperparameters& h) {
    Geometry g;
    g.n_layer = h.n_layer;
    g.n_head = h.n_head;
    g.n_head_kv = h.n_head_kv;
    g.head_dim_k = h.head_dim_k;
    g.head_dim_v = h.head_dim_v;
    g.n_embd = h.n_embd;
    g.n_ff = h.n_ff;
    g.n_vocab = h.n_vocab;
    return g;
}

}  // namespace

Geometry geometry_of(const HParams& hparams) { return geometry_from(hparams); }
Geometry geometry_of(const er_model_desc& desc) { return geometry_from(desc); }

TokenBytes weight_bytes_per_token(std::span<const er_tensor_desc> tensors) {
    TokenBytes out;
    const er_tensor_desc* token_embd = nullptr;
    bool has_output = false;
    for (const er_tensor_desc& t : tensors) {
        const std::string_view name = name_of(t);
        if (name == "token_embd.weight") token_embd = &t;
        if (name == "output.weight") {
            has_output = true;
            out.lm_head = t.nbytes;
        }
        out.weights += weight_read(name) == WeightRead::OneRow ? row_bytes_of(t) : t.nbytes;
    }
    if (!has_output && token_embd) {
        // Tied embeddings: the LM head is token_embd, read in full once per token.
        out.tied_embeddings = true;
        out.lm_head = token_embd->nbytes;
        out.weights += token_embd->nbytes;
    }
    return out;
}

uint64_t kv_bytes_per_token(const Geometry& g, int64_t ctx, int32_t kv_type) {
    const double values = static_cast<double>(u(g.n_layer)) * static_cast<double>(u(g.n_head_kv)) *
                          static_cast<double>(u(g.head_dim_k) + u(g.head_dim_v)) * static_cast<double>(u(ctx));
    return static_cast<uint64_t>(std::llround(values * kv_bytes_per_value(kv_type)));
}

uint64_t activation_bytes_per_token(const Geometry& g) {
    // The residual stream in and out of every layer, and the logits row written and read
    // back; the per-layer intermediates (a few KB each) stay in cache.
    return 4 * (2 * u(g.n_layer) * u(g.n_embd) + 2 * u(g.n_vocab));
}

TokenBytes bytes_per_token(std::span<const er_tensor_desc> tensors, const Geometry& g, int64_t ctx, int32_t kv_type) {
    TokenBytes out = weight_bytes_per_token(tensors);
    out.kv = kv_bytes_per_token(g, ctx, kv_type);
    out.activations = activation_bytes_per_token(g);
    return out;
}

TokenBytes bytes_per_token(const StepTraffic& step, const Geometry& g) {
    TokenBytes out;
    out.weights = step.weight_bytes;
    out.kv = step.kv_bytes;
    out.activations = activation_bytes_per_token(g);
    std::string embedding;
    for (const OpTraffic& t : step.ops)
        if (t.op == ER_OP_EMBED) embedding = t.tensor;
    for (const OpTraffic& t : step.ops) {
        if (t.op != ER_OP_LOGITS) continue;
        out.lm_head += t.weight_bytes;
        out.tied_embeddings = !embedding.empty() && t.tensor == embedding;
    }
    return out;
}

double tokens_per_second(double bandwidth_gbps, uint64_t bytes_per_token) {
    if (bytes_per_token == 0) return 0.0;
    return bandwidth_gbps * 1e9 / static_cast<double>(bytes_per_token);
}

}  // namespace edgerun::roofline
