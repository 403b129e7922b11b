// A synthetic byte-level BPE vocabulary (GPT-2 style) of a preset's exact size, that
// llama.cpp's tokenizer accepts: the 256 byte tokens, merges that build letter strings
// up to the size needed (each merge joins a token and one letter, so every token is
// reachable), the model's special tokens at their real ids, padding where the real
// vocabulary pads. Not the real vocabulary, but the same shape and code paths.
#pragma once

#include <edgerun/authoring/synth_presets.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace edgerun::authoring {

struct SynthVocab {
    std::string model = "gpt2";  // tokenizer.ggml.model
    std::string pre;             // tokenizer.ggml.pre: a pre-tokenizer llama.cpp knows
    std::vector<std::string> tokens;
    std::vector<int32_t> types;  // ER_TOKEN_* (GGUF's token types)
    std::vector<std::string> merges;
    int32_t bos = -1, eos = -1, pad = -1, unk = -1;
    bool add_bos = false;
    bool write_add_space_prefix = false;  // the key (false) exists in SmolLM2's conversion only
    std::string chat_template;
    // Ordinary tokens that read as a word after a space ("Ġthe"): the synthesized
    // model's likely outputs are drawn from these, so its text is readable.
    std::vector<int32_t> word_tokens;
};

SynthVocab make_vocab(const Preset& preset);

}  // namespace edgerun::authoring
