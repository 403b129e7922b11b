// Model hyperparameters and the tokenizer as the format plugin describes them.
#include "gguf_fixture.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

using namespace gguf_test;

namespace {

struct ModelResult {
    er_status status;
    std::string message;
    er_model_desc desc;
};

ModelResult model_of(const Builder& b) {
    Opened f;
    open_ok(b.build(), f, "model.gguf");
    ModelResult r{};
    r.desc = edgerun::sized<er_model_desc>();
    er_error err{};
    r.status = iface().model_desc(f.file, &r.desc, &err);
    r.message = r.status == ER_OK ? "" : err.message;
    return r;
}

std::string model_error(const Builder& b) {
    const ModelResult r = model_of(b);
    CHECK(r.status == ER_E_FORMAT);
    return r.message;
}

Builder without(const char* key) {
    Builder b = tiny_llama();
    for (auto it = b.kvs.begin(); it != b.kvs.end(); ++it)
        if (it->first == key) {
            b.kvs.erase(it);
            return b;
        }
    FAIL("no key " << key);
    return b;
}

Builder replaced(const char* key, Value v) {
    Builder b = tiny_llama();
    for (auto& [k, value] : b.kvs)
        if (k == key) value = std::move(v);
    return b;
}

struct VocabResult {
    er_status status;
    std::string message;
    er_vocab_desc desc;
};

}  // namespace

// ------------------------------------------------------------------ model --

TEST_CASE("model: hyperparameters of the small llama, with llama.cpp's defaults") {
    const ModelResult r = model_of(tiny_llama());
    INFO(r.message);
    REQUIRE(r.status == ER_OK);
    const er_model_desc& d = r.desc;
    CHECK(std::string(d.arch) == "llama");
    CHECK(std::string(d.name) == "tiny");
    CHECK(d.n_ctx_train == 256);
    CHECK(d.n_embd == 64);
    CHECK(d.n_layer == 1);
    CHECK(d.n_ff == 128);
    CHECK(d.n_head == 4);
    CHECK(d.n_head_kv == 2);
    CHECK(d.head_dim_k == 16);  // no key_length: n_embd / n_head
    CHECK(d.head_dim_v == 16);
    CHECK(d.n_rot == 16);       // no rope.dimension_count: head_dim
    CHECK(d.rms_eps == doctest::Approx(1e-5f));
    CHECK(d.rope_freq_base == 100000.0f);
    CHECK(d.rope_freq_scale == 1.0f);
    CHECK(d.file_type == 2);
    CHECK(d.n_vocab == 8);  // no llama.vocab_size: the token count
    CHECK(d.missing_key[0] == '\0');
}

TEST_CASE("model: head_dim comes from key_length when present (Qwen3 shape)") {
    Builder b = tiny_llama();
    b.kv("llama.attention.key_length", u32(32)).kv("llama.attention.value_length", u32(24));
    const ModelResult r = model_of(b);
    REQUIRE(r.status == ER_OK);
    CHECK(r.desc.head_dim_k == 32);
    CHECK(r.desc.head_dim_v == 24);
    CHECK(r.desc.n_rot == 32);
}

TEST_CASE("model: defaults for the optional keys") {
    Builder b = without("llama.attention.head_count_kv");
    for (auto it = b.kvs.begin(); it != b.kvs.end();)
        it = it->first == "llama.rope.freq_base" || it->first == "general.file_type" ? b.kvs.erase(it) : it + 1;
    const ModelResult r = model_of(b);
    REQUIRE(r.status == ER_OK);
    CHECK(r.desc.n_head_kv == 4);
    CHECK(r.desc.rope_freq_base == 10000.0f);
    CHECK(r.desc.file_type == -1);
}

TEST_CASE("model: linear rope scaling sets freq_scale = 1/factor") {
    Builder b = tiny_llama();
    b.kv("llama.rope.scaling.type", str("linear")).kv("llama.rope.scaling.factor", f32(4.0f));
    CHECK(model_of(b).desc.rope_freq_scale == 0.25f);
    Builder none = tiny_llama();
    none.kv("llama.rope.scaling.type", str("none")).kv("llama.rope.scaling.factor", f32(4.0f));
    CHECK(model_of(none).desc.rope_freq_scale == 1.0f);
}

