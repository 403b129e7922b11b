#include "cursor.hpp"

namespace edgerun::gguf {

namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 when it is not a valid one
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view s, size_t i) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    if (c < 0x80) return 1;
    size_t n;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
    else return 0;
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_sequence_length(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string quote_text(std::string_view s, size_t max_bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "'";
    size_t i = 0;
    while (i < s.size() && i < max_bytes) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        const size_t n = utf8_sequence_length(s, i);
        if (c >= 0x20 && c != 0x7F && c != '\'' && c != '\\' && n != 0) {
            out.append(s.substr(i, n));
            i += n;
            continue;
        }
        out += '\\';
        if (c == '\'' || c == '\\') out += static_cast<char>(c);
        else if (c == '\n') out += 'n';
        else if (c == '\t') out += 't';
        else { out += 'x'; out += kHex[c >> 4]; out += kHex[c & 15]; }
        ++i;
    }
    out += '\'';
    if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
    return out;
}

}  // namespace edgerun::gguf
