// Parsing GBNF as llama.cpp reads it (src/llama-grammar.cpp): each rule becomes one flat
// sequence of elements, alternatives separated by kAlt, and groups and repetitions become
// generated helper rules. Grammars the matcher could not run (undefined or left-recursive
// rules) are refused here, with a message a person can act on.
#include <edgerun/text/grammar.hpp>

#include "grammar_rules.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace edgerun::text {

using namespace grammar_detail;

namespace {

// Limits that keep a hostile grammar from exhausting the stack or the memory.
constexpr uint32_t kMaxRepetition = 2000;  // llama.cpp's: a larger minimum is refused, a larger maximum is dropped
constexpr size_t kMaxRepeatedElements = size_t(1) << 20;
constexpr int kMaxNesting = 256;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-'; }

// One well-formed UTF-8 character at `pos`, which moves past it; nullopt for anything else
// (overlong forms, surrogates, values beyond U+10FFFF, a cut sequence).
std::optional<uint32_t> decode_char(std::string_view text, size_t& pos) {
    const auto lead = uint8_t(text[pos]);
    size_t length = 0;
    uint32_t cp = 0;
    if (lead < 0x80) length = 1, cp = lead;
    else if (lead >= 0xC2 && lead <= 0xDF) length = 2, cp = lead & 0x1F;
    else if (lead >= 0xE0 && lead <= 0xEF) length = 3, cp = lead & 0x0F;
    else if (lead >= 0xF0 && lead <= 0xF4) length = 4, cp = lead & 0x07;
    else return std::nullopt;
    if (pos + length > text.size()) return std::nullopt;
    for (size_t i = 1; i < length; ++i) {
        const auto byte = uint8_t(text[pos + i]);
        if ((byte & 0xC0) != 0x80) return std::nullopt;
        cp = (cp << 6) | (byte & 0x3F);
    }
    if ((length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) ||
        cp > 0x10FFFF)
        return std::nullopt;
    pos += length;
    return cp;
}

}  // namespace

class GrammarParser {
public:
    explicit GrammarParser(std::string_view text) : text_(text) {}
    std::shared_ptr<const Grammar> parse(std::string_view root);

private:
    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }
    [[noreturn]] void fail_at(size_t offset, const std::string& message) const;
    std::string found() const;

    void skip_space(bool newlines);
    std::string parse_name();
    uint32_t parse_count();
    uint32_t parse_char();
    uint32_t parse_hex(size_t digits, size_t escape_start);

    uint32_t intern(const std::string& name);
    uint32_t new_helper(const std::string& rule);
    void store_rule(uint32_t id, std::vector<Element> elements);

    void parse_rule();
    void parse_alternatives(uint32_t id, const std::string& rule, bool nested, int depth);
    void parse_sequence(std::vector<Element>& out, const std::string& rule, bool nested, int depth);
    void parse_literal(std::vector<Element>& out);
    void parse_class(std::vector<Element>& out);
    std::pair<uint32_t, std::optional<uint32_t>> parse_repetition(bool nested);
    void repeat(std::vector<Element>& sequence, size_t item_start, uint32_t min, std::optional<uint32_t> max,
                const std::string& rule, size_t at);

    std::vector<bool> nullable_rules() const;
    void check_left_recursion() const;

    std::string_view text_;
    size_t pos_ = 0;
    std::vector<std::vector<Element>> rules_;  // empty until defined
    std::vector<std::string> names_;
    std::vector<size_t> first_use_;  // where each rule is first referenced, for naming the first undefined one
    std::unordered_map<std::string, uint32_t> ids_;
    size_t repeated_elements_ = 0;
};

std::shared_ptr<const Grammar> Grammar::parse(std::string_view gbnf, std::string_view root) {
    return GrammarParser(gbnf).parse(root);
}