TEST_CASE("model: vocab size from <arch>.vocab_size, else tokens, else token_embd rows") {
    Builder b = tiny_llama();
    b.kv("llama.vocab_size", u32(8));
    CHECK(model_of(b).desc.n_vocab == 8);
    Builder no_tokens = without("tokenizer.ggml.tokens");
    CHECK(model_of(no_tokens).desc.n_vocab == 8);  // token_embd is 64 x 8
}

TEST_CASE("model: a missing required key is named") {
    for (const char* key : {"llama.context_length", "llama.embedding_length", "llama.block_count",
                            "llama.feed_forward_length", "llama.attention.head_count"}) {
        CAPTURE(key);
        const ModelResult r = model_of(without(key));
        CHECK(r.status == ER_E_FORMAT);
        CHECK(r.message == "missing metadata key '" + std::string(key) + "'");
        CHECK(std::string(r.desc.missing_key) == key);
    }
    CHECK(model_error(without("general.architecture")) == "missing metadata key 'general.architecture'");
}

TEST_CASE("model: a value of the wrong type is named") {
    CHECK(model_error(replaced("llama.block_count", str("2"))) ==
          "metadata key 'llama.block_count' has type string, expected an integer");
    CHECK(model_error(replaced("llama.rope.freq_base", str("1e5"))) ==
          "metadata key 'llama.rope.freq_base' has type string, expected a float");
    CHECK(model_error(replaced("general.architecture", u32(1))) ==
          "metadata key 'general.architecture' has type u32, expected string");
    CHECK(model_error(replaced("llama.block_count", u64(~uint64_t{0}))) ==
          "metadata key 'llama.block_count': value 18446744073709551615 is too large");
    CHECK(model_error(replaced("llama.embedding_length", i32(-64))) ==
          "metadata key 'llama.embedding_length' is -64, must be positive");
}

TEST_CASE("model: per-layer head counts are taken when uniform") {
    const ModelResult r = model_of(replaced("llama.attention.head_count_kv", array_of<uint32_t>(T_U32, {2})));
    REQUIRE(r.status == ER_OK);
    CHECK(r.desc.n_head_kv == 2);
    CHECK(model_error(replaced("llama.attention.head_count", array_of<int32_t>(T_I32, {4, 8}))) ==
          "metadata key 'llama.attention.head_count' has per-layer values that differ (4 at layer 0, 8 at layer 1); "
          "varying per-layer values are not supported");
    CHECK(model_error(replaced("llama.attention.head_count", str_array({"4"}))) ==
          "metadata key 'llama.attention.head_count' has type array of string, expected an integer or an array of integers");
}

TEST_CASE("model: inconsistent head geometry is refused") {
    CHECK(model_error(replaced("llama.attention.head_count_kv", u32(3))) ==
          "metadata key 'llama.attention.head_count_kv' is 3, which does not divide the head count 4");
    CHECK(model_error(replaced("llama.attention.head_count", u32(5))) ==
          "metadata key 'llama.attention.head_count_kv' is 2, which does not divide the head count 5");
    Builder b = replaced("llama.attention.head_count", u32(6));
    for (auto& [k, v] : b.kvs)
        if (k == "llama.attention.head_count_kv") v = u32(3);
    CHECK(model_error(b) == "no 'llama.attention.key_length' and the embedding length 64 is not a multiple of the head count 6");
}

