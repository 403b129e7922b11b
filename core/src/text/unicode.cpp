#include <edgerun/text/unicode.hpp>

#include "unicode_tables.hpp"

#include <algorithm>
#include <array>

namespace edgerun::text {

uint16_t codepoint_flags(uint32_t cp) {
    using detail::kUnicodeRanges;
    if (cp > kMaxCodepoint) return 0;
    // ASCII is hot: look it up directly. The table's first ranges cover it in order.
    static const std::array<uint16_t, 128> ascii = [] {
        std::array<uint16_t, 128> table{};
        unsigned r = 0;
        for (uint32_t c = 0; c < 128; ++c) {
            while (r + 1 < detail::kUnicodeRangeCount && kUnicodeRanges[r + 1].first <= c) ++r;
            table[c] = kUnicodeRanges[r].flags;
        }
        return table;
    }();
    if (cp < 128) return ascii[cp];
    const auto* end = kUnicodeRanges + detail::kUnicodeRangeCount;
    const auto* it = std::upper_bound(kUnicodeRanges, end, cp,
                                      [](uint32_t value, const detail::UnicodeRange& r) { return value < r.first; });
    return (it - 1)->flags;
}

const char* unicode_tables_version() { return detail::kUnicodeVersion; }

namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

std::vector<uint32_t> decode_utf8(std::string_view text) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            out.push_back(c);
            i += 1;
        } else if ((c & 0xE0) == 0xC0 && i + 1 < n && is_continuation(s[i + 1])) {
            out.push_back((uint32_t(c & 0x1F) << 6) | (s[i + 1] & 0x3F));
            i += 2;
        } else if ((c & 0xF0) == 0xE0 && i + 2 < n && is_continuation(s[i + 1]) && is_continuation(s[i + 2])) {
            out.push_back((uint32_t(c & 0x0F) << 12) | (uint32_t(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F));
            i += 3;
        } else if ((c & 0xF8) == 0xF0 && i + 3 < n && is_continuation(s[i + 1]) && is_continuation(s[i + 2]) &&
                   is_continuation(s[i + 3])) {
            const uint32_t cp = (uint32_t(c & 0x07) << 18) | (uint32_t(s[i + 1] & 0x3F) << 12) |
                                (uint32_t(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
            if (cp <= kMaxCodepoint) {
                out.push_back(cp);
                i += 4;
            } else {
                // llama.cpp decodes this, then aborts re-encoding it; one U+FFFD per byte
                // is the policy every other malformed byte gets.
                out.push_back(kReplacementChar);
                i += 1;
            }
        } else {
            out.push_back(kReplacementChar);
            i += 1;
        }
    }
    return out;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(char(cp));
    } else if (cp < 0x800) {
        out.push_back(char(0xC0 | (cp >> 6)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(char(0xE0 | (cp >> 12)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(char(0xF0 | ((cp >> 18) & 0x07)));
        out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    }
}

std::string encode_utf8(const std::vector<uint32_t>& cps) {
    std::string out;
    out.reserve(cps.size());
    for (uint32_t cp : cps) append_utf8(out, cp);
    return out;
}

namespace {

// GPT-2's table: printable Latin-1 bytes stand for themselves; the others (controls,
// space, DEL, NBSP, soft hyphen...) are moved, in byte order, to U+0100 onwards.
struct ByteMap {
    std::array<uint32_t, 256> to_cp{};
    std::array<std::string, 256> to_utf8;
    ByteMap() {
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            to_cp[b] = printable ? uint32_t(b) : next++;
            append_utf8(to_utf8[b], to_cp[b]);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t byte) { return byte_map().to_cp[byte]; }

const std::string& byte_to_utf8(uint8_t byte) { return byte_map().to_utf8[byte]; }

int codepoint_to_byte(uint32_t cp) {
    if (cp < 256) {
        const bool printable = (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE);
        return printable ? int(cp) : -1;
    }
    const auto& map = byte_map().to_cp;
    if (cp >= 256 + 68) return -1;  // 68 bytes are not printable, so they take U+0100..U+0143
    for (int b = 0; b < 256; ++b)
        if (map[b] == cp) return b;
    return -1;
}

}  // namespace edgerun::text
