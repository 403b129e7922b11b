#include <edgerun/text/vocab.hpp>

#include <edgerun/host_api.hpp>

namespace edgerun::text {

namespace {

std::optional<TokenId> id_or_none(int32_t id) {
    if (id < 0) return std::nullopt;
    return id;
}

std::optional<bool> flag_or_none(int32_t flag) {
    if (flag < 0) return std::nullopt;
    return flag != 0;
}

// Special ids that er_vocab_desc does not carry are read as plain metadata.
std::optional<TokenId> meta_token_id(const ModelFile& file, const char* key) {
    const auto value = file.meta_find(key);
    if (!value) return std::nullopt;
    switch (value->type) {
        case ER_META_U8: case ER_META_U16: case ER_META_U32: case ER_META_U64:
            return value->v.u64 <= uint64_t(INT32_MAX) ? std::optional<TokenId>(TokenId(value->v.u64)) : std::nullopt;
        case ER_META_I8: case ER_META_I16: case ER_META_I32: case ER_META_I64:
            return value->v.i64 >= 0 && value->v.i64 <= INT32_MAX ? std::optional<TokenId>(TokenId(value->v.i64))
                                                                   : std::nullopt;
        default: return std::nullopt;
    }
}

}  // namespace

Vocab Vocab::from_file(const ModelFile& file) {
    const er_vocab_desc desc = file.vocab_desc();
    Vocab v;
    v.kind = desc.kind;
    v.model = to_string(desc.model);
    v.pre = to_string(desc.pre);
    if (v.kind == ER_VOCAB_NONE || desc.n_tokens == 0)
        throw Error("the model file has no tokenizer vocabulary" + (v.model.empty() ? std::string() : " ('" + v.model + "')"),
                    ER_E_FORMAT);

    const er_format_iface& iface = file.iface();
    v.tokens.resize(desc.n_tokens);
    for (uint64_t i = 0; i < desc.n_tokens; ++i) {
        er_error err{};
        er_str text{};
        float score = 0.0f;
        int32_t type = ER_TOKEN_NORMAL;
        check(iface.vocab_token(file.raw(), i, &text, &score, &type, &err), err, "vocabulary token " + std::to_string(i));
        v.tokens[i] = {to_string(text), desc.has_scores ? score : 0.0f, type};
    }
    v.merges.resize(desc.n_merges);
    for (uint64_t i = 0; i < desc.n_merges; ++i) {
        er_error err{};
        er_str merge{};
        check(iface.vocab_merge(file.raw(), i, &merge, &err), err, "vocabulary merge " + std::to_string(i));
        v.merges[i] = to_string(merge);
    }

    v.bos = id_or_none(desc.bos_id);
    v.eos = id_or_none(desc.eos_id);
    v.eot = id_or_none(desc.eot_id);
    v.eom = id_or_none(desc.eom_id);
    v.unk = id_or_none(desc.unk_id);
    v.pad = id_or_none(desc.pad_id);
    v.sep = id_or_none(desc.sep_id);
    v.add_bos = flag_or_none(desc.add_bos);
    v.add_eos = flag_or_none(desc.add_eos);
    v.add_space_prefix = flag_or_none(desc.add_space_prefix);
    v.chat_template = to_string(desc.chat_template);

    // The deprecated prefix/suffix/middle keys win when both are present, as in llama.cpp.
    auto either = [&](const char* deprecated, const char* current) {
        auto id = meta_token_id(file, deprecated);
        return id ? id : meta_token_id(file, current);
    };
    v.fim_pre = either("tokenizer.ggml.prefix_token_id", "tokenizer.ggml.fim_pre_token_id");
    v.fim_suf = either("tokenizer.ggml.suffix_token_id", "tokenizer.ggml.fim_suf_token_id");
    v.fim_mid = either("tokenizer.ggml.middle_token_id", "tokenizer.ggml.fim_mid_token_id");
    v.fim_pad = meta_token_id(file, "tokenizer.ggml.fim_pad_token_id");
    v.fim_rep = meta_token_id(file, "tokenizer.ggml.fim_rep_token_id");
    v.fim_sep = meta_token_id(file, "tokenizer.ggml.fim_sep_token_id");
    if (const auto name = file.meta_find("general.name"); name && name->type == ER_META_STRING)
        v.model_name = to_string(name->v.str);
    return v;
}

}  // namespace edgerun::text