TEST_CASE("model: a per-layer array of another length than the layer count is refused") {
    Builder two_layers = replaced("llama.attention.head_count_kv", array_of<uint32_t>(T_U32, {2, 2}));
    CHECK(model_error(two_layers) ==
          "metadata key 'llama.attention.head_count_kv' has 2 per-layer values, but 'llama.block_count' is 1");
    Builder none = replaced("llama.feed_forward_length", array_of<uint32_t>(T_U32, {128, 128, 128}));
    for (auto& [k, v] : none.kvs)
        if (k == "llama.block_count") v = u32(2);
    CHECK(model_error(none) ==
          "metadata key 'llama.feed_forward_length' has 3 per-layer values, but 'llama.block_count' is 2");
    // One value per layer is taken, as before.
    Builder b = replaced("llama.attention.head_count_kv", array_of<uint32_t>(T_U32, {2, 2}));
    for (auto& [k, v] : b.kvs)
        if (k == "llama.block_count") v = u32(2);
    const ModelResult r = model_of(b);
    INFO(r.message);
    REQUIRE(r.status == ER_OK);
    CHECK(r.desc.n_head_kv == 2);
    CHECK(r.desc.n_layer == 2);
}

TEST_CASE("model: <arch>.vocab_size must match the token table") {
    Builder b = tiny_llama();
    b.kv("llama.vocab_size", u32(7));
    CHECK(model_error(b) == "metadata key 'llama.vocab_size' is 7, but 'tokenizer.ggml.tokens' has 8 tokens");
    Builder more = tiny_llama();
    more.kv("llama.vocab_size", u64(9));
    CHECK(model_error(more) == "metadata key 'llama.vocab_size' is 9, but 'tokenizer.ggml.tokens' has 8 tokens");
}

TEST_CASE("model: sizes of 2^31 and more are refused with their true value") {
    // Each u32 would have read as a negative int32 further on.
    for (const auto& [key, value] : {std::pair{"llama.attention.key_length", uint32_t{4294967295u}},
                                     {"llama.attention.key_length", uint32_t{2147483648u}},
                                     {"llama.rope.dimension_count", uint32_t{2147483648u}},
                                     {"llama.vocab_size", uint32_t{4294967295u}},
                                     {"llama.context_length", uint32_t{3000000000u}}}) {
        CAPTURE(key);
        Builder b = tiny_llama();
        b.kvs.erase(std::remove_if(b.kvs.begin(), b.kvs.end(), [&](const auto& kv) { return kv.first == key; }),
                    b.kvs.end());
        b.kv(key, u32(value));
        CHECK(model_error(b) == "metadata key '" + std::string(key) + "' is " + std::to_string(value) +
                                    ", more than the 2147483647 supported");
    }
    Builder largest = tiny_llama();
    for (auto& [k, v] : largest.kvs)
        if (k == "llama.context_length") v = u32(2147483647u);
    const ModelResult r = model_of(largest);
    REQUIRE(r.status == ER_OK);
    CHECK(r.desc.n_ctx_train == 2147483647);
}

// ------------------------------------------------------------------ vocab --

namespace {

VocabResult vocab_of(const Builder& b, Opened& f) {
    open_ok(b.build(), f, "vocab.gguf");
    VocabResult r{};
    r.desc = edgerun::sized<er_vocab_desc>();
    er_error err{};
    r.status = iface().vocab_desc(f.file, &r.desc, &err);
    r.message = r.status == ER_OK ? "" : err.message;
    return r;
}

}  // namespace

