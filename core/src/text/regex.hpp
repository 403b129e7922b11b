// A small backtracking regex engine for pre-tokenizer patterns.
//
// It runs the ECMAScript subset the reference tokenizers' split patterns use
// (alternation, groups, lookaheads, greedy quantifiers, classes with \s \d \w and
// \p{L} \p{N} \p{P} \p{M} \p{S} \p{Lu}...) over a sequence of 32-bit units, and it
// evaluates the classes the way llama.cpp evaluates that pattern, which depends on the
// pattern (see RegexMode). Leftmost match, alternatives in order, greedy backtracking:
// the semantics of std::regex's ECMAScript grammar.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::text::detail {

enum class RegexMode {
    // Units are code points; \s and \p{..} use the Unicode tables. llama.cpp's
    // hand-written splitters for the GPT-2 and Llama 3 patterns behave this way.
    Table,
    // Units are llama.cpp's "collapsed" text: ASCII as is, other code points as one
    // byte naming their class (whitespace 0x0B, N 0xD1, L 0xD2, P 0xD3, M 0xD4, S 0xD5,
    // anything else 0xD0), matched by std::regex with \p{X} widened to that byte plus an
    // ASCII set. Used for patterns that name a Unicode category.
    Collapsed,
    // Units are code points with non-ASCII whitespace turned into 0x0B, matched by
    // std::wregex in the C locale. Used for patterns without categories.
    Wide,
};

// The units a text becomes for a mode.
std::vector<uint32_t> regex_units(const std::vector<uint32_t>& cps, RegexMode mode);

class Regex {
public:
    // Throws Error naming the problem for a pattern outside the subset.
    Regex(std::string_view pattern, RegexMode mode);

    RegexMode mode() const { return mode_; }
    const std::string& pattern() const { return pattern_; }

    // Leftmost non-empty match in units[begin, end) that starts at or after `from`.
    // `begin` and `end` are the subject's bounds (for ^, $ and lookaheads). Throws Error
    // when a repeated group would nest deeper than the stack allows.
    bool search(const uint32_t* units, size_t begin, size_t end, size_t from, size_t& match_begin,
                size_t& match_end) const;

    struct ClassItem;
    struct CharClass;
    struct Node;
    struct Sequence;
    struct Alternation;
    struct UnitBranch;

private:
    friend class RegexParser;
    friend class RegexMatcher;

    std::string pattern_;
    RegexMode mode_;
    std::vector<CharClass> classes_;
    std::vector<Alternation> alternations_;  // [0] is the whole pattern
    std::vector<std::vector<UnitBranch>> unit_groups_;
};

// Class predicates, evaluated per mode.
enum class ClassPredicate : uint8_t { Space, Digit, Word, Number, Letter, Punctuation, Mark, Symbol };

struct Regex::ClassItem {
    bool is_predicate = false;
    ClassPredicate predicate = ClassPredicate::Space;
    bool negated_predicate = false;  // \S \D \W
    uint32_t lo = 0, hi = 0;         // a range when !is_predicate
};

struct Regex::CharClass {
    bool negated = false;
    std::vector<ClassItem> items;
};

struct Regex::Node {
    enum Kind : uint8_t { Class, Group, UnitGroup, Lookahead, NegativeLookahead, LineStart, LineEnd } kind = Class;
    int index = 0;  // CharClass index for Class, Alternation index for groups and lookaheads,
                    // unit_groups_ index for UnitGroup
    int min = 1;
    int max = 1;    // -1: unbounded
};

struct Regex::Sequence {
    std::vector<Node> nodes;
};

struct Regex::Alternation {
    std::vector<Sequence> branches;
};

// A group that always consumes exactly one unit, such as ((?=[\p{L}])([^a-z])): it is
// matched like a character class, so repeating it costs no recursion. One branch: the
// unit must pass every lookahead test and then match `cls`.
struct Regex::UnitBranch {
    struct Test {
        bool negative;
        std::vector<int> classes;  // the lookahead holds when any of them matches
    };
    std::vector<Test> tests;
    int cls;
};

}  // namespace edgerun::text::detail
