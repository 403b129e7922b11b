// Unicode helpers the tokenizers share: code point classes, UTF-8 decoding with the same
// error policy as llama.cpp, and GPT-2's byte <-> printable-character mapping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::text {

// Code point classes. Exactly one general-category bit is set for every code point up to
// U+10FFFF (unassigned ones count as OTHER, like regex's \p{C}); WHITESPACE is the
// White_Space property, which is what \s means in the pre-tokenizer regexes.
enum CpFlag : uint16_t {
    CP_NUMBER = 1,       // \p{N}
    CP_LETTER = 2,       // \p{L}
    CP_SEPARATOR = 4,    // \p{Z}
    CP_MARK = 8,         // \p{M}
    CP_PUNCTUATION = 16, // \p{P}
    CP_SYMBOL = 32,      // \p{S}
    CP_OTHER = 64,       // \p{C}
    CP_WHITESPACE = 128, // \s
};

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr uint32_t kReplacementChar = 0xFFFD;

// CpFlag bits of `cp`; 0 beyond U+10FFFF.
uint16_t codepoint_flags(uint32_t cp);

// The Unicode version the class table was generated from ("15.0.0").
const char* unicode_tables_version();

// Length of the UTF-8 sequence a byte starts, judged by its high bits alone (1 for
// continuation bytes): how SentencePiece-style tokenizers cut text into symbols.
inline size_t utf8_sequence_length(unsigned char lead) {
    static constexpr unsigned char kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLength[lead >> 4];
}

// Decodes UTF-8 the way the reference tokenizers do before pre-tokenizing: a byte that
// cannot start a well-formed sequence (by lead bits and continuation bytes present)
// becomes one U+FFFD and decoding resumes at the next byte. Overlong forms and
// surrogates decode to their value; a 4-byte form beyond U+10FFFF counts as invalid.
std::vector<uint32_t> decode_utf8(std::string_view text);

void append_utf8(std::string& out, uint32_t cp);
std::string encode_utf8(const std::vector<uint32_t>& cps);

// GPT-2 byte-level BPE: every byte has a printable stand-in character.
uint32_t byte_to_codepoint(uint8_t byte);
// The byte a stand-in character represents, or -1 when `cp` is not one.
int codepoint_to_byte(uint32_t cp);
// UTF-8 of byte_to_codepoint(byte), precomputed.
const std::string& byte_to_utf8(uint8_t byte);

}  // namespace edgerun::text
