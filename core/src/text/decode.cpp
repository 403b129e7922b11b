// Token ids back to bytes: per-token pieces, whole-sequence detokenization, and the
// streaming decoder that only ever emits whole UTF-8 characters.
#include <edgerun/text/tokenizer.hpp>

#include <edgerun/host_api.hpp>
#include <edgerun/text/unicode.hpp>

#include <cstdio>

namespace edgerun::text {

namespace {

constexpr uint32_t kSpecialAttrs = TOKEN_ATTR_UNKNOWN | TOKEN_ATTR_CONTROL;

std::string replace_space_markers(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
            out.push_back(' ');
            i += 2;
        } else {
            out.push_back(text[i]);
        }
    }
    return out;
}

// "<0xXX>" -> the byte.
char byte_of(const std::string& text) {
    unsigned value = 0;
    for (size_t i = 3; i < 5 && i < text.size(); ++i) {
        const char c = text[i];
        unsigned d = 0;
        if (c >= '0' && c <= '9') d = unsigned(c - '0');
        else if (c >= 'a' && c <= 'f') d = unsigned(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = unsigned(c - 'A' + 10);
        else break;
        value = value * 16 + d;
    }
    return char(value);
}

// GPT-2 byte characters back to bytes; a character that stands for no byte is kept
// visible the way llama.cpp shows it.
std::string bytes_of_byte_level(const std::string& text) {
    std::string out;
    for (uint32_t cp : decode_utf8(text)) {
        const int b = codepoint_to_byte(cp);
        if (b >= 0) {
            out.push_back(char(b));
            continue;
        }
        std::string utf8;
        append_utf8(utf8, cp);
        out += "[UNK_BYTE_0x";
        char hex[3];
        for (unsigned char c : utf8) {
            std::snprintf(hex, sizeof hex, "%02x", c);
            out += hex;
        }
        out += text + "]";
    }
    return out;
}

}  // namespace

std::string Tokenizer::render_piece(TokenId id, bool special) const {
    const Token& t = tokens_[id];
    if (!special && (t.attr & kSpecialAttrs)) return {};
    if (t.attr & (kSpecialAttrs | TOKEN_ATTR_USER_DEFINED)) return t.text;
    if (t.attr & TOKEN_ATTR_NORMAL) return kind_ == ER_VOCAB_SPM ? replace_space_markers(t.text) : bytes_of_byte_level(t.text);
    if (t.attr & TOKEN_ATTR_BYTE) return std::string(1, byte_of(t.text));
    return {};  // unused and undefined tokens have no text
}

std::string Tokenizer::token_to_piece(TokenId id, bool special, int lstrip) const {
    if (!valid(id)) throw Error("token id " + std::to_string(id) + " is out of range", ER_E_INVALID_ARGUMENT);
    if (!special && (tokens_[id].attr & kSpecialAttrs)) return {};
    const std::string& piece = pieces_[id];
    size_t skip = 0;
    while (int(skip) < lstrip && skip < piece.size() && piece[skip] == ' ') ++skip;
    return piece.substr(skip);
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool remove_special, bool unparse_special) const {
    bool remove_space = add_space_prefix_;
    if (remove_special && add_bos_ && !ids.empty() && ids.front() == bos_) {
        remove_space = false;
        ids = ids.subspan(1);
    }
    if (remove_special && add_eos_ && !ids.empty() && ids.back() == eos_) ids = ids.first(ids.size() - 1);

    std::string text;
    for (TokenId id : ids) {
        text += token_to_piece(id, unparse_special, remove_space ? 1 : 0);
        remove_space = false;
    }
    if (!clean_spaces_ || text.empty()) return text;

    // llama.cpp's three in-place passes; later reads see earlier writes, as there.
    size_t total = text.size();
    // 1. " ?", " !", " .", " ," lose the space.
    const size_t total1 = total;
    total = 1;
    for (size_t i = 1; i < total1; ++i) {
        const char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
        text[total++] = x;
    }
    // 2. " ' " becomes "'".
    const size_t total2 = total;
    total = 1;
    for (size_t i = 1; i < total2; ++i) {
        const char x = text[i];
        if (x == '\'' && i + 1 < total2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
            --total;
            text[++i] = '\0';
        }
        text[total++] = x;
    }
    // 3. " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
    const size_t total3 = total;
    total = 1;
    for (size_t i = 1; i < total3; ++i) {
        const char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < total3) {
            const char x1 = text[i + 1];
            if (x1 == 's' || x1 == 'm') {
                --total;
            } else if (x1 != 't' && x1 != 'd' && i + 2 < total3) {
                const char x2 = text[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
            }
        }
        text[total++] = x;
    }
    text.resize(total);
    return text;
}

// ------------------------------------------------------------ streaming --

namespace {

// Length of the well-formed UTF-8 prefix of s[i..] per Unicode's Table 3-7:
// returns {consumed, complete}. complete == false with consumed == n means the
// sequence is a valid but unfinished prefix; consumed < needed means ill-formed after
// `consumed` bytes (a maximal subpart).
struct Scan {
    size_t consumed;
    bool complete;
};

Scan scan_utf8(std::string_view s, size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return {1, true};
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds for the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) need = 2;
    else if (b0 == 0xE0) need = 3, lo = 0xA0;
    else if (b0 >= 0xE1 && b0 <= 0xEC) need = 3;
    else if (b0 == 0xED) need = 3, hi = 0x9F;
    else if (b0 >= 0xEE && b0 <= 0xEF) need = 3;
    else if (b0 == 0xF0) need = 4, lo = 0x90;
    else if (b0 >= 0xF1 && b0 <= 0xF3) need = 4;
    else if (b0 == 0xF4) need = 4, hi = 0x8F;
    else return {1, false};  // can never start a character
    size_t k = 1;
    for (; k < need; ++k) {
        if (i + k >= s.size()) return {k, false};  // unfinished, may still complete
        const auto b = static_cast<unsigned char>(s[i + k]);
        const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (b < l || b > h) return {k, false};
    }
    return {need, true};
}

const char kReplacement[] = "\xEF\xBF\xBD";

}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
    pending_.append(bytes);
    std::string out;
    size_t i = 0;
    while (i < pending_.size()) {
        const Scan sc = scan_utf8(pending_, i);
        if (sc.complete) {
            out.append(pending_, i, sc.consumed);
            i += sc.consumed;
        } else if (i + sc.consumed >= pending_.size() && sc.consumed > 0 &&
                   static_cast<unsigned char>(pending_[i]) >= 0xC2 && static_cast<unsigned char>(pending_[i]) <= 0xF4) {
            break;  // a character still arriving
        } else {
            out += kReplacement;
            i += sc.consumed;
        }
    }
    pending_.erase(0, i);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out;
    size_t i = 0;
    while (i < pending_.size()) {
        const Scan sc = scan_utf8(pending_, i);
        if (sc.complete) out.append(pending_, i, sc.consumed);
        else out += kReplacement;
        i += sc.consumed;
    }
    pending_.clear();
    return out;
}

}  // namespace edgerun::text
