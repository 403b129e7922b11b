#include <doctest/doctest.h>

#include <edgerun/text/unicode.hpp>

#include <set>

using namespace edgerun::text;

TEST_CASE("code point classes: one category each, plus White_Space") {
    CHECK(codepoint_flags('a') == CP_LETTER);
    CHECK(codepoint_flags(U'\u00E9') == CP_LETTER);  // é
    CHECK(codepoint_flags(U'\u4E2D') == CP_LETTER);  // 中
    CHECK(codepoint_flags('7') == CP_NUMBER);
    CHECK(codepoint_flags(U'\u0663') == CP_NUMBER);  // Arabic-Indic three
    CHECK(codepoint_flags(U'\u00BD') == CP_NUMBER);  // ½ (No)
    CHECK(codepoint_flags('!') == CP_PUNCTUATION);
    CHECK(codepoint_flags(U'\u3002') == CP_PUNCTUATION);  // 。
    CHECK(codepoint_flags('$') == CP_SYMBOL);
    CHECK(codepoint_flags('~') == CP_SYMBOL);
    CHECK(codepoint_flags(U'\U0001F600') == CP_SYMBOL);  // 😀
    CHECK(codepoint_flags(U'\u0301') == CP_MARK);         // combining acute
    CHECK(codepoint_flags(' ') == (CP_SEPARATOR | CP_WHITESPACE));
    CHECK(codepoint_flags(U'\u3000') == (CP_SEPARATOR | CP_WHITESPACE));
    CHECK(codepoint_flags('\n') == (CP_OTHER | CP_WHITESPACE));
    CHECK(codepoint_flags(0x85) == (CP_OTHER | CP_WHITESPACE));  // NEL
    CHECK(codepoint_flags(0x1C) == CP_OTHER);                    // not White_Space
    CHECK(codepoint_flags(U'\u200B') == CP_OTHER);               // zero width space is Cf
    CHECK(codepoint_flags(0x0378) == CP_OTHER);                  // unassigned
    CHECK(codepoint_flags(0xD800) == CP_OTHER);                  // surrogate
    CHECK(codepoint_flags(0x10FFFF) == CP_OTHER);
    CHECK(codepoint_flags(0x110000) == 0);
    CHECK(std::string(unicode_tables_version()) == "15.0.0");
}

TEST_CASE("UTF-8 decoding replaces each byte that cannot start a character") {
    using V = std::vector<uint32_t>;
    CHECK(decode_utf8("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80") == V{'a', 0xE9, 0x4E2D, 0x1F600});
    CHECK(decode_utf8("\x80") == V{kReplacementChar});
    CHECK(decode_utf8("\xE2\x82") == V{kReplacementChar, kReplacementChar});  // truncated at the end
    CHECK(decode_utf8("\xC3(") == V{kReplacementChar, '('});
    CHECK(decode_utf8("\xC0\x80") == V{0});               // overlong forms decode (as llama.cpp does)
    CHECK(decode_utf8("\xED\xA0\x80") == V{0xD800});      // so do surrogates
    CHECK(decode_utf8("\xF4\x90\x80\x80") == V(4, kReplacementChar));  // beyond U+10FFFF
    CHECK(decode_utf8("\xFF") == V{kReplacementChar});
    CHECK(encode_utf8({'a', 0xE9, 0x4E2D, 0x1F600}) == "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
}

TEST_CASE("GPT-2 byte characters: a bijection between bytes and printable code points") {
    std::set<uint32_t> seen;
    for (int b = 0; b < 256; ++b) {
        const uint32_t cp = byte_to_codepoint(uint8_t(b));
        CHECK(codepoint_to_byte(cp) == b);
        CHECK(byte_to_utf8(uint8_t(b)) == encode_utf8({cp}));
        seen.insert(cp);
        const uint16_t f = codepoint_flags(cp);
        CHECK_FALSE((f & CP_WHITESPACE));  // the point of the mapping: no spaces or controls
        CHECK_FALSE((f & CP_OTHER));
    }
    CHECK(seen.size() == 256);
    CHECK(byte_to_codepoint('a') == 'a');
    CHECK(byte_to_codepoint(' ') == 0x120);   // 'Ġ'
    CHECK(byte_to_codepoint('\n') == 0x10A);  // 'Ċ'
    CHECK(codepoint_to_byte(' ') == -1);
    CHECK(codepoint_to_byte(0x144) == -1);
}
