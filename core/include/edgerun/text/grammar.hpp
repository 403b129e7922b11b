// Constrained decoding: the generated text must be a sentence of a context-free grammar,
// written in llama.cpp's GBNF (so a grammar written for llama.cpp works unchanged). A
// Grammar is parsed once; a GrammarMatcher follows one generation through it, code point
// by code point (a token may end inside a UTF-8 character); a TokenConstraint says which
// tokens of a vocabulary may come next, walking a trie of the vocabulary's pieces so a
// prefix the grammar refuses rules out every token that starts with it at once.
#pragma once

#include <edgerun/text/tokenizer.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::text {

// One element of a rule's alternative, as llama.cpp lays rules out: a flat sequence,
// alternatives separated by kAlt, the rule closed by kEnd.
struct GrammarElement {
    enum Kind : uint8_t {
        kEnd,         // end of the rule
        kAlt,         // start of another alternative
        kRuleRef,     // value: the rule's index
        kChar,        // value: a code point; may be followed by kCharRangeUpper / kCharAlt
        kCharNot,     // [^...]: value as kChar, the set is what follows
        kCharRangeUpper,  // value: the upper bound of the range the previous element starts
        kCharAlt,     // value: another code point of the same set
        kCharAny,     // '.': any code point
    };
    Kind kind;
    uint32_t value;
};

class Grammar {
public:
    // Parses GBNF text. Throws Error (ER_E_INVALID_ARGUMENT) naming the line and column
    // for a syntax error, and naming the rule for an undefined or left-recursive rule or
    // a missing `root`.
    static std::shared_ptr<const Grammar> parse(std::string_view gbnf, std::string_view root = "root");

    const std::vector<std::vector<GrammarElement>>& rules() const { return rules_; }
    uint32_t root() const { return root_; }
    const std::string& rule_name(uint32_t rule) const { return names_.at(rule); }

private:
    Grammar() = default;
    friend class GrammarParser;
    std::vector<std::vector<GrammarElement>> rules_;
    std::vector<std::string> names_;
    uint32_t root_ = 0;
};

// Where one generation stands in a grammar: the set of parse stacks alive after the text
// accepted so far, and an unfinished UTF-8 character. Cheap to copy. Every step throws
// Error when a grammar is so ambiguous that the parses alive at once pass 50,000.
class GrammarMatcher {
public:
    explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

    // Takes `bytes` (any cut of UTF-8 text); false, with the state unchanged, when the
    // grammar does not allow them here.
    bool accept(std::string_view bytes);
    // Whether accept(bytes) would succeed.
    bool allows(std::string_view bytes) const;
    // The text so far is a whole sentence of the grammar (the generation may end here).
    bool can_end() const;
    // Nothing can follow: the only way on is to end.
    bool must_end() const;

    // The trie walk's primitives (TokenConstraint): the state after one more byte (a
    // refused byte changes nothing), and whether the state can lead anywhere.
    bool advance(uint8_t byte);
    bool alive() const;

private:
    // Positions in the grammar's rules, innermost last; the top is always the first element
    // of a character set, and an empty stack is a parse that is complete.
    using Stack = std::vector<const GrammarElement*>;

    // The trie walk (token_constraint.cpp) interns states, to step from each state over each
    // byte only once.
    friend class MatcherStates;
    bool same_state(const GrammarMatcher& other) const;
    size_t state_hash() const;

    bool advance_code_point(uint32_t cp);
    bool partial_can_complete() const;

    std::shared_ptr<const Grammar> grammar_;
    std::vector<Stack> stacks_;   // sorted and without duplicates, so equal states compare equal
    uint32_t partial_value_ = 0;  // the bits of an unfinished UTF-8 character
    int8_t partial_left_ = 0;     // its continuation bytes still to come
    uint8_t partial_length_ = 0;  // its length in bytes, once complete
};

// The pieces of a vocabulary in a trie, built once per tokenizer and shared by every
// constraint over it.
class VocabTrie;

// Where a lazy constraint's grammar starts: at the first `text` outside the blocks from
// `block_open` to `block_close` (a thinking model's <think> block, whose reasoning may
// mention the trigger without opening a call); `starts_in_block`: the prompt left such a
// block open. `at_start`: only where `text` opens the answer (whitespace and blocks
// before it aside), as a Llama 3 call is the whole reply.
struct GrammarTrigger {
    std::string text{};
    std::string block_open{}, block_close{};  // empty: no such blocks
    bool starts_in_block = false;
    bool at_start = false;
};

// A grammar applied to one generation's tokens. Holds the tokenizer by reference: it must
// outlive the constraint.
class TokenConstraint {
public:
    TokenConstraint(std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer,
                    std::shared_ptr<const VocabTrie> trie = nullptr);
    // Lazy (llama.cpp's lazy grammars): any text may come until the trigger appears in it;
    // from the trigger's first byte on, the text is a sentence of the grammar, which starts
    // with the trigger. A model free to answer in words is held to a call's format once it
    // opens one.
    TokenConstraint(std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer,
                    std::shared_ptr<const VocabTrie> trie, GrammarTrigger trigger);

    // Whether `token` may come next. End-of-generation tokens may come when the text is
    // whole; control tokens never.
    bool allows(TokenId token) const;
    // Sets the logit of every token that may not come next to -infinity. Throws Error
    // when none may (a grammar that cannot end and cannot go on with this vocabulary).
    void mask(std::span<float> logits) const;
    // Takes a token into the text; throws Error when it is not allowed.
    void accept(TokenId token);
    // Nothing but an end-of-generation token may come.
    bool must_end() const { return active_ && matcher_.must_end(); }
    // The grammar applies (always, but for a lazy constraint before its trigger).
    bool active() const { return active_; }

    // The trie of `tokenizer`'s pieces, for sharing among constraints.
    static std::shared_ptr<const VocabTrie> build_trie(const Tokenizer& tokenizer);

private:
    // Before a lazy constraint's trigger: where the trigger starts in held_ + `piece`
    // (npos: nowhere yet), and otherwise the scan's state at its end.
    struct TriggerScan {
        size_t trigger_at = std::string::npos;
        size_t keep_from = 0;  // the end that may be the start of a tag, kept for the next piece
        bool in_block = false;
        bool past_start = false;  // at_start: text other than the trigger began the answer
    };
    TriggerScan scan_for_trigger(std::string_view text) const;
    // Whether the text with `piece` added keeps what follows a trigger in it a start of the
    // grammar's sentence.
    bool allows_before_trigger(const std::string& piece) const;

    const Tokenizer& tokenizer_;
    std::shared_ptr<const VocabTrie> trie_;
    GrammarMatcher matcher_;
    GrammarTrigger trigger_;
    std::string held_;  // before the trigger: the end of the text that may start a tag
    bool in_block_ = false;
    bool past_start_ = false;
    bool active_ = true;
};

}  // namespace edgerun::text
