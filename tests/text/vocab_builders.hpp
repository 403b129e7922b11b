// Small vocabularies built in memory for the unit tests.
#pragma once

#include <edgerun/text/unicode.hpp>
#include <edgerun/text/vocab.hpp>

#include <cstdio>

namespace edgerun::text::test {

// SentencePiece-style, before its pieces: <unk> <s> </s> (ids 0..2; </s> ends generation).
inline Vocab spm_specials() {
    Vocab v;
    v.kind = ER_VOCAB_SPM;
    v.model = "llama";
    v.tokens.push_back({"<unk>", 0.0f, ER_TOKEN_UNKNOWN});
    v.tokens.push_back({"<s>", 0.0f, ER_TOKEN_CONTROL});
    v.tokens.push_back({"</s>", 0.0f, ER_TOKEN_CONTROL});
    return v;
}

// spm_specials(), then the 256 byte tokens (ids 3..258).
inline Vocab spm_vocab_with_bytes() {
    Vocab v = spm_specials();
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        v.tokens.push_back({name, 0.0f, ER_TOKEN_BYTE});
    }
    return v;
}

// SentencePiece-style: spm_vocab_with_bytes(), then pieces whose scores make "▁hello" and
// "▁world" assemble pair by pair.
inline Vocab small_spm_vocab() {
    Vocab v = spm_vocab_with_bytes();
    const std::string sp = "\xE2\x96\x81";
    const std::pair<std::string, float> pieces[] = {
        {sp, -5}, {"h", -5}, {"e", -5}, {"l", -5}, {"o", -5}, {"w", -5}, {"r", -5}, {"d", -5},
        {"he", -1}, {"ll", -2}, {"llo", -1.5f}, {"hello", -1}, {sp + "hello", -0.5f},
        {"or", -1}, {"ld", -1.2f}, {"orld", -1.5f}, {"world", -1.1f}, {sp + "world", -0.4f},
    };
    for (const auto& [text, score] : pieces) v.tokens.push_back({text, score, ER_TOKEN_NORMAL});
    return v;
}

// GPT-2 style: the 256 byte characters in byte order (so id == byte), merges that build
// "hello" and "Ġworld", and three special tokens.
inline Vocab small_bpe_vocab(const std::string& pre) {
    Vocab v;
    v.kind = ER_VOCAB_BPE;
    v.model = "gpt2";
    v.pre = pre;
    for (int b = 0; b < 256; ++b) v.tokens.push_back({byte_to_utf8(uint8_t(b)), 0.0f, ER_TOKEN_NORMAL});
    const std::string G = "\xC4\xA0";  // 'Ġ', the byte character of ' '
    const std::pair<std::string, std::string> merges[] = {
        {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {G, "w"}, {"o", "r"}, {G + "w", "or"}, {"l", "d"},
        {G + "wor", "ld"},
    };
    for (const auto& [a, b] : merges) {
        v.merges.push_back(a + " " + b);
        v.tokens.push_back({a + b, 0.0f, ER_TOKEN_NORMAL});
    }
    v.tokens.push_back({"<|endoftext|>", 0.0f, ER_TOKEN_CONTROL});
    v.tokens.push_back({"<|im_end|>", 0.0f, ER_TOKEN_USER_DEFINED});
    v.tokens.push_back({"<tool>", 0.0f, ER_TOKEN_USER_DEFINED});
    return v;
}

}  // namespace edgerun::text::test