std::shared_ptr<const Grammar> GrammarParser::parse(std::string_view root) {
    skip_space(true);
    while (!at_end()) parse_rule();

    if (rules_.empty()) fail("the grammar is empty (it has no rules)");
    const auto root_id = ids_.find(std::string(root));
    if (root_id == ids_.end() || rules_[root_id->second].empty()) fail("no rule named '" + std::string(root) + "'");
    std::optional<uint32_t> undefined;
    for (uint32_t id = 0; id < rules_.size(); ++id)
        if (rules_[id].empty() && (!undefined || first_use_[id] < first_use_[*undefined])) undefined = id;
    if (undefined) fail("rule '" + names_[*undefined] + "' is used but not defined");
    check_left_recursion();

    auto grammar = std::shared_ptr<Grammar>(new Grammar());
    grammar->rules_ = std::move(rules_);
    grammar->names_ = std::move(names_);
    grammar->root_ = root_id->second;
    return grammar;
}

void GrammarParser::fail_at(size_t offset, const std::string& message) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
        const char c = text_[i];
        const bool line_break = c == '\n' || (c == '\r' && (i + 1 == text_.size() || text_[i + 1] != '\n'));
        if (line_break) line += 1, column = 1;
        else if ((uint8_t(c) & 0xC0) != 0x80) column += 1;  // columns count characters, not bytes
    }
    fail("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message);
}

// What is at the current position, for an error message.
std::string GrammarParser::found() const {
    if (at_end()) return "the end of the grammar";
    const auto c = uint8_t(text_[pos_]);
    if (c == '\n' || c == '\r') return "a newline";
    size_t end = pos_;
    if (c >= 0x20 && c != 0x7F && decode_char(text_, end)) {
        std::string quoted(1, '\'');
        quoted.append(text_.substr(pos_, end - pos_)).push_back('\'');
        return quoted;
    }
    static const char kHex[] = "0123456789ABCDEF";
    return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 15];
}

// Spaces, tabs and comments; newlines too where the rule may go on over them (llama.cpp's
// places: between rules, after '::=' and '|', and anywhere inside parentheses).
void GrammarParser::skip_space(bool newlines) {
    while (!at_end()) {
        const char c = text_[pos_];
        if (c == '#') {
            while (!at_end() && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
        } else if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
            ++pos_;
        } else {
            return;
        }
    }
}

std::string GrammarParser::parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
}

// A repetition count; values past the limit all read as kMaxRepetition + 1.
uint32_t GrammarParser::parse_count() {
    if (!is_digit(peek())) fail_at(pos_, "expected a number, found " + found());
    uint32_t value = 0;
    for (; is_digit(peek()); ++pos_) value = std::min(value * 10 + uint32_t(text_[pos_] - '0'), kMaxRepetition + 1);
    return value;
}

// One character of a literal or a class: an escape, or a UTF-8 character.
uint32_t GrammarParser::parse_char() {
    const size_t start = pos_;
    if (text_[pos_] != '\\') {
        if (const std::optional<uint32_t> cp = decode_char(text_, pos_)) return *cp;
        fail_at(start, "invalid UTF-8");
    }
    if (pos_ + 1 == text_.size()) fail_at(start, "expected a character after '\\', found the end of the grammar");
    const char escape = text_[pos_ + 1];
    pos_ += 2;
    switch (escape) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '[': case ']': case '-': return uint8_t(escape);
        case 'x': return parse_hex(2, start);
        case 'u': return parse_hex(4, start);
        case 'U': return parse_hex(8, start);
        default: break;
    }
    pos_ -= 1;
    size_t end = pos_;
    if (uint8_t(escape) < 0x20 || !decode_char(text_, end)) fail_at(start, "unknown escape: '\\' before " + found());
    fail_at(start, "unknown escape '\\" + std::string(text_.substr(pos_, end - pos_)) + "'");
}

