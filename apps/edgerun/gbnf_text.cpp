#include "gbnf_text.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/text/json_text.hpp>
#include <edgerun/text/unicode.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <utility>

namespace edgerun::gbnf {

namespace {

constexpr int64_t kMaxMagnitude = 9'999'999'999'999'999;  // 16 digits, as llama.cpp's integers
// Nesting the grammar parser takes (256 groups) with room to spare.
constexpr int kMaxNesting = 64;
constexpr size_t kMaxKeyLength = 200;

// How a JSON string spells the character: escaped where JSON requires it.
std::string json_spelling(uint32_t cp) {
    std::string utf8;
    text::append_utf8(utf8, cp);
    const std::string quoted = text::json_quote(utf8);
    return quoted.substr(1, quoted.size() - 2);
}

// ---- integer ranges, digit by digit ----

std::string digit_class(char from, char to) {
    return from == to ? std::string("\"") + from + "\"" : std::string("[") + from + "-" + to + "]";
}
std::string any_digits(size_t n) { return n == 0 ? "" : " [0-9]" + quantifier(n, n); }

// The digit strings of a's length from `a` to `b`.
std::string same_length_range(const std::string& a, const std::string& b) {
    size_t common = 0;
    while (common < a.size() && a[common] == b[common]) ++common;
    std::string out = common ? literal(a.substr(0, common)) : "";
    if (common == a.size()) return out;
    const std::string lo = a.substr(common + 1), hi = b.substr(common + 1);
    const size_t rest = lo.size();
    const bool lo_is_floor = lo == std::string(rest, '0'), hi_is_ceiling = hi == std::string(rest, '9');
    char first = a[common], last = b[common];
    std::vector<std::string> alternatives;
    if (!lo_is_floor) {  // the first digit with the rest from `lo` up; then the digits above it
        alternatives.push_back(digit_class(first, first) + " " + group(same_length_range(lo, std::string(rest, '9'))));
        ++first;
    }
    if (!hi_is_ceiling) --last;
    if (first <= last) alternatives.push_back(digit_class(first, last) + any_digits(rest));
    if (!hi_is_ceiling)
        alternatives.push_back(digit_class(b[common], b[common]) + " " +
                               group(same_length_range(std::string(rest, '0'), hi)));
    return (out.empty() ? "" : out + " ") + group(join(alternatives, " | "));
}

// The decimal spellings of from..to (0 <= from <= to), without leading zeros.
std::string natural_range(int64_t from, int64_t to) {
    const std::string lo = std::to_string(from), hi = std::to_string(to);
    std::vector<std::string> alternatives;
    size_t run_from = 0;  // a run of lengths that take every number of their length: [1-9] [0-9]{m,n}
    auto end_run = [&](size_t past) {
        if (!run_from) return;
        const size_t fewest = run_from - 1, most = past - 2;
        alternatives.push_back(most == 0 ? "[1-9]" : "[1-9] [0-9]" + quantifier(fewest, most));
        run_from = 0;
    };
    for (size_t length = lo.size(); length <= hi.size(); ++length) {
        std::string lowest(length, '0'), highest(length, '9');
        lowest[0] = '1';
        const std::string a = length == lo.size() ? lo : lowest;
        const std::string b = length == hi.size() ? hi : highest;
        if (a == lowest && b == highest) {
            if (!run_from) run_from = length;
            continue;
        }
        end_run(length);
        alternatives.push_back(same_length_range(a, b));
    }
    end_run(hi.size() + 1);
    return join(alternatives, " | ");
}

// ---- sets of characters, as the characters of a JSON string ----

struct CharSet {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    bool negated = false;
    bool has(uint32_t cp) const {
        const bool listed =
            std::any_of(ranges.begin(), ranges.end(), [&](auto r) { return r.first <= cp && cp <= r.second; });
        return listed != negated;
    }
};
const CharSet kDigits{{{'0', '9'}}};
const CharSet kWordChars{{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}};
const CharSet kSpaces{{{0x09, 0x0D},
                       {0x20, 0x20},
                       {0xA0, 0xA0},
                       {0x1680, 0x1680},
                       {0x2000, 0x200A},
                       {0x2028, 0x2029},
                       {0x202F, 0x202F},
                       {0x205F, 0x205F},
                       {0x3000, 0x3000},
                       {0xFEFF, 0xFEFF}}};
const CharSet kDot{{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}, true};  // a regex '.': not a line end

// A character inside a GBNF class: escaped where it would mean something there, or is not ASCII.
std::string class_char(uint32_t cp) {
    const bool special = cp < 0x20 || cp == 0x7F || cp == '-' || cp == '^' || cp == ']' || cp == '[' || cp == '\\';
    if (cp < 0x80 && !special) return std::string(1, char(cp));
    char out[12];
    if (cp <= 0xFF)
        std::snprintf(out, sizeof out, "\\x%02X", unsigned(cp));
    else if (cp <= 0xFFFF)
        std::snprintf(out, sizeof out, "\\u%04X", unsigned(cp));
    else
        std::snprintf(out, sizeof out, "\\U%08X", unsigned(cp));
    return out;
}
std::string class_range(uint32_t from, uint32_t to) {
    return from > to ? "" : from == to ? class_char(from) : class_char(from) + "-" + class_char(to);
}

// The set's characters as a JSON string spells them: the ones JSON needs escaped ('"',
// '\\', control characters) in their escaped form only, the others plain only, so each
// character has one spelling (narrower than JSON, never wider: "\u0041" is not an 'A').
// A negated set leaves out the control characters without a short escape.
std::string set_expr(const CharSet& set) {
    std::string plain;
    for (const auto& [from, to] : set.ranges) {
        if (set.negated) {
            plain += class_range(from, to);
            continue;
        }
        const uint32_t lo = std::max<uint32_t>(from, 0x20);
        for (const auto& [a, b] : {std::pair{lo, std::min<uint32_t>(to, '"' - 1)},
                                   {std::max<uint32_t>(lo, '"' + 1), std::min<uint32_t>(to, '\\' - 1)},
                                   {std::max<uint32_t>(lo, '\\' + 1), to}})
            plain += class_range(a, b);
    }
    std::vector<std::string> alternatives;
    if (set.negated)
        alternatives.push_back("[^" + plain + "\"\\\\\\x00-\\x1F]");
    else if (!plain.empty())
        alternatives.push_back("[" + plain + "]");
    std::vector<std::string> short_escapes;  // \" \\ \b \f \n \r \t, written together as "\\" [...]
    for (uint32_t cp = 0; cp <= '\\'; cp = cp == 0x1F ? '"' : cp == '"' ? '\\' : cp + 1) {
        if (!set.has(cp)) continue;
        const std::string spelled = json_spelling(cp);
        if (spelled.size() == 2)
            short_escapes.push_back(spelled);
        else if (!set.negated)
            alternatives.push_back(literal(spelled));
    }
    if (short_escapes.size() == 1) {
        alternatives.push_back(literal(short_escapes[0]));
    } else if (!short_escapes.empty()) {
        std::string letters;
        for (const std::string& escape : short_escapes) letters += escape[1] == '\\' ? "\\\\" : escape.substr(1);
        alternatives.push_back("\"\\\\\" [" + letters + "]");
    }
    return group(join(alternatives, " | "));
}

// ---- `pattern`: a regular expression's subset as the characters of a JSON string ----

class PatternConverter {
public:
    explicit PatternConverter(const std::string& pattern) : source_(pattern), cps_(text::decode_utf8(pattern)) {}

