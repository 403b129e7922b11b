// The synthesizer's parts: tensor tables shaped as a conversion of each preset writes
// them, a vocabulary a BPE tokenizer can use, and weights that are a pure function of
// (seed, tensor, row).
#include <edgerun/authoring/synth_presets.hpp>
#include <edgerun/authoring/synth_vocab.hpp>
#include <edgerun/authoring/synth_weights.hpp>

#include <edgerun/abi.h>

#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <unordered_set>

using namespace edgerun::authoring;

namespace {

Preset small(const Preset& p) {
    Preset s = p;
    s.n_vocab = 4096;  // the conformance suite's reduction: keeps these tests quick
    return s;
}

const SynthTensor* find(const std::vector<SynthTensor>& tensors, const std::string& name) {
    for (const SynthTensor& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

}  // namespace

TEST_CASE("every preset's tensor table has the shapes its hyperparameters give, and no name twice") {
    for (const Preset& p : presets()) {
        CAPTURE(p.name);
        REQUIRE(find_preset(p.name) == &p);
        const int64_t n_layer = 3;
        const auto tensors = preset_tensors(p, n_layer);
        std::set<std::string> names;
        for (const SynthTensor& t : tensors) {
            CHECK(names.insert(t.name).second);
            CHECK(t.conversion_type == (t.n_dims == 2 ? 1 : 0));  // F16 matrices, F32 vectors
        }
        const int64_t q = p.n_head * p.head_dim, kv = p.n_head_kv * p.head_dim;
        auto shape = [&](const std::string& name) {
            const SynthTensor* t = find(tensors, name);
            REQUIRE_MESSAGE(t, name);
            return std::pair<int64_t, int64_t>{t->ne[0], t->n_dims == 2 ? t->ne[1] : 1};
        };
        CHECK(shape("token_embd.weight") == std::pair<int64_t, int64_t>{p.n_embd, p.n_vocab});
        CHECK(shape("output_norm.weight") == std::pair<int64_t, int64_t>{p.n_embd, 1});
        CHECK_FALSE(find(tensors, "output.weight"));  // every preset ties its embeddings
        for (int64_t l = 0; l < n_layer; ++l) {
            const std::string b = "blk." + std::to_string(l) + ".";
            CHECK(shape(b + "attn_q.weight") == std::pair<int64_t, int64_t>{p.n_embd, q});
            CHECK(shape(b + "attn_k.weight") == std::pair<int64_t, int64_t>{p.n_embd, kv});
            CHECK(shape(b + "attn_v.weight") == std::pair<int64_t, int64_t>{p.n_embd, kv});
            CHECK(shape(b + "attn_output.weight") == std::pair<int64_t, int64_t>{q, p.n_embd});
            CHECK(shape(b + "ffn_gate.weight") == std::pair<int64_t, int64_t>{p.n_embd, p.n_ff});
            CHECK(shape(b + "ffn_down.weight") == std::pair<int64_t, int64_t>{p.n_ff, p.n_embd});
            CHECK(bool(find(tensors, b + "attn_q_norm.weight")) == p.qk_norm);
            CHECK(bool(find(tensors, b + "attn_q.bias")) == p.qkv_bias);
            if (p.qk_norm) CHECK(shape(b + "attn_k_norm.weight") == std::pair<int64_t, int64_t>{p.head_dim, 1});
            if (p.qkv_bias) CHECK(shape(b + "attn_v.bias") == std::pair<int64_t, int64_t>{kv, 1});
        }
        CHECK_FALSE(find(tensors, "blk." + std::to_string(n_layer) + ".attn_q.weight"));
        CHECK(bool(find(tensors, "rope_freqs.weight")) == (p.llama3_rope_factor > 0));
        const size_t per_layer = 9 + (p.qk_norm ? 2 : 0) + (p.qkv_bias ? 3 : 0);
        CHECK(tensors.size() == 2 + (p.llama3_rope_factor > 0 ? 1 : 0) + n_layer * per_layer);
    }
}

TEST_CASE("llama3 rope factors: one per rotated pair, 1 for short wavelengths rising to the scaling factor") {
    const Preset& p = *find_preset("llama3.2-1b");
    const std::vector<float> f = llama3_rope_factors(p);
    REQUIRE(f.size() == size_t(p.head_dim / 2));
    CHECK(f.front() == 1.0f);
    CHECK(f.back() == p.llama3_rope_factor);
    for (size_t i = 1; i < f.size(); ++i) CHECK(f[i] >= f[i - 1]);
}

TEST_CASE("the vocabulary: the preset's size, distinct tokens, special ids in range, every merge makes a token") {
    for (const Preset& full : presets()) {
        const Preset p = small(full);
        CAPTURE(p.name);
        const SynthVocab v = make_vocab(p);
        REQUIRE(v.tokens.size() == size_t(p.n_vocab));
        REQUIRE(v.types.size() == v.tokens.size());
        std::unordered_set<std::string> tokens;
        for (size_t i = 0; i < v.tokens.size(); ++i)
            if (v.types[i] != ER_TOKEN_UNUSED) CHECK_MESSAGE(tokens.insert(v.tokens[i]).second, v.tokens[i]);
        for (int32_t id : {v.bos, v.eos}) {
            REQUIRE(id >= 0);
            REQUIRE(id < p.n_vocab);
            CHECK(v.types[size_t(id)] == ER_TOKEN_CONTROL);
        }
        for (const std::string& merge : v.merges) {
            const size_t space = merge.find(' ');
            REQUIRE(space != std::string::npos);
            CHECK_MESSAGE(tokens.count(merge.substr(0, space) + merge.substr(space + 1)), merge);
        }
        CHECK_FALSE(v.word_tokens.empty());
        for (int32_t id : v.word_tokens) CHECK(v.types[size_t(id)] == ER_TOKEN_NORMAL);
    }
}

TEST_CASE("weights are a function of (seed, tensor, row): any chunking gives the same rows, another seed others") {
    const Preset p = small(*find_preset("qwen3-0.6b"));
    const SynthVocab vocab = make_vocab(p);
    const auto tensors = preset_tensors(p, 2);
    for (Stress stress : {Stress::None, Stress::AttentionScale, Stress::SmallActivations}) {
        CAPTURE(stress_name(stress));
        const WeightSynth a(p, 2, 7, vocab, stress), b(p, 2, 7, vocab, stress), other(p, 2, 8, vocab, stress);
        for (const char* name : {"token_embd.weight", "blk.1.attn_q.weight", "blk.0.ffn_down.weight", "blk.1.attn_k_norm.weight"}) {
            CAPTURE(name);
            const SynthTensor& t = *find(tensors, name);
            const int64_t cols = t.ne[0], rows = t.n_dims == 2 ? std::min<int64_t>(t.ne[1], 96) : 1;
            std::vector<float> whole(size_t(rows * cols)), pieces(whole.size()), reseeded(whole.size());
            a.fill_rows(t, 0, rows, whole.data());
            for (int64_t r = 0; r < rows; r += 5) b.fill_rows(t, r, std::min(rows, r + 5), pieces.data() + r * cols);
            other.fill_rows(t, 0, rows, reseeded.data());
            CHECK(whole == pieces);
            bool finite = true;
            for (float x : whole) finite = finite && std::isfinite(x);
            CHECK(finite);
            if (t.n_dims == 2) CHECK(whole != reseeded);
        }
    }
    CHECK(stress_from_name("attention-scale") == Stress::AttentionScale);
    CHECK_FALSE(stress_from_name("none-such"));
}
