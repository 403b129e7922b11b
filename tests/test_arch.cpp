#include <doctest/doctest.h>

#include <edgerun/model.hpp>

#include <cmath>
#include <cstdio>
#include <deque>
#include <string>

using namespace edgerun;

namespace {

// A weight table with the tensor names and shapes of a llama-family conversion (no data:
// building a graph only needs shapes).
struct FakeWeights {
    std::deque<std::string> names;  // stable storage for er_str
    std::vector<er_tensor_desc> tensors;

    void add(const std::string& name, std::vector<int64_t> ne, int32_t dtype = 12) {
        names.push_back(name);
        er_tensor_desc t{};
        t.name = er_str{names.back().data(), names.back().size()};
        t.dtype = dtype;
        t.n_dims = int32_t(ne.size());
        for (size_t i = 0; i < ne.size(); ++i) t.ne[i] = ne[i];
        tensors.push_back(t);
    }

    static FakeWeights make(const HParams& hp, bool bias, bool qk_norm, bool tied) {
        FakeWeights w;
        const int64_t q = hp.n_head * hp.head_dim_k, kv = hp.n_head_kv * hp.head_dim_k;
        w.add("token_embd.weight", {hp.n_embd, hp.n_vocab}, 14);
        for (int64_t l = 0; l < hp.n_layer; ++l) {
            auto b = [&](const char* n) { return "blk." + std::to_string(l) + "." + n; };
            w.add(b("attn_norm.weight"), {hp.n_embd}, 0);
            w.add(b("attn_q.weight"), {hp.n_embd, q});
            w.add(b("attn_k.weight"), {hp.n_embd, kv});
            w.add(b("attn_v.weight"), {hp.n_embd, kv}, 14);
            if (bias) {
                w.add(b("attn_q.bias"), {q}, 0);
                w.add(b("attn_k.bias"), {kv}, 0);
                w.add(b("attn_v.bias"), {kv}, 0);
            }
            if (qk_norm) {
                w.add(b("attn_q_norm.weight"), {hp.head_dim_k}, 0);
                w.add(b("attn_k_norm.weight"), {hp.head_dim_k}, 0);
            }
            w.add(b("attn_output.weight"), {q, hp.n_embd});
            w.add(b("ffn_norm.weight"), {hp.n_embd}, 0);
            w.add(b("ffn_gate.weight"), {hp.n_embd, hp.n_ff});
            w.add(b("ffn_up.weight"), {hp.n_embd, hp.n_ff});
            w.add(b("ffn_down.weight"), {hp.n_ff, hp.n_embd}, 14);
        }
        w.add("output_norm.weight", {hp.n_embd}, 0);
        if (!tied) w.add("output.weight", {hp.n_embd, hp.n_vocab}, 14);
        return w;
    }
};

HParams qwen3_like() {
    HParams hp;
    hp.arch = "qwen3";
    hp.n_vocab = 512, hp.n_embd = 256, hp.n_layer = 2, hp.n_head = 4, hp.n_head_kv = 2;
    hp.head_dim_k = hp.head_dim_v = 128;  // q is 512 wide although n_embd is 256, as in Qwen3-4B
    hp.n_ff = 768, hp.n_rot = 128, hp.rms_eps = 1e-6f, hp.rope_freq_base = 1e6f;
    return hp;
}

std::vector<int32_t> ops_of(const Graph& g) {
    std::vector<int32_t> ops;
    for (const auto& n : g.nodes) ops.push_back(n.op);
    return ops;
}

// `fw` with the tensor `name` reshaped to `ne`.
FakeWeights reshaped(FakeWeights fw, const std::string& name, std::vector<int64_t> ne) {
    for (er_tensor_desc& t : fw.tensors)
        if (to_string(t.name) == name) {
            t.n_dims = int32_t(ne.size());
            for (size_t i = 0; i < ne.size(); ++i) t.ne[i] = ne[i];
            return fw;
        }
    FAIL("no tensor " << name);
    return fw;
}

// A model description as formats_gguf gives Qwen3-4B's (a small vocabulary), before the
// keys a test sets.
er_model_desc qwen3_4b_desc() {
    auto desc = er_model_desc{};
    desc.struct_size = sizeof desc;
    std::snprintf(desc.arch, sizeof desc.arch, "qwen3");
    desc.n_vocab = 100, desc.n_embd = 2560, desc.n_layer = 36, desc.n_head = 32, desc.n_ff = 9728;
    return desc;
}

}  // namespace