TEST_CASE("vocab: a BPE vocabulary with merges") {
    Opened f;
    const VocabResult r = vocab_of(tiny_llama(), f);
    INFO(r.message);
    REQUIRE(r.status == ER_OK);
    const er_vocab_desc& d = r.desc;
    CHECK(d.kind == ER_VOCAB_BPE);
    CHECK(str_of(d.model) == "gpt2");
    CHECK(str_of(d.pre) == "smollm");
    CHECK(d.n_tokens == 8);
    CHECK(d.n_merges == 2);
    CHECK(d.bos_id == 0);
    CHECK(d.eos_id == 1);
    CHECK((d.eot_id == -1 && d.eom_id == -1 && d.unk_id == -1 && d.pad_id == -1 && d.sep_id == -1));
    CHECK(d.add_bos == 0);
    CHECK(d.add_eos == -1);
    CHECK(d.add_space_prefix == -1);
    CHECK(d.has_scores == 0);
    CHECK(d.chat_template.size == 0);

    er_str text{};
    float score = -1;
    int32_t type = -1;
    er_error err{};
    REQUIRE(iface().vocab_token(f.file, 6, &text, &score, &type, &err) == ER_OK);
    CHECK(str_of(text) == "\xc4\xa0" "a");
    CHECK(score == 0.0f);
    CHECK(type == ER_TOKEN_NORMAL);
    REQUIRE(iface().vocab_token(f.file, 0, &text, nullptr, &type, &err) == ER_OK);
    CHECK(type == ER_TOKEN_CONTROL);
    er_str merge{};
    REQUIRE(iface().vocab_merge(f.file, 1, &merge, &err) == ER_OK);
    CHECK(str_of(merge) == "\xc4\xa0 a");
    CHECK(iface().vocab_token(f.file, 8, &text, &score, &type, &err) == ER_E_INVALID_ARGUMENT);
    CHECK(std::string(err.message) == "token id 8 is past the vocabulary (8 tokens)");
    CHECK(iface().vocab_merge(f.file, 2, &merge, &err) == ER_E_INVALID_ARGUMENT);
}

TEST_CASE("vocab: an SPM vocabulary with scores, special ids, flags and a chat template") {
    Builder b;
    b.kv("tokenizer.ggml.model", str("llama"))
        .kv("tokenizer.ggml.tokens", str_array({"<unk>", "<s>", "</s>", "\xe2\x96\x81hi"}))
        .kv("tokenizer.ggml.scores", array_of<float>(T_F32, {0.0f, 0.0f, 0.0f, -3.5f}))
        .kv("tokenizer.ggml.token_type", array_of<int32_t>(T_I32, {2, 3, 3, 1}))
        .kv("tokenizer.ggml.unknown_token_id", u32(0)).kv("tokenizer.ggml.bos_token_id", u32(1))
        .kv("tokenizer.ggml.eos_token_id", u32(2)).kv("tokenizer.ggml.eot_token_id", i32(2))
        .kv("tokenizer.ggml.seperator_token_id", u32(3)).kv("tokenizer.ggml.padding_token_id", u32(0))
        .kv("tokenizer.ggml.add_bos_token", boolean(true)).kv("tokenizer.ggml.add_eos_token", boolean(false))
        .kv("tokenizer.ggml.add_space_prefix", boolean(true)).kv("tokenizer.chat_template", str("{{ x }}"));
    Opened f;
    const VocabResult r = vocab_of(b, f);
    REQUIRE(r.status == ER_OK);
    CHECK(r.desc.kind == ER_VOCAB_SPM);
    CHECK(r.desc.has_scores == 1);
    CHECK(r.desc.n_merges == 0);
    CHECK((r.desc.unk_id == 0 && r.desc.bos_id == 1 && r.desc.eos_id == 2 && r.desc.eot_id == 2));
    CHECK((r.desc.sep_id == 3 && r.desc.pad_id == 0 && r.desc.eom_id == -1));
    CHECK((r.desc.add_bos == 1 && r.desc.add_eos == 0 && r.desc.add_space_prefix == 1));
    CHECK(str_of(r.desc.chat_template) == "{{ x }}");
    er_str text{};
    float score = 0;
    int32_t type = 0;
    er_error err{};
    REQUIRE(iface().vocab_token(f.file, 3, &text, &score, &type, &err) == ER_OK);
    CHECK(str_of(text) == "\xe2\x96\x81hi");
    CHECK(score == -3.5f);
    CHECK(type == ER_TOKEN_NORMAL);
    REQUIRE(iface().vocab_token(f.file, 0, &text, &score, &type, &err) == ER_OK);
    CHECK(type == ER_TOKEN_UNKNOWN);
    CHECK(iface().vocab_merge(f.file, 0, &text, &err) == ER_E_STATE);
}