    // JSON Schema's patterns search: an end without an anchor admits anything there.
    std::string convert() {
        std::vector<std::string> alternatives;
        do {
            const bool from_start = eat('^');
            bool to_end = false;
            bool nullable = false;
            const std::string body = sequence(true, to_end, nullable);
            std::vector<std::string> parts;
            if (!from_start) parts.push_back("char*");
            if (!body.empty()) parts.push_back(body);
            if (!to_end && !(body.empty() && !from_start)) parts.push_back("char*");
            alternatives.push_back(join(parts, " "));
        } while (eat('|'));
        if (pos_ < cps_.size()) fail("an unmatched ')'");
        return group(join(alternatives, " | "));
    }

private:
    std::string source_;
    std::vector<uint32_t> cps_;
    size_t pos_ = 0;
    int depth_ = 0;  // groups open

    [[noreturn]] void fail(const std::string& what) const {
        throw Error("the pattern '" + source_ + "' has " + what + " at character " + std::to_string(pos_) +
                        ", which is not supported (supported: literals, '.', classes, groups, '|', * + ? {m,n}, ^ and "
                        "$ at the ends)",
                    ER_E_INVALID_ARGUMENT);
    }
    bool more() const { return pos_ < cps_.size(); }
    uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0; }
    bool eat(uint32_t cp) {
        if (!more() || cps_[pos_] != cp) return false;
        ++pos_;
        return true;
    }