uint32_t GrammarParser::parse_hex(size_t digits, size_t escape_start) {
    uint32_t value = 0;
    for (size_t i = 0; i < digits; ++i, ++pos_) {
        const char c = peek();
        const int digit = is_digit(c)                ? c - '0'
                          : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                          : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                   : -1;
        if (digit < 0)
            fail_at(pos_, "expected " + std::to_string(digits) + " hex digits in the escape, found " + found());
        value = value * 16 + uint32_t(digit);
    }
    if (value > 0x10FFFF) fail_at(escape_start, "escape beyond U+10FFFF, the last code point");
    return value;
}

uint32_t GrammarParser::intern(const std::string& name) {
    const auto [it, added] = ids_.emplace(name, uint32_t(rules_.size()));
    if (added) {
        rules_.emplace_back();
        names_.push_back(name);
        first_use_.push_back(SIZE_MAX);
    }
    return it->second;
}

// A rule for a group or a repetition, named after the rule it is in as llama.cpp names them
// ("value_7": '_' cannot be in a written name, so it never collides).
uint32_t GrammarParser::new_helper(const std::string& rule) {
    return intern(rule + "_" + std::to_string(rules_.size()));
}

void GrammarParser::store_rule(uint32_t id, std::vector<Element> elements) { rules_[id] = std::move(elements); }

void GrammarParser::parse_rule() {
    const size_t start = pos_;
    if (!is_name_char(peek())) fail_at(pos_, "expected a rule name, found " + found());
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail_at(pos_, "expected '::=', found " + found());
    pos_ += 3;
    skip_space(true);
    const uint32_t id = intern(name);
    if (!rules_[id].empty()) fail_at(start, "rule '" + name + "' is defined twice");
    parse_alternatives(id, name, /*nested=*/false, 0);
    if (text_.substr(pos_, 2) == "\r\n") pos_ += 2;
    else if (peek() == '\n' || peek() == '\r') pos_ += 1;
    else if (!at_end()) fail_at(pos_, "expected an element, '|' or the end of the line, found " + found());
    skip_space(true);
}

void GrammarParser::parse_alternatives(uint32_t id, const std::string& rule, bool nested, int depth) {
    std::vector<Element> elements;
    parse_sequence(elements, rule, nested, depth);
    while (peek() == '|') {
        elements.push_back({Element::kAlt, 0});
        ++pos_;
        skip_space(true);
        parse_sequence(elements, rule, nested, depth);
    }
    elements.push_back({Element::kEnd, 0});
    store_rule(id, std::move(elements));
}

// Items up to the next '|', ')' or end of line. A repetition applies to the item before it
// (a whole literal, a class, a reference or a group), found from `item_start`.
void GrammarParser::parse_sequence(std::vector<Element>& out, const std::string& rule, bool nested, int depth) {
    size_t item_start = out.size();
    while (!at_end()) {
        const size_t start = pos_;
        const char c = text_[pos_];
        if (c == '"' || c == '[' || c == '.' || c == '(' || is_name_char(c)) {
            item_start = out.size();
            if (c == '"') {
                parse_literal(out);
            } else if (c == '[') {
                parse_class(out);
            } else if (c == '.') {
                ++pos_;
                out.push_back({Element::kCharAny, 0});
            } else if (c == '(') {
                if (depth == kMaxNesting) fail_at(pos_, "groups nested deeper than " + std::to_string(kMaxNesting));
                ++pos_;
                skip_space(true);
                const uint32_t group = new_helper(rule);
                parse_alternatives(group, rule, /*nested=*/true, depth + 1);
                if (peek() != ')') fail_at(pos_, "expected ')', found " + found());
                ++pos_;
                out.push_back({Element::kRuleRef, group});
            } else {
                const uint32_t id = intern(parse_name());
                first_use_[id] = std::min(first_use_[id], start);
                out.push_back({Element::kRuleRef, id});
            }
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (item_start == out.size()) fail_at(pos_, std::string("expected an element before '") + c + "'");
            const auto [min, max] = parse_repetition(nested);
            repeat(out, item_start, min, max, rule, start);
        } else if (c == '<' || c == '!') {
            fail_at(pos_, "token references (<...>, !<...>) are not supported");
        } else {
            return;
        }
        skip_space(nested);
    }
}