TEST_CASE("vocab: no tokenizer, or no_vocab, is kind NONE") {
    Opened f;
    CHECK(vocab_of(Builder{}, f).desc.kind == ER_VOCAB_NONE);
    Builder b;
    b.kv("tokenizer.ggml.model", str("no_vocab"));
    Opened g;
    const VocabResult r = vocab_of(b, g);
    CHECK(r.status == ER_OK);
    CHECK(r.desc.kind == ER_VOCAB_NONE);
    CHECK(r.desc.n_tokens == 0);
}

TEST_CASE("vocab: another tokenizer model is refused when asked for, not at open") {
    Opened f;
    const VocabResult r = vocab_of(replaced("tokenizer.ggml.model", str("bert")), f);  // open_ok passed
    CHECK(r.status == ER_E_UNSUPPORTED);
    CHECK(r.message == "unsupported tokenizer model 'bert' (metadata key 'tokenizer.ggml.model')");
}

TEST_CASE("vocab: inconsistent or mistyped tokenizer arrays are named") {
    Opened a, b, c, d, e;
    CHECK(vocab_of(replaced("tokenizer.ggml.token_type", array_of<int32_t>(T_I32, {1, 1})), a).message ==
          "metadata key 'tokenizer.ggml.token_type' has 2 entries, but there are 8 tokens");
    CHECK(vocab_of(replaced("tokenizer.ggml.tokens", array_of<uint32_t>(T_U32, {1})), b).message ==
          "metadata key 'tokenizer.ggml.tokens' has type array of u32, expected array of strings");
    CHECK(vocab_of(without("tokenizer.ggml.tokens"), c).message == "missing metadata key 'tokenizer.ggml.tokens'");
    CHECK(vocab_of(without("tokenizer.ggml.merges"), d).message == "missing metadata key 'tokenizer.ggml.merges'");

    const VocabResult bad_type = vocab_of(replaced("tokenizer.ggml.token_type", array_of<int32_t>(T_I32, {3, 3, 99, 1, 1, 1, 1, 1})), e);
    REQUIRE(bad_type.status == ER_OK);
    int32_t type = 0;
    er_error err{};
    CHECK(iface().vocab_token(e.file, 2, nullptr, nullptr, &type, &err) == ER_E_FORMAT);
    CHECK(std::string(err.message) == "metadata key 'tokenizer.ggml.token_type': entry 2 is 99, not a token type (0 to 6)");
}

TEST_CASE("vocab: special token ids outside the vocabulary are dropped") {
    Opened f;
    const VocabResult r = vocab_of(replaced("tokenizer.ggml.eos_token_id", u32(5000)), f);
    REQUIRE(r.status == ER_OK);
    CHECK(r.desc.eos_id == -1);
    CHECK(r.desc.bos_id == 0);
}

TEST_CASE("vocab: the llama.cpp vocabulary files") {
    struct Expect {
        const char* file;
        int32_t kind;
        uint64_t n_merges;
    };
    for (const Expect& e : {Expect{"ggml-vocab-gpt-2.gguf", ER_VOCAB_BPE, 50000}, Expect{"ggml-vocab-llama-spm.gguf", ER_VOCAB_SPM, 0}}) {
        CAPTURE(e.file);
        Opened f;
        open_path(std::string(EDGERUN_VOCAB_DIR) + "/" + e.file, f);
        REQUIRE(f.status == ER_OK);
        auto d = edgerun::sized<er_vocab_desc>();
        er_error err{};
        REQUIRE(iface().vocab_desc(f.file, &d, &err) == ER_OK);
        CHECK(d.kind == e.kind);
        CHECK(d.n_merges == e.n_merges);
        // Every token is reachable (the counts themselves are checked against the python
        // gguf reader in gguf_python_compare).
        er_str text{};
        for (uint64_t i = 0; i < d.n_tokens; ++i) REQUIRE(iface().vocab_token(f.file, i, &text, nullptr, nullptr, &err) == ER_OK);
    }
}
