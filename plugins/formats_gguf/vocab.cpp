// The tokenizer as GGUF stores it (tokenizer.ggml.*), in the ABI's neutral form.
#include "descriptions.hpp"

#include <cstring>
#include <string>

namespace edgerun::gguf {

namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTokenTypeKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

bool is_string_type(int32_t t) { return t == ER_META_STRING; }
bool is_float_type(int32_t t) { return t == ER_META_F32 || t == ER_META_F64; }
bool is_integer_type(int32_t t) { return meta_is_integer(t); }

int32_t vocab_kind(std::optional<std::string_view> model) {
    if (!model || *model == "no_vocab") return ER_VOCAB_NONE;
    if (*model == "llama") return ER_VOCAB_SPM;
    if (*model == "gpt2") return ER_VOCAB_BPE;
    throw sdk::Failure(ER_E_UNSUPPORTED, "unsupported tokenizer model " + quote_text(*model) + " (metadata key 'tokenizer.ggml.model')");
}

// A per-token array must have one entry per token.
void check_parallel(const er_meta_value* array, std::string_view key, uint64_t n_tokens) {
    if (array && array->array_count != n_tokens)
        throw format_error("metadata key " + quote_text(key) + " has " + std::to_string(array->array_count) +
                           " entries, but there are " + std::to_string(n_tokens) + " tokens");
}

// A special token id: -1 when absent or out of range (llama.cpp ignores a bad id too,
// and the tokenizer falls back to its defaults).
int32_t token_id(const Metadata& m, const char* key, uint64_t n_tokens) {
    const auto id = m.get_int(key);
    if (!id || *id == -1) return -1;
    if (*id < 0 || static_cast<uint64_t>(*id) >= n_tokens) {
        sdk::logf(ER_LOG_WARN, "metadata key '%s' is %lld, not a token id (%llu tokens); ignored", key,
                  static_cast<long long>(*id), static_cast<unsigned long long>(n_tokens));
        return -1;
    }
    return static_cast<int32_t>(*id);
}

int32_t flag(const Metadata& m, const char* key) {
    const auto value = m.get_bool(key);
    return value ? (*value ? 1 : 0) : -1;
}

}  // namespace

VocabArrays find_vocab_arrays(const Metadata& m) noexcept {
    const auto array_of = [&](std::string_view key, bool (*accept)(int32_t)) -> const er_meta_value* {
        const MetaEntry* e = m.find(key);
        return e && e->value.type == ER_META_ARRAY && accept(e->value.array_type) ? &e->value : nullptr;
    };
    VocabArrays a;
    a.tokens = array_of(kTokensKey, is_string_type);
    a.scores = array_of(kScoresKey, is_float_type);
    a.token_types = array_of(kTokenTypeKey, is_integer_type);
    a.merges = array_of(kMergesKey, is_string_type);
    return a;
}

