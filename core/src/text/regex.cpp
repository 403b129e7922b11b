#include "regex.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/text/unicode.hpp>

#include <cstddef>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace edgerun::text::detail {

namespace {

constexpr uint32_t kCollapsedWhitespace = 0x0B;
constexpr uint32_t kCollapsedOther = 0xD0;
constexpr uint32_t kCollapsedNumber = 0xD1;
constexpr uint32_t kCollapsedLetter = 0xD2;
constexpr uint32_t kCollapsedPunctuation = 0xD3;
constexpr uint32_t kCollapsedMark = 0xD4;
constexpr uint32_t kCollapsedSymbol = 0xD5;

bool is_ascii_space(uint32_t u) { return u == ' ' || (u >= 0x09 && u <= 0x0D); }
bool is_ascii_digit(uint32_t u) { return u >= '0' && u <= '9'; }
bool is_ascii_alpha(uint32_t u) { return (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z'); }
bool is_ascii_word(uint32_t u) { return is_ascii_alpha(u) || is_ascii_digit(u) || u == '_'; }

// llama.cpp widens \p{P} and \p{S} with these ASCII sets in collapsed patterns: Unicode's
// ASCII punctuation and symbols.
bool is_collapsed_ascii_punctuation(uint32_t u) {
    return (u >= 0x21 && u <= 0x23) || (u >= 0x25 && u <= 0x2A) || (u >= 0x2C && u <= 0x2F) ||
           (u >= 0x3A && u <= 0x3B) || (u >= 0x3F && u <= 0x40) || (u >= 0x5B && u <= 0x5D) || u == 0x5F ||
           u == 0x7B || u == 0x7D;
}
bool is_collapsed_ascii_symbol(uint32_t u) {
    return u == 0x24 || u == 0x2B || (u >= 0x3C && u <= 0x3E) || u == 0x5E || u == 0x60 || u == 0x7C || u == 0x7E;
}

uint32_t collapse(uint32_t cp) {
    if (cp < 128) return cp;
    const uint16_t f = codepoint_flags(cp);
    if (f & CP_WHITESPACE) return kCollapsedWhitespace;
    if (f & CP_NUMBER) return kCollapsedNumber;
    if (f & CP_LETTER) return kCollapsedLetter;
    if (f & CP_PUNCTUATION) return kCollapsedPunctuation;
    if (f & CP_MARK) return kCollapsedMark;
    if (f & CP_SYMBOL) return kCollapsedSymbol;
    return kCollapsedOther;
}

bool predicate_holds(ClassPredicate p, uint32_t u, RegexMode mode) {
    switch (mode) {
        case RegexMode::Table: {
            const uint16_t f = codepoint_flags(u);
            switch (p) {
                case ClassPredicate::Space: return f & CP_WHITESPACE;
                case ClassPredicate::Digit: return is_ascii_digit(u);
                case ClassPredicate::Word: return is_ascii_word(u);
                case ClassPredicate::Number: return f & CP_NUMBER;
                case ClassPredicate::Letter: return f & CP_LETTER;
                case ClassPredicate::Punctuation: return f & CP_PUNCTUATION;
                case ClassPredicate::Mark: return f & CP_MARK;
                case ClassPredicate::Symbol: return f & CP_SYMBOL;
            }
            return false;
        }
        case RegexMode::Collapsed:
            switch (p) {
                case ClassPredicate::Space: return is_ascii_space(u);
                case ClassPredicate::Digit: return is_ascii_digit(u);
                case ClassPredicate::Word: return is_ascii_word(u);
                case ClassPredicate::Number: return u == kCollapsedNumber || is_ascii_digit(u);
                case ClassPredicate::Letter: return u == kCollapsedLetter || is_ascii_alpha(u);
                case ClassPredicate::Punctuation: return u == kCollapsedPunctuation || is_collapsed_ascii_punctuation(u);
                case ClassPredicate::Mark: return u == kCollapsedMark;
                case ClassPredicate::Symbol: return u == kCollapsedSymbol || is_collapsed_ascii_symbol(u);
            }
            return false;
        case RegexMode::Wide:
            switch (p) {
                case ClassPredicate::Space: return is_ascii_space(u);
                case ClassPredicate::Digit: return is_ascii_digit(u);
                case ClassPredicate::Word: return is_ascii_word(u);
                default: return false;  // rejected when the pattern is parsed
            }
    }
    return false;
}

bool is_category(ClassPredicate p) {
    return p != ClassPredicate::Space && p != ClassPredicate::Digit && p != ClassPredicate::Word;
}

}  // namespace

std::vector<uint32_t> regex_units(const std::vector<uint32_t>& cps, RegexMode mode) {
    std::vector<uint32_t> units(cps);
    if (mode == RegexMode::Collapsed) {
        for (auto& u : units) u = collapse(u);
    } else if (mode == RegexMode::Wide) {
        for (auto& u : units)
            if (u >= 128 && (codepoint_flags(u) & CP_WHITESPACE)) u = kCollapsedWhitespace;
    }
    return units;
}

// ------------------------------------------------------------------ parser --

class RegexParser {
public:
    RegexParser(Regex& re, std::string_view pattern) : re_(re), p_(decode_utf8(pattern)) {}

    void parse() {
        re_.alternations_.emplace_back();
        parse_alternation(0);
        if (i_ != p_.size()) fail("unbalanced ')'");
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error("pre-tokenizer pattern '" + re_.pattern_ + "': " + what, ER_E_UNSUPPORTED);
    }

    bool at_end() const { return i_ >= p_.size(); }
    uint32_t peek(size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : 0; }

    void parse_alternation(int index) {
        for (;;) {
            Regex::Sequence seq = parse_sequence();
            re_.alternations_[index].branches.push_back(std::move(seq));
            if (!at_end() && peek() == '|') {
                ++i_;
                continue;
            }
            return;
        }
    }

    Regex::Sequence parse_sequence() {
        Regex::Sequence seq;
        while (!at_end() && peek() != '|' && peek() != ')') {
            Regex::Node node = parse_atom();
            parse_quantifier(node);
            seq.nodes.push_back(node);
        }
        return seq;
    }

    int add_group(Regex::Node::Kind kind, Regex::Node& node) {
        node.kind = kind;
        node.index = int(re_.alternations_.size());
        re_.alternations_.emplace_back();
        parse_alternation(node.index);
        if (at_end() || peek() != ')') fail("missing ')'");
        ++i_;
        return node.index;
    }

    Regex::Node parse_atom() {
        Regex::Node node;
        const uint32_t c = p_[i_++];
        switch (c) {
            case '(': {
                Regex::Node::Kind kind = Regex::Node::Group;
                if (peek() == '?') {
                    if (peek(1) == ':') kind = Regex::Node::Group;
                    else if (peek(1) == '=') kind = Regex::Node::Lookahead;
                    else if (peek(1) == '!') kind = Regex::Node::NegativeLookahead;
                    else fail("unsupported group '(?" + std::string(1, char(peek(1))) + "'");
                    i_ += 2;
                }
                add_group(kind, node);
                if (kind == Regex::Node::Group) make_unit_group(node);
                return node;
            }
            case '[': return class_node(parse_bracket());
            case '.': {
                Regex::CharClass cls;
                cls.negated = true;
                for (uint32_t t : {0x0Au, 0x0Du, 0x2028u, 0x2029u}) cls.items.push_back(range_item(t, t));
                return class_node(std::move(cls));
            }
            case '^': node.kind = Regex::Node::LineStart; return node;
            case '$': node.kind = Regex::Node::LineEnd; return node;
            case '\\': {
                Regex::CharClass cls;
                cls.items.push_back(parse_escape(/*in_class=*/false));
                return class_node(std::move(cls));
            }
            case '*': case '+': case '?': case '{': fail("quantifier without an operand");
            default: {
                Regex::CharClass cls;
                cls.items.push_back(range_item(c, c));
                return class_node(std::move(cls));
            }
        }
    }

    // The classes of an alternation whose branches are each one plain single-unit class.
    bool single_unit_classes(int alternation, std::vector<int>& classes) const {
        for (const auto& branch : re_.alternations_[alternation].branches) {
            if (branch.nodes.size() != 1) return false;
            const Regex::Node& n = branch.nodes[0];
            if (n.min != 1 || n.max != 1) return false;
            if (n.kind == Regex::Node::Class) {
                classes.push_back(n.index);
            } else if (n.kind == Regex::Node::UnitGroup) {
                for (const auto& inner : re_.unit_groups_[n.index]) {
                    if (!inner.tests.empty()) return false;
                    classes.push_back(inner.cls);
                }
            } else {
                return false;
            }
        }
        return true;
    }

    // Turns a group that always consumes exactly one unit into a UnitGroup: each branch
    // is lookaheads on that unit followed by one single-unit class or unit group.
    void make_unit_group(Regex::Node& node) {
        std::vector<Regex::UnitBranch> branches;
        for (const auto& seq : re_.alternations_[node.index].branches) {
            std::vector<Regex::UnitBranch::Test> tests;
            bool consumed = false;
            for (const Regex::Node& n : seq.nodes) {
                if (consumed) return;  // anything after the unit looks at the next one
                if (n.kind == Regex::Node::Lookahead || n.kind == Regex::Node::NegativeLookahead) {
                    Regex::UnitBranch::Test test{n.kind == Regex::Node::NegativeLookahead, {}};
                    if (!single_unit_classes(n.index, test.classes)) return;
                    tests.push_back(std::move(test));
                    continue;
                }
                if (n.min != 1 || n.max != 1) return;
                if (n.kind == Regex::Node::Class) {
                    branches.push_back({tests, n.index});
                } else if (n.kind == Regex::Node::UnitGroup) {
                    for (const auto& inner : re_.unit_groups_[n.index]) {
                        Regex::UnitBranch b{tests, inner.cls};
                        b.tests.insert(b.tests.end(), inner.tests.begin(), inner.tests.end());
                        branches.push_back(std::move(b));
                    }
                } else {
                    return;
                }
                consumed = true;
            }
            if (!consumed) return;
        }
        node.kind = Regex::Node::UnitGroup;
        node.index = int(re_.unit_groups_.size());
        re_.unit_groups_.push_back(std::move(branches));
    }

    Regex::Node class_node(Regex::CharClass cls) {
        if (re_.mode_ == RegexMode::Collapsed)
            for (const auto& item : cls.items)
                if (!item.is_predicate && (item.lo >= 128 || item.hi >= 128))
                    fail("mixes Unicode categories with non-ASCII characters");
        Regex::Node node;
        node.kind = Regex::Node::Class;
        node.index = int(re_.classes_.size());
        re_.classes_.push_back(std::move(cls));
        return node;
    }

    static Regex::ClassItem range_item(uint32_t lo, uint32_t hi) {
        Regex::ClassItem item;
        item.lo = lo;
        item.hi = hi;
        return item;
    }

    Regex::ClassItem predicate_item(ClassPredicate p, bool negated) {
        if (re_.mode_ == RegexMode::Wide && is_category(p)) fail("Unicode category in a pattern run without them");
        Regex::ClassItem item;
        item.is_predicate = true;
        item.predicate = p;
        item.negated_predicate = negated;
        return item;
    }

    // After a backslash.
    Regex::ClassItem parse_escape(bool in_class) {
        if (at_end()) fail("trailing backslash");
        const uint32_t c = p_[i_++];
        switch (c) {
            case 's': return predicate_item(ClassPredicate::Space, false);
            case 'S': return predicate_item(ClassPredicate::Space, true);
            case 'd': return predicate_item(ClassPredicate::Digit, false);
            case 'D': return predicate_item(ClassPredicate::Digit, true);
            case 'w': return predicate_item(ClassPredicate::Word, false);
            case 'W': return predicate_item(ClassPredicate::Word, true);
            case 'p': return predicate_item(parse_category(), false);
            case 'r': return range_item('\r', '\r');
            case 'n': return range_item('\n', '\n');
            case 't': return range_item('\t', '\t');
            case 'f': return range_item('\f', '\f');
            case 'v': return range_item('\v', '\v');
            case '0': return range_item(0, 0);
            case 'x': {
                const uint32_t v = parse_hex(2);
                return range_item(v, v);
            }
            case 'u': {
                const uint32_t v = parse_hex(4);
                return range_item(v, v);
            }
            case 'b':
                if (in_class) return range_item('\b', '\b');
                fail("word boundaries are not supported");
            case 'B': fail("word boundaries are not supported");
            default:
                if (is_ascii_alpha(c) || is_ascii_digit(c)) fail("unsupported escape '\\" + std::string(1, char(c)) + "'");
                return range_item(c, c);
        }
    }

    uint32_t parse_hex(int digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
            const uint32_t h = at_end() ? 0 : p_[i_++];
            int d = -1;
            if (h >= '0' && h <= '9') d = int(h - '0');
            else if (h >= 'a' && h <= 'f') d = int(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') d = int(h - 'A' + 10);
            if (d < 0) fail("bad hexadecimal escape");
            v = v * 16 + uint32_t(d);
        }
        return v;
    }

    ClassPredicate parse_category() {
        if (peek() != '{') fail("expected '{' after \\p");
        std::string name;
        ++i_;
        while (!at_end() && peek() != '}') name.push_back(char(p_[i_++]));
        if (at_end()) fail("unterminated \\p{");
        ++i_;
        if (name == "N") return ClassPredicate::Number;
        if (name == "L" || name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo")
            return ClassPredicate::Letter;
        if (name == "P") return ClassPredicate::Punctuation;
        if (name == "M") return ClassPredicate::Mark;
        if (name == "S") return ClassPredicate::Symbol;
        fail("unsupported category \\p{" + name + "}");
    }

    Regex::CharClass parse_bracket() {
        Regex::CharClass cls;
        if (peek() == '^') {
            cls.negated = true;
            ++i_;
        }
        bool first = true;
        while (!at_end() && (peek() != ']' || first)) {
            first = false;
            Regex::ClassItem lo_item;
            if (peek() == '\\') {
                ++i_;
                lo_item = parse_escape(/*in_class=*/true);
            } else {
                const uint32_t c = p_[i_++];
                lo_item = range_item(c, c);
            }
            if (!lo_item.is_predicate && peek() == '-' && peek(1) != ']' && i_ + 1 < p_.size()) {
                ++i_;
                Regex::ClassItem hi_item;
                if (peek() == '\\') {
                    ++i_;
                    hi_item = parse_escape(/*in_class=*/true);
                } else {
                    const uint32_t c = p_[i_++];
                    hi_item = range_item(c, c);
                }
                if (hi_item.is_predicate) fail("class range ends in a class escape");
                if (hi_item.lo < lo_item.lo) fail("class range out of order");
                lo_item.hi = hi_item.lo;
            }
            cls.items.push_back(lo_item);
        }
        if (at_end()) fail("missing ']'");
        ++i_;
        return cls;
    }

    void parse_quantifier(Regex::Node& node) {
        if (at_end()) return;
        const uint32_t c = peek();
        int min = 1, max = 1;
        if (c == '*') {
            min = 0, max = -1;
            ++i_;
        } else if (c == '+') {
            min = 1, max = -1;
            ++i_;
        } else if (c == '?') {
            min = 0, max = 1;
            ++i_;
        } else if (c == '{' && is_ascii_digit(peek(1))) {
            ++i_;
            min = parse_int();
            max = min;
            if (peek() == ',') {
                ++i_;
                max = peek() == '}' ? -1 : parse_int();
            }
            if (peek() != '}') fail("bad {n,m} quantifier");
            ++i_;
            if (max != -1 && max < min) fail("{n,m} with m < n");
        } else {
            return;
        }
        if (!at_end() && peek() == '?') fail("lazy quantifiers are not supported");
        if (node.kind == Regex::Node::LineStart || node.kind == Regex::Node::LineEnd) fail("quantified anchor");
        node.min = min;
        node.max = max;
    }

    int parse_int() {
        int v = 0;
        if (!is_ascii_digit(peek())) fail("expected a number");
        while (is_ascii_digit(peek())) v = v * 10 + int(p_[i_++] - '0');
        return v;
    }

    Regex& re_;
    std::vector<uint32_t> p_;
    size_t i_ = 0;
};

Regex::Regex(std::string_view pattern, RegexMode mode) : pattern_(pattern), mode_(mode) {
    RegexParser(*this, pattern).parse();
}

// ----------------------------------------------------------------- matcher --

namespace {

// A non-owning reference to a callable bool(size_t): continuations without allocation.
class Continuation {
public:
    template <typename F>
    Continuation(const F& f)  // NOLINT: implicit on purpose, lambdas convert at call sites
        : object_(&f), call_([](const void* o, size_t pos) { return (*static_cast<const F*>(o))(pos); }) {}
    bool operator()(size_t pos) const { return call_(object_, pos); }

private:
    const void* object_;
    bool (*call_)(const void*, size_t);
};

}  // namespace

class RegexMatcher {
public:
    static constexpr int kMaxGroupRepetitions = 2000;
    // Stack the nested repetitions of one match may use. Frame sizes differ by compiler
    // and build (sanitizers make them several times larger), so depth alone is no bound.
    static constexpr ptrdiff_t kMaxStackBytes = 1 << 20;

    RegexMatcher(const Regex& re, const uint32_t* units, size_t begin, size_t end)
        : re_(re), u_(units), begin_(begin), end_(end), stack_base_(stack_address()) {}

    bool alternation(int index, size_t pos, Continuation k) const {
        for (const auto& seq : re_.alternations_[index].branches)
            if (sequence(seq, 0, pos, k)) return true;
        return false;
    }

private:
    bool class_matches(int index, uint32_t u) const {
        const auto& cls = re_.classes_[index];
        bool hit = false;
        for (const auto& item : cls.items) {
            if (item.is_predicate) {
                hit = predicate_holds(item.predicate, u, re_.mode_) != item.negated_predicate;
            } else {
                hit = u >= item.lo && u <= item.hi;
            }
            if (hit) break;
        }
        return hit != cls.negated;
    }

    bool unit_matches(int group, uint32_t u) const {
        for (const auto& branch : re_.unit_groups_[group]) {
            bool ok = class_matches(branch.cls, u);
            for (size_t t = 0; ok && t < branch.tests.size(); ++t) {
                bool any = false;
                for (int c : branch.tests[t].classes) any = any || class_matches(c, u);
                ok = any != branch.tests[t].negative;
            }
            if (ok) return true;
        }
        return false;
    }

    // A single-unit atom repeated greedily: the longest run, then shorter ones.
    template <typename Matches>
    bool repeat_unit(const Regex::Node& node, size_t pos, Continuation next, Matches matches) const {
        const size_t limit = node.max < 0 ? end_ - pos : std::min(end_ - pos, size_t(node.max));
        size_t n = 0;
        while (n < limit && matches(u_[pos + n])) ++n;
        if (n < size_t(node.min)) return false;
        for (size_t c = n + 1; c-- > size_t(node.min);)
            if (next(pos + c)) return true;
        return false;
    }

    bool sequence(const Regex::Sequence& seq, size_t i, size_t pos, Continuation k) const {
        if (i == seq.nodes.size()) return k(pos);
        const Regex::Node& node = seq.nodes[i];
        auto next = [&](size_t p) { return sequence(seq, i + 1, p, k); };
        switch (node.kind) {
            case Regex::Node::Class:
                return repeat_unit(node, pos, Continuation(next), [&](uint32_t u) { return class_matches(node.index, u); });
            case Regex::Node::UnitGroup:
                return repeat_unit(node, pos, Continuation(next), [&](uint32_t u) { return unit_matches(node.index, u); });
            case Regex::Node::Group: return repeat(node, 0, pos, Continuation(next));
            case Regex::Node::Lookahead:
            case Regex::Node::NegativeLookahead: {
                const bool found = alternation(node.index, pos, Continuation([](size_t) { return true; }));
                if (found != (node.kind == Regex::Node::Lookahead)) return false;
                return next(pos);
            }
            case Regex::Node::LineStart: return pos == begin_ && next(pos);
            case Regex::Node::LineEnd: return pos == end_ && next(pos);
        }
        return false;
    }

    // Greedy repetition of a group: as many as possible, backing off one at a time. Each
    // repetition nests a call, so a bound turns a pathological input into an error
    // instead of a stack overflow (llama.cpp's std::regex crashes there).
    bool repeat(const Regex::Node& node, int count, size_t pos, Continuation k) const {
        if (count > kMaxGroupRepetitions || std::abs(stack_base_ - stack_address()) > kMaxStackBytes)
            throw Error("pre-tokenizer pattern '" + re_.pattern() +
                            "': a group repeats too often in one match (text too long for it)",
                        ER_E_INVALID_ARGUMENT);
        if (node.max < 0 || count < node.max) {
            auto more = [&](size_t p) {
                if (p == pos && count >= node.min) return false;  // an empty iteration ends the loop
                return repeat(node, count + 1, p, k);
            };
            if (alternation(node.index, pos, Continuation(more))) return true;
        }
        return count >= node.min && k(pos);
    }

    // The address of a local of the calling frame: how deep the recursion is.
    static __attribute__((noinline)) ptrdiff_t stack_address() {
        volatile char probe = 0;
        return reinterpret_cast<ptrdiff_t>(&probe);
    }

    const Regex& re_;
    const uint32_t* u_;
    size_t begin_, end_;
    ptrdiff_t stack_base_;
};

bool Regex::search(const uint32_t* units, size_t begin, size_t end, size_t from, size_t& match_begin,
                   size_t& match_end) const {
    RegexMatcher matcher(*this, units, begin, end);
    for (size_t start = from; start < end; ++start) {
        size_t found_end = 0;
        auto accept = [&](size_t p) {
            if (p == start) return false;
            found_end = p;
            return true;
        };
        if (matcher.alternation(0, start, Continuation(accept))) {
            match_begin = start;
            match_end = found_end;
            return true;
        }
    }
    return false;
}

}  // namespace edgerun::text::detail