TEST_CASE("qwen3: per-head q/k norms before NeoX rope, fused projections, tied logits") {
    HParams hp = qwen3_like();
    FakeWeights fw = FakeWeights::make(hp, false, true, true);
    WeightTable w(fw.tensors);
    Graph g = find_architecture("qwen3").build(hp, w, 8);

    const std::vector<int32_t> layer = {ER_OP_RMS_NORM, ER_OP_MATMUL_MULTI, ER_OP_RMS_NORM, ER_OP_RMS_NORM,
                                        ER_OP_ROPE,     ER_OP_ROPE,         ER_OP_ATTENTION, ER_OP_MATMUL,
                                        ER_OP_ADD,      ER_OP_RMS_NORM,     ER_OP_MATMUL_MULTI, ER_OP_SWIGLU,
                                        ER_OP_MATMUL,   ER_OP_ADD};
    std::vector<int32_t> expected = {ER_OP_EMBED};
    for (int l = 0; l < 2; ++l) expected.insert(expected.end(), layer.begin(), layer.end());
    expected.push_back(ER_OP_RMS_NORM);
    expected.push_back(ER_OP_LOGITS);
    CHECK(ops_of(g) == expected);

    const er_node& q_norm = g.nodes[3];
    CHECK(q_norm.params.rms_norm.group == 128);
    const er_node& rope = g.nodes[5];
    CHECK(rope.params.rope.mode == ER_ROPE_NEOX);
    CHECK(rope.params.rope.freq_base == 1e6f);
    const er_node& attention = g.nodes[7];
    CHECK(attention.layer == 0);
    CHECK(attention.params.attention.n_head == 4);
    CHECK(attention.params.attention.n_head_kv == 2);
    CHECK(attention.params.attention.scale == doctest::Approx(1.0 / std::sqrt(128.0)));
    CHECK(g.values[attention.outputs[0]].width == 512);
    const er_node& logits = g.nodes.back();
    CHECK(logits.weights[0] == w.require("token_embd.weight"));
    CHECK(g.nodes[1 + 14].params.rms_norm.group == 256);  // layer 1's attn_norm spans the row
}

TEST_CASE("qwen2 feeds the q/k/v biases to the fused projection; llama rotates adjacent pairs") {
    HParams hp = qwen3_like();
    hp.arch = "qwen2";
    FakeWeights fw2 = FakeWeights::make(hp, true, false, false);
    WeightTable w2(fw2.tensors);
    Graph g2 = find_architecture("qwen2").build(hp, w2, 1);
    const er_node& qkv = g2.nodes[2];
    REQUIRE(qkv.op == ER_OP_MATMUL_MULTI);
    CHECK(qkv.biases[0] == w2.require("blk.0.attn_q.bias"));
    CHECK(qkv.biases[2] == w2.require("blk.0.attn_v.bias"));
    CHECK(g2.nodes[3].params.rope.mode == ER_ROPE_NEOX);
    CHECK(g2.nodes.back().weights[0] == w2.require("output.weight"));

    hp.arch = "llama";
    FakeWeights fw = FakeWeights::make(hp, false, false, true);
    WeightTable w(fw.tensors);
    Graph g = find_architecture("llama").build(hp, w, 1);
    CHECK(g.nodes[2].biases[0] == -1);
    CHECK(g.nodes[3].op == ER_OP_ROPE);
    CHECK(g.nodes[3].params.rope.mode == ER_ROPE_NORMAL);
}

TEST_CASE("missing tensors and unknown architectures are named") {
    HParams hp = qwen3_like();
    FakeWeights fw = FakeWeights::make(hp, false, false, true);  // qwen3 without its q/k norms
    WeightTable w(fw.tensors);
    CHECK_THROWS_WITH_AS(find_architecture("qwen3").build(hp, w, 1), "model has no tensor 'blk.0.attn_q_norm.weight'",
                         Error);
    CHECK_THROWS_WITH_AS(find_architecture("mamba"), "unsupported architecture 'mamba' (supported: llama, qwen2, qwen3)",
                         Error);
}