void fill_vocab_desc(const GgufFile& file, er_vocab_desc& out) {
    const uint32_t struct_size = out.struct_size;
    std::memset(&out, 0, sizeof out);
    out.struct_size = struct_size;

    const Metadata& m = file.metadata();
    const auto model = m.get_string(kModelKey);
    out.kind = vocab_kind(model);
    if (model) out.model = er_str{model->data(), model->size()};
    if (auto pre = m.get_string("tokenizer.ggml.pre")) out.pre = er_str{pre->data(), pre->size()};

    const er_meta_value* tokens = m.get_array(kTokensKey, is_string_type, "strings");
    const er_meta_value* scores = m.get_array(kScoresKey, is_float_type, "floats");
    const er_meta_value* types = m.get_array(kTokenTypeKey, is_integer_type, "integers");
    const er_meta_value* merges = m.get_array(kMergesKey, is_string_type, "strings");
    if (out.kind != ER_VOCAB_NONE && !tokens) throw format_error("missing metadata key 'tokenizer.ggml.tokens'");
    if (out.kind == ER_VOCAB_BPE && !merges) throw format_error("missing metadata key 'tokenizer.ggml.merges'");
    out.n_tokens = tokens ? tokens->array_count : 0;
    out.n_merges = merges ? merges->array_count : 0;
    check_parallel(scores, kScoresKey, out.n_tokens);
    check_parallel(types, kTokenTypeKey, out.n_tokens);
    out.has_scores = scores ? 1 : 0;

    out.bos_id = token_id(m, "tokenizer.ggml.bos_token_id", out.n_tokens);
    out.eos_id = token_id(m, "tokenizer.ggml.eos_token_id", out.n_tokens);
    out.eot_id = token_id(m, "tokenizer.ggml.eot_token_id", out.n_tokens);
    out.eom_id = token_id(m, "tokenizer.ggml.eom_token_id", out.n_tokens);
    out.unk_id = token_id(m, "tokenizer.ggml.unknown_token_id", out.n_tokens);
    out.pad_id = token_id(m, "tokenizer.ggml.padding_token_id", out.n_tokens);
    out.sep_id = token_id(m, "tokenizer.ggml.seperator_token_id", out.n_tokens);  // GGUF's spelling
    out.add_bos = flag(m, "tokenizer.ggml.add_bos_token");
    out.add_eos = flag(m, "tokenizer.ggml.add_eos_token");
    out.add_space_prefix = flag(m, "tokenizer.ggml.add_space_prefix");
    if (auto tmpl = m.get_string("tokenizer.chat_template")) out.chat_template = er_str{tmpl->data(), tmpl->size()};
}

void vocab_token(const GgufFile& file, const VocabArrays& arrays, uint64_t index, er_str* text, float* score,
                 int32_t* type) {
    const Metadata& m = file.metadata();
    if (!arrays.tokens) {
        // Absent or mistyped: let the full check say which.
        er_vocab_desc desc{};
        fill_vocab_desc(file, desc);
        throw sdk::Failure(ER_E_STATE, "the file has no vocabulary");
    }
    const uint64_t n_tokens = arrays.tokens->array_count;
    if (index >= n_tokens)
        throw sdk::Failure(ER_E_INVALID_ARGUMENT, "token id " + std::to_string(index) + " is past the vocabulary (" +
                                                      std::to_string(n_tokens) + " tokens)");
    check_parallel(arrays.scores, kScoresKey, n_tokens);
    check_parallel(arrays.token_types, kTokenTypeKey, n_tokens);
    if (text) {
        const std::string_view s = m.string_at(*arrays.tokens, index);
        *text = er_str{s.data(), s.size()};
    }
    if (score) *score = arrays.scores ? static_cast<float>(m.float_at(*arrays.scores, index)) : 0.0f;
    if (type) {
        int64_t t = ER_TOKEN_NORMAL;
        if (arrays.token_types) {
            t = m.int_at(*arrays.token_types, index, kTokenTypeKey);
            if (t < ER_TOKEN_UNDEFINED || t > ER_TOKEN_BYTE)
                throw format_error("metadata key 'tokenizer.ggml.token_type': entry " + std::to_string(index) + " is " +
                                   std::to_string(t) + ", not a token type (0 to 6)");
        }
        *type = static_cast<int32_t>(t);
    }
}

er_str vocab_merge(const GgufFile& file, const VocabArrays& arrays, uint64_t index) {
    if (!arrays.merges) {
        file.metadata().get_array(kMergesKey, is_string_type, "strings");  // throws when mistyped
        throw sdk::Failure(ER_E_STATE, "the file has no merges (metadata key 'tokenizer.ggml.merges')");
    }
    if (index >= arrays.merges->array_count)
        throw sdk::Failure(ER_E_INVALID_ARGUMENT, "merge " + std::to_string(index) + " is past the end (" +
                                                      std::to_string(arrays.merges->array_count) + " merges)");
    const std::string_view s = file.metadata().string_at(*arrays.merges, index);
    return er_str{s.data(), s.size()};
}

}  // namespace edgerun::gguf
