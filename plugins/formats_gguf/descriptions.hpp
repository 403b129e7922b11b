// What a GGUF file's metadata says about the model (hyperparameters) and its tokenizer,
// in the ABI's neutral form. Everything here throws sdk::Failure naming the key.
#pragma once

#include "gguf_file.hpp"

#include <edgerun/abi.h>

namespace edgerun::gguf {

// The token table: the tokenizer's vocabulary, which the model's vocabulary size must match.
inline constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";

// Fills `out` from `<arch>.*` keys. On a missing required key, fills what it can, names
// the key in out.missing_key, and throws ER_E_FORMAT ("missing metadata key '...'").
void fill_model_desc(const GgufFile& file, er_model_desc& out);

// The tokenizer.ggml.* arrays, looked up once at open. A pointer is null when the key is
// absent or has another type than expected; the vocab_* calls then re-run the full
// checks to report which.
struct VocabArrays {
    const er_meta_value* tokens = nullptr;
    const er_meta_value* scores = nullptr;
    const er_meta_value* token_types = nullptr;
    const er_meta_value* merges = nullptr;
};
VocabArrays find_vocab_arrays(const Metadata& metadata) noexcept;

void fill_vocab_desc(const GgufFile& file, er_vocab_desc& out);
void vocab_token(const GgufFile& file, const VocabArrays& arrays, uint64_t index, er_str* text, float* score,
                 int32_t* type);
er_str vocab_merge(const GgufFile& file, const VocabArrays& arrays, uint64_t index);

}  // namespace edgerun::gguf
