// A model's tokenizer data in neutral form, as a format plugin gives it (er_vocab_desc,
// vocab_token, vocab_merge): what the Tokenizer is built from. Tests build it in memory.
#pragma once

#include <edgerun/abi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edgerun {
class ModelFile;
}

namespace edgerun::text {

using TokenId = int32_t;
constexpr TokenId kNoToken = -1;

struct VocabToken {
    std::string text;
    float score = 0.0f;
    int32_t type = ER_TOKEN_NORMAL;  // ER_TOKEN_*
};

struct Vocab {
    int32_t kind = ER_VOCAB_NONE;  // ER_VOCAB_SPM or ER_VOCAB_BPE
    std::string model;             // the file's name for it: "llama", "gpt2"
    std::string pre;               // pre-tokenizer name (BPE), may be empty
    std::vector<VocabToken> tokens;
    std::vector<std::string> merges;  // BPE, "left right", highest priority first

    // Special ids and flags the file gives; absent ones fall back to what llama.cpp
    // assumes for the tokenizer type.
    std::optional<TokenId> bos, eos, eot, eom, unk, pad, sep;
    std::optional<TokenId> fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    std::optional<bool> add_bos, add_eos, add_space_prefix;

    std::string chat_template;  // empty when the file has none
    std::string model_name;     // general.name: a few tokenizers are patched by model name

    // Reads the vocabulary of an open model file through its format plugin. Throws
    // Error when the file has none or the plugin fails.
    static Vocab from_file(const ModelFile& file);
};

}  // namespace edgerun::text
