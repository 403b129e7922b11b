// The llama family of decoder-only transformers, one builder per architecture. Each
// reads as the forward pass it is:
//
//   x = embed(tokens)
//   for each layer:
//       h = rmsnorm(x) ; q, k, v = h·Wq, h·Wk, h·Wv ; rope(q, k) ; x += attention(q, k, v)·Wo
//       h = rmsnorm(x) ; x += (silu(h·Wgate) * h·Wup)·Wdown
//   logits = rmsnorm(x)·Wout      (Wout = token_embd when the embeddings are tied)
//
// qwen2 adds biases to q, k and v; qwen3 normalises each head of q and k before rope;
// llama rotates adjacent pairs, the qwens the two halves of each head (NeoX order).
#include <edgerun/model.hpp>

#include <cmath>
#include <string>

namespace edgerun {
namespace {

std::string blk(int64_t layer, const char* tensor) { return "blk." + std::to_string(layer) + "." + tensor; }

struct LayerShape {
    er_rope_params rope;
    er_attention_params attention;
    int32_t rope_freqs;  // per-dimension frequency factors (llama3 scaling), or -1
};

LayerShape layer_shape(const HParams& hp, const WeightTable& w, int32_t rope_mode) {
    LayerShape s{};
    s.rope = er_rope_params{rope_mode, int32_t(hp.head_dim_k), int32_t(hp.n_rot), hp.rope_freq_base,
                            hp.rope_freq_scale};
    s.attention = er_attention_params{int32_t(hp.n_head), int32_t(hp.n_head_kv), int32_t(hp.head_dim_k),
                                      int32_t(hp.head_dim_v), 1.0f / std::sqrt(float(hp.head_dim_k))};
    s.rope_freqs = w.find("rope_freqs.weight");
    return s;
}

// Requires dimension `dim` of `tensor` (0: the values of a row, 1: the rows) to be
// `expected`; `what` names that count in the message.
int32_t require_extent(const WeightTable& w, int32_t tensor, int dim, int64_t expected, const std::string& what) {
    const er_tensor_desc& t = w[tensor];
    const int64_t found = t.n_dims > dim ? t.ne[dim] : 1;
    if (found != expected)
        throw Error("tensor '" + to_string(t.name) + "' has " + std::to_string(found) + (dim == 0 ? " values" : " rows") +
                        ", but " + what + " is " + std::to_string(expected),
                    ER_E_FORMAT);
    return tensor;
}

// The token embeddings and the output projection have one row per token: a table of
// another size would embed or score tokens the tokenizer and sampler do not have.
int32_t token_embeddings(const HParams& hp, const WeightTable& w) {
    return require_extent(w, w.require("token_embd.weight"), 1, hp.n_vocab, "the vocabulary size");
}

int32_t output_weight(const HParams& hp, const WeightTable& w) {
    int32_t out = w.find("output.weight");
    return out >= 0 ? require_extent(w, out, 1, hp.n_vocab, "the vocabulary size") : token_embeddings(hp, w);
}

// qwen3's per-head norm of q or k: one weight per value of a head. The graph accepts any
// width that divides the row, which would normalise groups that are not heads.
int32_t head_norm(const HParams& hp, const WeightTable& w, int64_t layer, const char* tensor) {
    return require_extent(w, w.require(blk(layer, tensor)), 0, hp.head_dim_k, "the head size");
}

// x + (silu(h·Wgate) * h·Wup)·Wdown with h = rmsnorm(x)
int32_t feed_forward(GraphBuilder& g, const HParams& hp, const WeightTable& w, int64_t l, int32_t x) {
    int32_t h = g.rms_norm(x, w.require(blk(l, "ffn_norm.weight")), hp.rms_eps);
    auto gate_up = g.matmul_multi(h, {{w.require(blk(l, "ffn_gate.weight"))}, {w.require(blk(l, "ffn_up.weight"))}});
    return g.add(x, g.matmul(g.swiglu(gate_up[0], gate_up[1]), w.require(blk(l, "ffn_down.weight"))));
}

int32_t finish(GraphBuilder& g, const HParams& hp, const WeightTable& w, int32_t x) {
    g.set_layer(-1);
    return g.logits(g.rms_norm(x, w.require("output_norm.weight"), hp.rms_eps), output_weight(hp, w));
}

// What distinguishes the members of the family.
struct Variant {
    int32_t rope_mode = ER_ROPE_NORMAL;
    bool qkv_bias = false;      // qwen2
    bool qk_head_norm = false;  // qwen3
};

Graph build_decoder(const HParams& hp, const WeightTable& w, int32_t max_tokens, const Variant& v) {
    const LayerShape s = layer_shape(hp, w, v.rope_mode);
    auto bias = [&](int64_t l, const char* name) { return v.qkv_bias ? w.require(blk(l, name)) : -1; };

    GraphBuilder g(w, max_tokens);
    int32_t x = g.embed(g.tokens(), token_embeddings(hp, w));
    for (int64_t l = 0; l < hp.n_layer; ++l) {
        g.set_layer(int32_t(l));
        int32_t h = g.rms_norm(x, w.require(blk(l, "attn_norm.weight")), hp.rms_eps);
        auto qkv = g.matmul_multi(h, {{w.require(blk(l, "attn_q.weight")), bias(l, "attn_q.bias")},
                                      {w.require(blk(l, "attn_k.weight")), bias(l, "attn_k.bias")},
                                      {w.require(blk(l, "attn_v.weight")), bias(l, "attn_v.bias")}});
        int32_t q = qkv[0], k = qkv[1];
        if (v.qk_head_norm) {
            q = g.rms_norm_heads(q, head_norm(hp, w, l, "attn_q_norm.weight"), hp.rms_eps);
            k = g.rms_norm_heads(k, head_norm(hp, w, l, "attn_k_norm.weight"), hp.rms_eps);
        }
        q = g.rope(q, s.rope, s.rope_freqs);
        k = g.rope(k, s.rope, s.rope_freqs);
        int32_t attn = g.attention(q, k, qkv[2], int32_t(l), s.attention);
        x = g.add(x, g.matmul(attn, w.require(blk(l, "attn_output.weight"))));
        x = feed_forward(g, hp, w, l, x);
    }
    finish(g, hp, w, x);
    return g.finish();
}

Graph build_llama(const HParams& hp, const WeightTable& w, int32_t max_tokens) {
    return build_decoder(hp, w, max_tokens, {.rope_mode = ER_ROPE_NORMAL});
}

Graph build_qwen2(const HParams& hp, const WeightTable& w, int32_t max_tokens) {
    return build_decoder(hp, w, max_tokens, {.rope_mode = ER_ROPE_NEOX, .qkv_bias = true});
}

Graph build_qwen3(const HParams& hp, const WeightTable& w, int32_t max_tokens) {
    return build_decoder(hp, w, max_tokens, {.rope_mode = ER_ROPE_NEOX, .qk_head_norm = true});
}

}  // namespace

const Architecture kArchitectures[] = {
    {"llama", &build_llama},
    {"qwen2", &build_qwen2},
    {"qwen3", &build_qwen3},
};

std::string supported_architectures() {
    std::string out;
    for (const auto& a : kArchitectures) out += (out.empty() ? "" : ", ") + std::string(a.name);
    return out;
}

const Architecture& find_architecture(std::string_view name) {
    for (const auto& a : kArchitectures)
        if (name == a.name) return a;
    throw Error("unsupported architecture '" + std::string(name) + "' (supported: " + supported_architectures() + ")",
                ER_E_UNSUPPORTED);
}

}  // namespace edgerun
