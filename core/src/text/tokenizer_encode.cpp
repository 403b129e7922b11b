// Text to token ids: special-token splitting, then SentencePiece-style or byte-level BPE
// merging of each piece of plain text.
#include <edgerun/text/tokenizer.hpp>

#include "pretokenizer.hpp"

#include <edgerun/text/unicode.hpp>

#include <cctype>
#include <queue>

namespace edgerun::text {

namespace {

const std::string kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

bool is_c_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// A symbol is a run of bytes of the text being merged, linked to its neighbours.
struct Symbol {
    int prev;
    int next;
    size_t offset;
    size_t n;  // 0 once merged into its left neighbour
};

// Cuts text into one symbol per character, judging lengths by lead bytes only.
std::vector<Symbol> make_symbols(std::string_view text) {
    std::vector<Symbol> symbols;
    size_t offset = 0;
    int index = 0;
    while (offset < text.size()) {
        const size_t len = std::min(utf8_sequence_length(static_cast<unsigned char>(text[offset])), text.size() - offset);
        symbols.push_back({index - 1, offset + len == text.size() ? -1 : index + 1, offset, len});
        offset += len;
        ++index;
    }
    return symbols;
}

}  // namespace

// Splits text at occurrences of special tokens, longest token first; each token's
// occurrences are found left to right in every piece still unsplit. Control and
// unknown tokens are only looked for when parse_special is on.
std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text, bool parse_special) const {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({kNoToken, 0, text.size()});
    std::vector<Fragment> next;
    for (TokenId special : special_tokens_) {
        const Token& tok = tokens_[special];
        if (!parse_special && (tok.attr & (TOKEN_ATTR_CONTROL | TOKEN_ATTR_UNKNOWN))) continue;
        const std::string& needle = tok.text;
        next.clear();
        bool changed = false;
        for (const Fragment& f : fragments) {
            if (f.token != kNoToken) {
                next.push_back(f);
                continue;
            }
            size_t pos = f.offset;
            const size_t end = f.offset + f.length;
            for (;;) {
                const size_t match = text.substr(0, end).find(needle, pos);
                if (match == std::string_view::npos) break;
                changed = true;
                size_t left_end = match;
                if (tok.attr & TOKEN_ATTR_LSTRIP)
                    while (left_end > pos && is_c_space(text[left_end - 1])) --left_end;
                if (left_end > pos) next.push_back({kNoToken, pos, left_end - pos});
                next.push_back({special, match, needle.size()});
                pos = match + needle.size();
                if (tok.attr & TOKEN_ATTR_RSTRIP)
                    while (pos < end && is_c_space(text[pos])) ++pos;
            }
            if (pos < end) next.push_back({kNoToken, pos, end - pos});
        }
        if (changed) fragments.swap(next);
    }
    return fragments;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<TokenId> out;
    const std::vector<Fragment> fragments = partition(text, parse_special);
    if (add_special && add_bos_) out.push_back(bos_);
    if (kind_ == ER_VOCAB_SPM) {
        bool prev_special = true;  // text at the start, or after a special token, gets the space prefix
        for (const Fragment& f : fragments) {
            if (f.token != kNoToken) {
                out.push_back(f.token);
                prev_special = true;
                continue;
            }
            std::string piece = add_space_prefix_ && prev_special ? " " : "";
            piece += text.substr(f.offset, f.length);
            std::string escaped;
            escaped.reserve(piece.size() + 8);
            for (char c : piece) {
                if (c == ' ') escaped += kSpaceMarker;
                else escaped.push_back(c);
            }
            encode_spm(escaped, out);
            prev_special = false;
        }
    } else {
        for (const Fragment& f : fragments) {
            if (f.token != kNoToken) out.push_back(f.token);
            else encode_bpe(text.substr(f.offset, f.length), out);
        }
    }
    if (add_special && add_eos_) out.push_back(eos_);
    return out;
}

TokenId Tokenizer::byte_token(uint8_t byte) const {
    static const char* const hex = "0123456789ABCDEF";
    const char name[7] = {'<', '0', 'x', hex[byte >> 4], hex[byte & 15], '>', 0};
    TokenId id = find(name);
    if (id == kNoToken) id = find(std::string(1, char(byte)));
    // llama.cpp aborts here; a vocabulary without the byte falls back to <unk>.
    return id == kNoToken ? unk_ : id;
}