    // `nullable`: whether it can match the empty text.
    std::string alternation(bool& nullable) {
        std::vector<std::string> alternatives;
        bool unused = false;
        nullable = false;
        do {
            bool alternative_nullable = false;
            alternatives.push_back(sequence(false, unused, alternative_nullable));
            nullable = nullable || alternative_nullable;
        } while (eat('|'));
        return join(alternatives, " | ");
    }

    std::string sequence(bool top, bool& to_end, bool& nullable) {
        std::vector<std::string> terms;
        nullable = true;
        std::string spelled;  // literal characters in a row, one GBNF literal
        auto flush = [&] {
            if (!spelled.empty()) terms.push_back(literal(spelled)), spelled.clear();
        };
        while (more() && peek() != '|' && peek() != ')') {
            if (top && peek() == '$' && (pos_ + 1 == cps_.size() || peek(1) == '|')) {
                ++pos_, to_end = true;
                break;
            }
            if (peek() == '^' || peek() == '$') fail("an anchor inside the pattern");
            std::optional<uint32_t> single;  // a plain character, which can join `spelled`
            bool term_nullable = false;
            std::string term = atom(single, term_nullable);
            const std::string how_many = repetition();
            // The grammar parser refuses H ::= S H | ε with an S that matches nothing (left recursion).
            if (term_nullable && (how_many == "*" || how_many == "+" || how_many.ends_with(",}")))
                fail("an unbounded repetition of what can match nothing, as (a*)*,");
            term_nullable = term_nullable || how_many == "*" || how_many == "?" || how_many.starts_with("{0");
            nullable = nullable && term_nullable;
            if (single && how_many.empty()) {
                spelled += json_spelling(*single);
                continue;
            }
            flush();
            if (single) term = literal(json_spelling(*single));
            if (!term.empty() && how_many != "{0}") terms.push_back(term + how_many);
        }
        flush();
        return join(terms, " ");
    }

    std::string atom(std::optional<uint32_t>& single, bool& nullable) {
        const uint32_t cp = cps_[pos_++];
        switch (cp) {
            case '(': {
                if (eat('?') && !eat(':')) fail("a lookaround or a named group");
                if (++depth_ > kMaxNesting) fail("groups nested deeper than " + std::to_string(kMaxNesting));
                const std::string inner = alternation(nullable);
                if (!eat(')')) fail("an unclosed group");
                --depth_;
                return inner.empty() ? "" : "(" + inner + ")";
            }
            case '[': return set_expr(char_class());
            case '.': return set_expr(kDot);
            case '*':
            case '+':
            case '?': --pos_, fail("a quantifier with nothing to repeat");
            case '{':
                if (count_at(pos_ - 1)) --pos_, fail("a quantifier with nothing to repeat");
                single = cp;
                return {};
            case '\\': {
                CharSet set;
                if (escape(set, single)) return set_expr(set);
                return {};
            }
            default: single = cp; return {};
        }
    }

