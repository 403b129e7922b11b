// Pieces of GBNF text for the JSON Schema conversion (json_schema_grammar.hpp): literals,
// repetitions, integer ranges, and the characters of a JSON string that a set of keys or
// a `pattern` admits. Characters that JSON escapes ('"', '\\', control characters) are
// admitted in their escaped spelling and the others plain, so the grammar stays narrower
// than the schema where JSON has two spellings, never wider.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::gbnf {

using Bound = std::optional<size_t>;  // an upper bound; none: no limit

// Repetition counts beyond this would expand into grammars too large to be worth it (the
// grammar parser, like llama.cpp's, reads a larger maximum as none).
constexpr size_t kMaxCount = 2000;

// The rules JSON grammars share (space, string, number, value, date, ...): defined once
// each, with the shared rules their bodies use.
struct SharedRule {
    const char* name;
    const char* body;
    std::vector<const char*> uses;
};
const std::vector<SharedRule>& shared_rules();

std::string join(const std::vector<std::string>& parts, std::string_view separator);
// `alternatives` in parentheses when there are several.
std::string group(const std::string& alternatives);
// A GBNF string literal of `bytes`.
std::string literal(std::string_view bytes);
// "*", "+", "?", "{m}", "{m,}", "{m,n}"; "" for exactly once.
std::string quantifier(size_t min, Bound max);
// `item` (one GBNF term) min..max times, `separator` between them.
std::string repeat(const std::string& item, size_t min, Bound max, const std::string& separator = "");

// The decimal spellings of the integers min..max (JSON's: no leading zeros); a side
// without a bound stops at 16 digits.
std::string integer_range(std::optional<int64_t> min, std::optional<int64_t> max);

// The characters of a JSON string (between its quotes) that is none of `keys`; uses the
// rule `char` (any JSON string character). Throws Error (ER_E_INVALID_ARGUMENT) for a key
// over 200 characters.
std::string string_chars_except(const std::vector<std::string>& keys);

// The characters of a JSON string (between its quotes) that `pattern`, an ECMA-262
// regular expression, matches somewhere (it is anchored only where it says ^ or $); may
// use the rule `char`. Supports literals, escapes, '.', classes, \d \w \s and their
// negations, groups, '|', * + ? {m,n} (lazy or not), and ^ $ at the ends of top-level
// alternatives. Throws Error (ER_E_INVALID_ARGUMENT) naming what it does not support
// (lookarounds, backreferences, \b, \p{...}, groups nested over 64 deep, ...) and where.
std::string pattern_chars(const std::string& pattern);

}  // namespace edgerun::gbnf