// SentencePiece BPE: repeatedly merge the adjacent pair whose concatenation is the
// highest-scoring token (leftmost on ties); what never becomes a token falls back to
// byte tokens.
void Tokenizer::encode_spm(std::string_view text, std::vector<TokenId>& out) const {
    std::vector<Symbol> symbols = make_symbols(text);
    if (symbols.empty()) return;

    struct Bigram {
        int left, right;
        float score;
        size_t size;
    };
    auto lower_priority = [](const Bigram& a, const Bigram& b) {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    };
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower_priority)> queue(lower_priority);
    auto try_pair = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const std::string_view joined = text.substr(symbols[left].offset, symbols[left].n + symbols[right].n);
        const TokenId id = find(joined);
        if (id == kNoToken) return;
        queue.push({left, right, tokens_[id].score, joined.size()});
    };
    for (int i = 1; i < int(symbols.size()); ++i) try_pair(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& left = symbols[b.left];
        Symbol& right = symbols[b.right];
        if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;  // stale
        left.n += right.n;
        right.n = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = b.left;
        try_pair(left.prev, b.left);
        try_pair(b.left, left.next);
    }

    // A merged symbol is always a token; only single characters can miss the vocabulary.
    for (int i = 0; i != -1; i = symbols[i].next) {
        const std::string_view piece = text.substr(symbols[i].offset, symbols[i].n);
        const TokenId id = find(piece);
        if (id != kNoToken) {
            out.push_back(id);
            continue;
        }
        for (char c : piece) {
            const TokenId b = byte_token(static_cast<uint8_t>(c));
            if (b != kNoToken) out.push_back(b);
        }
    }
}

int Tokenizer::bpe_rank(const std::string& left, const std::string& right) const {
    std::string key;
    key.reserve(left.size() + right.size() + 1);
    key += left;
    key += ' ';
    key += right;
    auto it = merge_ranks_.find(key);
    return it == merge_ranks_.end() ? -1 : it->second;
}

// Byte-level BPE: each pre-tokenized word, in GPT-2's byte characters, is merged pair
// by pair in merge-rank order (leftmost on ties); a leftover symbol that is not a token
// is emitted byte by byte where those bytes are tokens.
void Tokenizer::encode_bpe(std::string_view text, std::vector<TokenId>& out) const {
    struct Bigram {
        int left, right;
        std::string text;
        int rank;
    };
    auto lower_priority = [](const Bigram& a, const Bigram& b) {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    };

    for (const std::string& word : pre_tokenizer_->split(text)) {
        if (ignore_merges_) {
            const TokenId whole = find(word);
            if (whole != kNoToken) {
                out.push_back(whole);
                continue;
            }
        }
        std::vector<Symbol> symbols = make_symbols(word);
        std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower_priority)> queue(lower_priority);
        auto text_of = [&](int i) { return word.substr(symbols[i].offset, symbols[i].n); };
        auto try_pair = [&](int left, int right) {
            if (left < 0 || right < 0) return;
            std::string l = text_of(left), r = text_of(right);
            const int rank = bpe_rank(l, r);
            if (rank < 0) return;
            queue.push({left, right, l + r, rank});
        };
        for (int i = 1; i < int(symbols.size()); ++i) try_pair(i - 1, i);

        while (!queue.empty()) {
            Bigram b = queue.top();
            queue.pop();
            Symbol& left = symbols[b.left];
            Symbol& right = symbols[b.right];
            if (left.n == 0 || right.n == 0) continue;
            if (left.n + right.n != b.text.size() || text_of(b.left) + text_of(b.right) != b.text) continue;  // stale
            left.n += right.n;
            right.n = 0;
            left.next = right.next;
            if (right.next >= 0) symbols[right.next].prev = b.left;
            try_pair(left.prev, b.left);
            try_pair(b.left, left.next);
        }

        for (const Symbol& s : symbols) {
            if (s.n == 0) continue;
            const std::string piece = word.substr(s.offset, s.n);
            const TokenId id = find(piece);
            if (id != kNoToken) {
                out.push_back(id);
                continue;
            }
            for (char c : piece) {
                const TokenId b = find(std::string(1, c));
                if (b != kNoToken) out.push_back(b);
            }
        }
    }
}

}  // namespace edgerun::text