void GrammarParser::parse_literal(std::vector<Element>& out) {
    const size_t open = pos_++;
    while (true) {
        if (at_end()) fail_at(open, "unterminated string literal");
        if (text_[pos_] == '"') break;
        out.push_back({Element::kChar, parse_char()});
    }
    ++pos_;
}

// [abc], [a-z0-9_], [^"\\]: the first element says whether the set is negated, the rest
// are kCharAlt (another character) and kCharRangeUpper (the upper end of the range the
// element before starts).
void GrammarParser::parse_class(std::vector<Element>& out) {
    const size_t open = pos_++;
    Element::Kind kind = Element::kChar;
    if (peek() == '^') kind = Element::kCharNot, ++pos_;
    const size_t first = out.size();
    while (true) {
        if (at_end()) fail_at(open, "unterminated character class");
        if (text_[pos_] == ']') break;
        const size_t char_start = pos_;
        const uint32_t low = parse_char();
        out.push_back({out.size() == first ? kind : Element::kCharAlt, low});
        if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
            ++pos_;
            const uint32_t high = parse_char();
            if (high < low) fail_at(char_start, "character range is backwards (its end is below its start)");
            out.push_back({Element::kCharRangeUpper, high});
        }
    }
    if (out.size() == first) fail_at(open, "empty character class");
    ++pos_;
}

// *, +, ?, {m}, {m,}, {m,n}: the minimum count, and the maximum (nullopt when unbounded).
std::pair<uint32_t, std::optional<uint32_t>> GrammarParser::parse_repetition(bool nested) {
    const size_t start = pos_;
    const char op = text_[pos_++];
    if (op == '*') return {0, std::nullopt};
    if (op == '+') return {1, std::nullopt};
    if (op == '?') return {0, 1};
    skip_space(nested);
    const uint32_t min = parse_count();
    skip_space(nested);
    std::optional<uint32_t> max = min;
    const bool has_comma = peek() == ',';
    if (has_comma) {
        ++pos_;
        skip_space(nested);
        max.reset();
        if (is_digit(peek())) {
            max = parse_count();
            skip_space(nested);
        }
    }
    if (peek() != '}')
        fail_at(pos_, std::string(has_comma ? "expected '}'" : "expected ',' or '}'") + ", found " + found());
    ++pos_;
    if (min > kMaxRepetition)
        fail_at(start, "repetition count over the limit of " + std::to_string(kMaxRepetition));
    if (max && *max < min) fail_at(start, "repetition maximum below its minimum");
    if (max && *max > kMaxRepetition) max.reset();  // as llama.cpp: that many is as good as no bound
    return {min, max};
}

// S{min,max} becomes S written min times, then a reference to a chain of optional helpers:
// H1 ::= S | ε and Hk ::= S H(k-1) | ε give up to max - min more, each one nesting level
// deeper (S? S? S? would let the matcher follow every way of choosing which S's match, a
// number of stacks exponential in the count). Unbounded: H ::= S H | ε.
void GrammarParser::repeat(std::vector<Element>& sequence, size_t item_start, uint32_t min,
                           std::optional<uint32_t> max, const std::string& rule, size_t at) {
    const std::vector<Element> item(sequence.begin() + long(item_start), sequence.end());
    const size_t helpers = max ? *max - min : 1;
    repeated_elements_ += item.size() * (min + helpers) + 3 * helpers;
    if (repeated_elements_ > kMaxRepeatedElements)
        fail_at(at, "the grammar is too large once its repetitions are expanded");
    sequence.resize(item_start);
    for (uint32_t i = 0; i < min; ++i) sequence.insert(sequence.end(), item.begin(), item.end());
    if (helpers == 0) return;
    uint32_t inner = 0;
    for (size_t k = 0; k < helpers; ++k) {
        const uint32_t helper = new_helper(rule);
        std::vector<Element> body = item;
        if (!max) body.push_back({Element::kRuleRef, helper});
        else if (k > 0) body.push_back({Element::kRuleRef, inner});
        body.push_back({Element::kAlt, 0});
        body.push_back({Element::kEnd, 0});
        store_rule(helper, std::move(body));
        inner = helper;
    }
    sequence.push_back({Element::kRuleRef, inner});
}

