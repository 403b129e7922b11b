// What a stream of text holds back while its next piece may still complete a tag or a
// stop string: shared by the stop strings, the reasoning split and the tool-call split.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace edgerun::text {

inline bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The length of the longest end of `text` that `tag` starts with, short of all of `tag`:
// a tag cut by the end of the piece.
inline size_t cut_tag_length(std::string_view text, std::string_view tag) {
    if (tag.empty()) return 0;
    for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
        if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
    return 0;
}

// Where the text that must wait for the next piece begins: a cut `tag` at its end, and
// the whitespace before it (which belongs to neither side of a tag).
inline size_t held_from(std::string_view text, std::string_view tag) {
    size_t from = text.size() - cut_tag_length(text, tag);
    while (from > 0 && is_ascii_space(text[from - 1])) --from;
    return from;
}

}  // namespace edgerun::text