    // After a '\': a class (true, in `set`) or one character (false, in `single`).
    bool escape(CharSet& set, std::optional<uint32_t>& single) {
        if (!more()) fail("a '\\' at the end");
        const uint32_t cp = cps_[pos_++];
        const std::pair<uint32_t, const CharSet*> classes[] = {{'d', &kDigits}, {'w', &kWordChars}, {'s', &kSpaces}};
        for (const auto& [letter, of] : classes) {
            if (cp != letter && cp != letter - 32) continue;
            set = *of;
            set.negated = cp != letter;
            return true;
        }
        auto hex = [&](size_t digits) {
            uint32_t value = 0;
            for (size_t i = 0; i < digits; ++i, ++pos_) {
                const uint32_t d = peek();
                if (d > 0x7F || !std::isxdigit(int(d))) fail("a malformed \\x or \\u escape");
                value = value * 16 + uint32_t(d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
            }
            return value;
        };
        switch (cp) {
            case 'n': single = '\n'; break;
            case 'r': single = '\r'; break;
            case 't': single = '\t'; break;
            case 'f': single = '\f'; break;
            case 'v': single = '\v'; break;
            case 'x': single = hex(2); break;
            case 'u': single = hex(4); break;
            case '0':
                if (peek() >= '0' && peek() <= '9') fail("an octal escape");
                single = 0;
                break;
            default:
                if (cp < 0x80 && std::isalnum(int(cp))) --pos_, fail(std::string("the escape \\") + char(cp));
                single = cp;  // an escaped punctuation character is itself
        }
        return false;
    }

    CharSet char_class() {  // after '['
        CharSet set;
        set.negated = eat('^');
        while (!eat(']')) {
            if (!more()) fail("an unclosed '['");
            std::optional<uint32_t> from = member(set), to;
            if (from && peek() == '-' && peek(1) != ']' && pos_ + 1 < cps_.size()) {
                ++pos_;
                to = member(set);
                if (!to || *to < *from) fail("a bad range in a class");
            }
            if (from) set.ranges.push_back({*from, to.value_or(*from)});
        }
        if (set.ranges.empty() && !set.negated) fail("an empty class");
        return set;
    }
    // One character of a class, or none when it was a class escape (\d, \w, \s), added to `set`.
    std::optional<uint32_t> member(CharSet& set) {
        const uint32_t cp = cps_[pos_++];
        if (cp != '\\') return cp;
        if (peek() == 'b') return ++pos_, uint32_t('\b');
        CharSet inner;
        std::optional<uint32_t> single;
        if (!escape(inner, single)) return single;
        if (inner.negated) --pos_, fail("a negated class escape inside a class");
        set.ranges.insert(set.ranges.end(), inner.ranges.begin(), inner.ranges.end());
        return std::nullopt;
    }

    // "{m}", "{m,}" or "{m,n}" at the position: its bounds and the position after it.
    std::optional<std::pair<std::pair<size_t, Bound>, size_t>> count_at(size_t at) const {
        if (at >= cps_.size() || cps_[at] != '{') return std::nullopt;
        ++at;
        auto number = [&]() -> std::optional<size_t> {
            const size_t start = at;
            size_t value = 0;
            while (at < cps_.size() && cps_[at] >= '0' && cps_[at] <= '9')
                value = std::min<size_t>(value * 10 + (cps_[at++] - '0'), kMaxCount + 1);
            return at == start ? std::nullopt : std::optional<size_t>(value);
        };
        const std::optional<size_t> min = number();
        if (!min) return std::nullopt;
        Bound max = min;
        if (at < cps_.size() && cps_[at] == ',') ++at, max = number();
        if (at >= cps_.size() || cps_[at] != '}') return std::nullopt;
        return std::pair{std::pair{*min, max}, at + 1};
    }

    // After an atom: its quantifier ("" when none follows); a lazy '?' after one changes
    // nothing here. A '{' that starts no count is a literal, as in JavaScript.
    std::string repetition() {
        std::string how_many;
        if (eat('*'))
            how_many = "*";
        else if (eat('+'))
            how_many = "+";
        else if (eat('?'))
            how_many = "?";
        else if (const auto count = count_at(pos_)) {
            const auto [min, max] = count->first;
            pos_ = count->second;
            if (min > kMaxCount || (max && (*max > kMaxCount || *max < min))) fail("a bad or too large count");
            how_many = quantifier(min, max);  // "" for {1}
        } else {
            return "";
        }
        eat('?');
        if (peek() == '*' || peek() == '+' || peek() == '?' || count_at(pos_)) fail("a quantifier after a quantifier");
        return how_many;
    }
};

// Keys that are none of `keys`, as the characters of a JSON string: a trie of the keys,
// leaving it (any other character, then anything) or stopping where no key ends.
struct KeyTrie {
    std::map<uint32_t, KeyTrie> next;
    bool key_ends = false;
};
std::string other_keys(const KeyTrie& node) {
    std::vector<std::string> alternatives;
    CharSet leaving{{}, true};
    for (const auto& [cp, next] : node.next) {
        alternatives.push_back(literal(json_spelling(cp)) + " " + group(other_keys(next)));  // on along a key
        leaving.ranges.push_back({cp, cp});
    }
    alternatives.push_back(set_expr(leaving) + " char*");
    if (!node.key_ends) alternatives.push_back("");
    return join(alternatives, " | ");
}

}  // namespace

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? std::string(separator) : "") + parts[i];
    return out;
}
std::string group(const std::string& alternatives) {
    int depth = 0;
    for (size_t i = 0; i < alternatives.size(); ++i) {
        const char c = alternatives[i];
        if (c == '"' || c == '[') {  // a literal or a class: its '|' and parentheses are characters
            for (++i; i < alternatives.size() && alternatives[i] != (c == '"' ? '"' : ']'); ++i)
                if (alternatives[i] == '\\') ++i;
        } else if (c == '(' || c == ')') {
            depth += c == '(' ? 1 : -1;
        } else if (c == '|' && depth == 0) {
            return "(" + alternatives + ")";
        }
    }
    return alternatives;
}