TEST_CASE("hyperparameters: defaults, and missing keys named") {
    er_model_desc desc = qwen3_4b_desc();
    desc.head_dim_k = 128;
    HParams hp = hparams_from_desc(desc);
    CHECK(hp.n_head_kv == 32);
    CHECK(hp.head_dim_k == 128);
    CHECK(hp.head_dim_v == 128);
    CHECK(hp.n_rot == 128);

    desc.n_layer = 0;
    std::snprintf(desc.missing_key, sizeof desc.missing_key, "qwen3.block_count");
    CHECK_THROWS_WITH_AS(hparams_from_desc(desc), "model has no layer count (missing metadata key 'qwen3.block_count')",
                         Error);
    desc.n_layer = 36;
    desc.n_head_kv = 5;
    CHECK_THROWS_WITH_AS(hparams_from_desc(desc),
                         "attention head count 32 is not a multiple of the KV head count 5", Error);
}

TEST_CASE("qwen3's q/k norms must be one head wide, not any width that divides the row") {
    const HParams hp = qwen3_like();  // head size 128
    const FakeWeights fw = FakeWeights::make(hp, false, true, true);
    for (const char* name : {"blk.0.attn_q_norm.weight", "blk.1.attn_k_norm.weight"}) {
        CAPTURE(name);
        const FakeWeights narrow = reshaped(fw, name, {64});
        CHECK_THROWS_WITH_AS(find_architecture("qwen3").build(hp, WeightTable(narrow.tensors), 1),
                             ("tensor '" + std::string(name) + "' has 64 values, but the head size is 128").c_str(), Error);
    }
}

TEST_CASE("the token embeddings and the output projection have one row per vocabulary entry") {
    const HParams hp = qwen3_like();  // 512 tokens
    // Each FakeWeights kept alive: the tables' names point into it.
    const FakeWeights short_embd = reshaped(FakeWeights::make(hp, false, true, true), "token_embd.weight", {256, 500});
    CHECK_THROWS_WITH_AS(find_architecture("qwen3").build(hp, WeightTable(short_embd.tensors), 1),
                         "tensor 'token_embd.weight' has 500 rows, but the vocabulary size is 512", Error);
    const FakeWeights long_output = reshaped(FakeWeights::make(hp, false, true, false), "output.weight", {256, 513});
    CHECK_THROWS_WITH_AS(find_architecture("qwen3").build(hp, WeightTable(long_output.tensors), 1),
                         "tensor 'output.weight' has 513 rows, but the vocabulary size is 512", Error);
    // Untied: the embeddings are checked too, although the logits come from output.weight.
    const FakeWeights untied = reshaped(FakeWeights::make(hp, false, true, false), "token_embd.weight", {256, 1000});
    CHECK_THROWS_WITH_AS(find_architecture("qwen3").build(hp, WeightTable(untied.tensors), 1),
                         "tensor 'token_embd.weight' has 1000 rows, but the vocabulary size is 512", Error);
}

TEST_CASE("hyperparameters past int32 are refused with their true value, not wrapped negative") {
    er_model_desc desc = qwen3_4b_desc();
    desc.head_dim_k = 4294967295;
    CHECK_THROWS_WITH_AS(hparams_from_desc(desc), "model's key head size 4294967295 is more than the 2147483647 supported",
                         Error);
    desc.head_dim_k = 2147483648;
    desc.n_rot = 128;
    CHECK_THROWS_WITH_AS(hparams_from_desc(desc), "model's key head size 2147483648 is more than the 2147483647 supported",
                         Error);
    desc.head_dim_k = 128;
    desc.n_vocab = 4294967295;
    CHECK_THROWS_WITH_AS(hparams_from_desc(desc), "model's vocabulary size 4294967295 is more than the 2147483647 supported",
                         Error);
    desc.n_vocab = 2147483647;  // the largest that fits
    CHECK(hparams_from_desc(desc).n_vocab == 2147483647);
}