// The rules that can match the empty text: an alternative can when each of its elements is a
// reference to such a rule. Found by counting down, per alternative, the references not yet
// known to be nullable, as rules are found to be (linear, whatever the order of the rules).
std::vector<bool> GrammarParser::nullable_rules() const {
    struct Alternative {
        uint32_t rule;
        size_t unknown;
    };
    std::vector<Alternative> alternatives;
    std::vector<std::vector<size_t>> referenced_in(rules_.size());  // rule -> alternatives, once per reference
    std::vector<bool> nullable(rules_.size());
    std::vector<uint32_t> newly_nullable;
    auto mark = [&](uint32_t rule) {
        if (nullable[rule]) return;
        nullable[rule] = true;
        newly_nullable.push_back(rule);
    };
    for (uint32_t rule = 0; rule < rules_.size(); ++rule) {
        for_each_alternative(rules_[rule], [&](const Element* first) {
            const Element* end = first;
            while (end->kind == Element::kRuleRef) ++end;
            if (!ends_alternative(end)) return;  // it has a character: never empty
            if (end == first) return mark(rule);
            for (const Element* e = first; e != end; ++e) referenced_in[e->value].push_back(alternatives.size());
            alternatives.push_back({rule, size_t(end - first)});
        });
    }
    while (!newly_nullable.empty()) {
        const uint32_t rule = newly_nullable.back();
        newly_nullable.pop_back();
        for (size_t a : referenced_in[rule])
            if (--alternatives[a].unknown == 0) mark(alternatives[a].rule);
    }
    return nullable;
}

// A rule is left-recursive when it can reach itself without matching a character first: a
// cycle in the graph of "the rules each rule can start with", where a rule can start with any
// reference that only nullable references precede. The matcher would expand such a rule
// forever. The search is iterative: generated repetition chains can be thousands deep.
void GrammarParser::check_left_recursion() const {
    const std::vector<bool> nullable = nullable_rules();
    std::vector<std::vector<uint32_t>> starts_with(rules_.size());
    for (uint32_t rule = 0; rule < rules_.size(); ++rule) {
        for_each_alternative(rules_[rule], [&](const Element* e) {
            for (; e->kind == Element::kRuleRef; ++e) {
                starts_with[rule].push_back(e->value);
                if (!nullable[e->value]) break;
            }
        });
    }

    enum Mark : uint8_t { kUnseen, kOnPath, kDone };
    std::vector<Mark> marks(rules_.size(), kUnseen);
    for (uint32_t origin = 0; origin < rules_.size(); ++origin) {
        if (marks[origin] != kUnseen) continue;
        std::vector<std::pair<uint32_t, size_t>> path{{origin, 0}};  // rule, next edge to follow
        marks[origin] = kOnPath;
        while (!path.empty()) {
            const uint32_t rule = path.back().first;
            const size_t edge = path.back().second++;
            if (edge == starts_with[rule].size()) {
                marks[rule] = kDone;
                path.pop_back();
                continue;
            }
            const uint32_t next = starts_with[rule][edge];
            if (marks[next] == kOnPath) {
                // A generated rule is reported as the written rule it came from.
                const std::string& name = names_[next];
                fail("rule '" + name.substr(0, name.find('_')) + "' is left-recursive");
            }
            if (marks[next] == kUnseen) {
                marks[next] = kOnPath;
                path.push_back({next, 0});
            }
        }
    }
}

}  // namespace edgerun::text