std::string literal(std::string_view bytes) {
    std::string out = "\"";
    for (const char c : bytes) {
        if (c == '"' || c == '\\')
            out += {'\\', c};
        else if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\t')
            out += "\\t";
        else if (uint8_t(c) < 0x20 || c == 0x7F) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(uint8_t(c)));
            out += hex;
        } else {
            out += c;
        }
    }
    return out + '"';
}

std::string quantifier(size_t min, Bound max) {
    if (!max) return min == 0 ? "*" : min == 1 ? "+" : "{" + std::to_string(min) + ",}";
    if (min == 0 && *max == 1) return "?";
    if (min == *max) return min == 1 ? "" : "{" + std::to_string(min) + "}";
    return "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
}
std::string repeat(const std::string& item, size_t min, Bound max, const std::string& separator) {
    if (max && *max == 0) return "";
    if (separator.empty()) return item + quantifier(min, max);
    std::string items = item;
    if (!max || *max > 1)
        items += " (" + separator + " " + item + ")" + quantifier(min ? min - 1 : 0, max ? Bound(*max - 1) : Bound());
    return min == 0 ? "(" + items + ")?" : items;
}

std::string integer_range(std::optional<int64_t> min, std::optional<int64_t> max) {
    std::vector<std::string> alternatives;
    if (!min || *min < 0)
        alternatives.push_back("\"-\" " +
                               group(natural_range(max && *max < 0 ? -*max : 1, min ? -*min : kMaxMagnitude)));
    if (!max || *max >= 0)
        alternatives.push_back(natural_range(min ? std::max<int64_t>(*min, 0) : 0, max ? *max : kMaxMagnitude));
    return join(alternatives, " | ");
}

const std::vector<SharedRule>& shared_rules() {
    static const std::vector<SharedRule> rules = {
        {"space", R"(| " " | "\n" [ \t]{0,20})", {}},
        {"char", R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))", {}},
        {"string", R"("\"" char* "\"")", {"char"}},
        {"integral-part", R"("0" | [1-9] [0-9]{0,15})", {}},
        {"decimal-part", R"([0-9]{1,16})", {}},
        {"number",
         R"("-"? integral-part ("." decimal-part)? ([eE] [-+]? decimal-part)?)",
         {"integral-part", "decimal-part"}},
        {"integer", R"("-"? integral-part)", {"integral-part"}},
        {"boolean", R"("true" | "false")", {}},
        {"null", R"("null")", {}},
        {"value",
         "object | array | string | number | boolean | null",
         {"object", "array", "string", "number", "boolean", "null"}},
        {"object",
         R"("{" space (string space ":" space value space ("," space string space ":" space value space)*)? "}")",
         {"string", "value"}},
        {"array", R"("[" space (value space ("," space value space)*)? "]")", {"value"}},
        {"date", R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))", {}},
        {"time",
         R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))",
         {}},
        {"date-time", R"(date "T" time)", {"date", "time"}},
        {"date-string", R"("\"" date "\"")", {"date"}},
        {"time-string", R"("\"" time "\"")", {"time"}},
        {"date-time-string", R"("\"" date-time "\"")", {"date-time"}},
        {"uuid",
         R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"")",
         {}},
    };
    return rules;
}

std::string string_chars_except(const std::vector<std::string>& keys) {
    KeyTrie trie;
    for (const std::string& key : keys) {
        const std::vector<uint32_t> cps = text::decode_utf8(key);
        if (cps.size() > kMaxKeyLength)  // each character nests a group deeper
            throw Error("a property name longer than " + std::to_string(kMaxKeyLength) + " characters ('" +
                            key.substr(0, 20) + "...') beside additionalProperties is not supported",
                        ER_E_INVALID_ARGUMENT);
        KeyTrie* node = &trie;
        for (const uint32_t cp : cps) node = &node->next[cp];
        node->key_ends = true;
    }
    return group(other_keys(trie));
}

std::string pattern_chars(const std::string& pattern) { return PatternConverter(pattern).convert(); }

}  // namespace edgerun::gbnf
