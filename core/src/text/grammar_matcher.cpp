// Matching text against a grammar, llama.cpp's way: every parse still possible is a stack of
// positions in the rules (innermost on top), and all of them advance together, character by
// character, so ambiguity costs stacks rather than backtracking.
#include <edgerun/text/grammar.hpp>

#include "grammar_rules.hpp"

#include <algorithm>
#include <functional>
#include <unordered_set>

namespace edgerun::text {

using namespace grammar_detail;

namespace {

using Stack = std::vector<const Element*>;

// Past this many stacks a grammar's parses are multiplying (after n a's, root ::= "a" root "b" |
// "a" root "c" | has 2^n ways to close them); it is refused rather than followed for minutes.
constexpr size_t kMaxStacks = 50000;

// Calls `visit(low, high)` for each range of a character set (a lone character is a range of
// one). Not for kCharAny, which has none.
template <typename Visit>
void for_each_range(const Element* set, Visit visit) {
    for (const Element* e = set;; ++e) {
        const uint32_t low = e->value;
        const uint32_t high = e[1].kind == Element::kCharRangeUpper ? (++e)->value : low;
        visit(low, high);
        if (e[1].kind != Element::kCharAlt) return;
    }
}

// Where the sequence goes on after a character set.
const Element* after_set(const Element* set) {
    do ++set;
    while (set->kind == Element::kCharRangeUpper || set->kind == Element::kCharAlt);
    return set;
}

bool set_contains(const Element* set, uint32_t cp) {
    if (set->kind == Element::kCharAny) return true;
    bool in_ranges = false;
    for_each_range(set, [&](uint32_t low, uint32_t high) { in_ranges = in_ranges || (low <= cp && cp <= high); });
    return in_ranges != (set->kind == Element::kCharNot);
}

// Whether the set holds some code point of [low, high].
bool set_meets(const Element* set, uint32_t low, uint32_t high) {
    if (set->kind == Element::kCharAny) return true;
    if (set->kind == Element::kChar) {
        bool meets = false;
        for_each_range(set, [&](uint32_t a, uint32_t b) { meets = meets || (a <= high && low <= b); });
        return meets;
    }
    // Negated: some code point of [low, high] must be outside every range.
    std::vector<std::pair<uint32_t, uint32_t>> excluded;
    for_each_range(set, [&](uint32_t a, uint32_t b) { excluded.emplace_back(a, b); });
    std::sort(excluded.begin(), excluded.end());
    uint32_t candidate = low;
    for (const auto& [a, b] : excluded) {
        if (a > candidate) break;
        if (b >= high) return false;
        candidate = std::max(candidate, b + 1);
    }
    return true;
}

void canonicalize(std::vector<Stack>& stacks) {
    std::sort(stacks.begin(), stacks.end(), [](const Stack& a, const Stack& b) {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), std::less<const Element*>());
    });
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

void mix_hash(size_t& hash, size_t value) { hash ^= value + 0x9E3779B97F4A7C15ull + (hash << 6) + (hash >> 2); }

struct StackHash {
    size_t operator()(const Stack& stack) const {
        size_t hash = stack.size();
        for (const Element* e : stack) mix_hash(hash, std::hash<const Element*>()(e));
        return hash;
    }
};

// The stacks with a rule reference on top already expanded during one step: different parses
// often reach the same one (two ways for a rule to match nothing, say), and expanding it again
// would only add copies, which can multiply along a sequence.
using ExpandedStacks = std::unordered_set<Stack, StackHash>;

// Adds to `out` what `stack` becomes before the next character: a rule reference on top is
// replaced, once per alternative of its rule, by the rest of its sequence and the
// alternative's first element, until a character set is on top or the stack is empty (the
// text may end there). That this ends rests on the parser refusing left recursion; the
// stack limit is for grammars so ambiguous that their parses multiply past use.
void expand(const std::vector<std::vector<Element>>& rules, Stack stack, std::vector<Stack>& out,
            ExpandedStacks& expanded) {
    std::vector<Stack> todo;
    todo.push_back(std::move(stack));
    while (!todo.empty()) {
        Stack current = std::move(todo.back());
        todo.pop_back();
        if (current.empty() || current.back()->kind != Element::kRuleRef) {
            out.push_back(std::move(current));
        } else if (expanded.insert(current).second) {
            const Element* reference = current.back();
            current.pop_back();
            if (!ends_alternative(reference + 1)) current.push_back(reference + 1);
            for_each_alternative(rules[reference->value], [&](const Element* first) {
                Stack next = current;
                if (!ends_alternative(first)) next.push_back(first);
                todo.push_back(std::move(next));
            });
        }
        if (out.size() + todo.size() > kMaxStacks)
            fail("more than " + std::to_string(kMaxStacks) + " parses at once: the grammar is too ambiguous");
    }
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
    if (!grammar_) throw Error("grammar: the matcher was given no grammar", ER_E_INVALID_ARGUMENT);
    ExpandedStacks expanded;
    for_each_alternative(grammar_->rules()[grammar_->root()], [&](const Element* first) {
        Stack stack;
        if (!ends_alternative(first)) stack.push_back(first);
        expand(grammar_->rules(), std::move(stack), stacks_, expanded);
    });
    canonicalize(stacks_);
}

bool GrammarMatcher::accept(std::string_view bytes) {
    GrammarMatcher next = *this;
    for (const char byte : bytes)
        if (!next.advance(uint8_t(byte))) return false;
    *this = std::move(next);
    return true;
}

bool GrammarMatcher::allows(std::string_view bytes) const {
    GrammarMatcher next = *this;
    for (const char byte : bytes)
        if (!next.advance(uint8_t(byte))) return false;
    return true;
}

// Sorted stacks put the empty one first.
bool GrammarMatcher::can_end() const { return partial_left_ == 0 && !stacks_.empty() && stacks_.front().empty(); }

bool GrammarMatcher::must_end() const { return can_end() && stacks_.size() == 1; }

bool GrammarMatcher::alive() const { return !stacks_.empty() && (partial_left_ == 0 || partial_can_complete()); }

// A refused byte leaves the state as it was, so accept() and the trie walk need no undo.
bool GrammarMatcher::advance(uint8_t byte) {
    if (partial_left_ == 0) {
        if (byte < 0x80) return advance_code_point(byte);
        // A continuation byte cannot start a character, and 0xF8..0xFF start none.
        const int length = byte >= 0xF8 ? 0 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 0;
        if (length == 0) return false;
        partial_value_ = byte & (0x7Fu >> length);
        partial_left_ = int8_t(length - 1);
        partial_length_ = uint8_t(length);
        if (partial_can_complete()) return true;
        partial_value_ = partial_left_ = partial_length_ = 0;
        return false;
    }
    if ((byte & 0xC0) != 0x80) return false;
    const uint32_t value = (partial_value_ << 6) | (byte & 0x3Fu);
    if (partial_left_ == 1) {
        // The prefix had a well-formed completion, and the 64 values a last byte can pick
        // are either all well-formed or all not: `value` is a code point.
        if (!advance_code_point(value)) return false;
        partial_value_ = partial_left_ = partial_length_ = 0;
        return true;
    }
    const uint32_t before = partial_value_;
    partial_value_ = value;
    partial_left_ -= 1;
    if (partial_can_complete()) return true;
    partial_value_ = before;
    partial_left_ += 1;
    return false;
}

bool GrammarMatcher::advance_code_point(uint32_t cp) {
    std::vector<Stack> next;
    ExpandedStacks expanded;
    for (const Stack& stack : stacks_) {
        if (stack.empty() || !set_contains(stack.back(), cp)) continue;
        Stack rest(stack.begin(), stack.end() - 1);
        const Element* after = after_set(stack.back());
        if (!ends_alternative(after)) rest.push_back(after);
        expand(grammar_->rules(), std::move(rest), next, expanded);
    }
    if (next.empty()) return false;
    canonicalize(next);
    stacks_ = std::move(next);
    return true;
}

// Whether the unfinished character can still become a well-formed code point that some
// stack's character set holds (llama.cpp's match_partial_char, exact for negated sets too).
bool GrammarMatcher::partial_can_complete() const {
    static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};  // by length: shorter forms are overlong
    const unsigned shift = 6u * unsigned(partial_left_);
    const uint32_t low = std::max(partial_value_ << shift, kSmallest[partial_length_]);
    const uint32_t high = std::min((partial_value_ << shift) | ((1u << shift) - 1), 0x10FFFFu);
    const std::pair<uint32_t, uint32_t> outside_surrogates[] = {{low, std::min(high, 0xD7FFu)},
                                                                {std::max(low, 0xE000u), high}};
    for (const Stack& stack : stacks_) {
        if (stack.empty()) continue;
        for (const auto& [a, b] : outside_surrogates)
            if (a <= b && set_meets(stack.back(), a, b)) return true;
    }
    return false;
}

bool GrammarMatcher::same_state(const GrammarMatcher& other) const {
    return partial_value_ == other.partial_value_ && partial_left_ == other.partial_left_ &&
           partial_length_ == other.partial_length_ && stacks_ == other.stacks_;
}

size_t GrammarMatcher::state_hash() const {
    size_t hash = std::hash<uint64_t>()(partial_value_ | uint64_t(uint8_t(partial_left_)) << 32 |
                                        uint64_t(partial_length_) << 40);
    for (const Stack& stack : stacks_) mix_hash(hash, StackHash()(stack));
    return hash;
}

}  // namespace edgerun::text
