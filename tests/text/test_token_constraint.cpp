// The token constraint: over small vocabularies where every allowed set can be worked out
// by hand, then over a synthesized one where mask() must agree with allows() token by token.
#include <doctest/doctest.h>

#include "../check_throws.hpp"
#include "json_gbnf.hpp"
#include "vocab_builders.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/text/grammar.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

using namespace edgerun;
using namespace edgerun::text;
using grammar_test::json_grammar;

namespace {

Vocab bracket_vocab() {
    Vocab v = test::spm_specials();
    v.tokens.push_back({"<|tool|>", 0.0f, ER_TOKEN_CONTROL});
    for (const char* byte : {"<0xC3>", "<0xA9>", "<0xA8>"}) v.tokens.push_back({byte, 0.0f, ER_TOKEN_BYTE});
    for (const char* piece : {"[", "]", ",", "a", "b", "ab", "[a", "a,", ",b", "a]", "]]", "x", "\xC3\xA9", "a,\xC3"})
        v.tokens.push_back({piece, 0.0f, ER_TOKEN_NORMAL});
    return v;
}

// The tokens mask() leaves finite, as their pieces (special ones by name).
std::set<std::string> masked_set(const TokenConstraint& constraint, const Tokenizer& tokenizer) {
    std::vector<float> logits(size_t(tokenizer.n_tokens()), 0.5f);
    constraint.mask(logits);
    std::set<std::string> allowed;
    for (TokenId id = 0; id < tokenizer.n_tokens(); ++id) {
        CHECK(constraint.allows(id) == std::isfinite(logits[size_t(id)]));
        if (std::isfinite(logits[size_t(id)])) {
            CHECK(logits[size_t(id)] == 0.5f);  // allowed logits are left as they were
            allowed.insert(tokenizer.token_to_piece(id, /*special=*/true));
        }
    }
    return allowed;
}

using Pieces = std::set<std::string>;

}  // namespace

TEST_CASE("grammar: TokenConstraint masks exactly the tokens that can come next") {
    const Tokenizer tokenizer(bracket_vocab());
    REQUIRE(tokenizer.is_eog(2));
    const std::shared_ptr<const Grammar> grammar =
        Grammar::parse("root ::= \"[\" item (\",\" item)* \"]\"\nitem ::= \"a\" | \"b\" | \"\xC3\xA9\"");
    TokenConstraint constraint(grammar, tokenizer);
    const TokenId c3 = tokenizer.find("<0xC3>"), a9 = tokenizer.find("<0xA9>");

    CHECK(masked_set(constraint, tokenizer) == Pieces{"[", "[a"});
    constraint.accept(tokenizer.find("["));
    // Multi-character pieces that cross elements ("a,", "a]"), a piece and a byte token that
    // end inside é ("a,\xC3", <0xC3>); not "ab", nor the continuation byte alone.
    CHECK(masked_set(constraint, tokenizer) == Pieces{"a", "b", "a,", "a]", "\xC3\xA9", "\xC3", "a,\xC3"});

    TokenConstraint cut = constraint;
    cut.accept(c3);
    CHECK(masked_set(cut, tokenizer) == Pieces{"\xA9"});  // C3 A8 is è, not in the grammar
    cut.accept(a9);
    CHECK(masked_set(cut, tokenizer) == Pieces{",", ",b", "]"});

    constraint.accept(tokenizer.find("a"));
    CHECK(masked_set(constraint, tokenizer) == Pieces{",", ",b", "]"});
    CHECK_FALSE(constraint.must_end());
    constraint.accept(tokenizer.find("]"));
    // Only the end-of-generation token now; control and unknown tokens never.
    CHECK(constraint.must_end());
    CHECK(masked_set(constraint, tokenizer) == Pieces{"</s>"});
    CHECK_FALSE(constraint.allows(tokenizer.find("<|tool|>")));
    CHECK_FALSE(constraint.allows(1));
    CHECK_FALSE(constraint.allows(0));
    CHECK_FALSE(constraint.allows(-1));
    CHECK_FALSE(constraint.allows(tokenizer.n_tokens()));
    CHECK_THROWS_CONTAINING_AS(constraint.accept(tokenizer.find("]")), "is not allowed here", Error);
    constraint.accept(2);  // end of generation
}

TEST_CASE("grammar: a lazy TokenConstraint lets any text come until its trigger, then holds to the grammar") {
    const Tokenizer tokenizer(bracket_vocab());
    const auto grammar = Grammar::parse(R"(root ::= "a," "b"+ "]")");
    TokenConstraint lazy(grammar, tokenizer, nullptr, GrammarTrigger{.text = "a,"});
    CHECK_FALSE(lazy.active());
    // Before the trigger every token may come but those that write it with a bad sequel: "a,"
    // and ",b" (after an "a") are starts of the sentence, "a,\xC3" is not.
    const Pieces all_but_bad_sequel = [&] {
        Pieces pieces;
        for (TokenId id = 0; id < tokenizer.n_tokens(); ++id)
            if (tokenizer.token_to_piece(id, true) != "a,\xC3") pieces.insert(tokenizer.token_to_piece(id, true));
        return pieces;
    }();
    CHECK(masked_set(lazy, tokenizer) == all_but_bad_sequel);
    lazy.accept(tokenizer.find("x"));
    lazy.accept(tokenizer.find("a"));  // the trigger's first byte: held, not yet the grammar's
    CHECK_FALSE(lazy.active());
    CHECK(lazy.allows(tokenizer.find(",b")));
    CHECK(lazy.allows(tokenizer.find("]]")));  // "a]]": no trigger, free text
    CHECK_FALSE(lazy.allows(tokenizer.find("a,\xC3")));
    CHECK(lazy.allows(2));  // the answer may end without ever opening the grammar
    lazy.accept(tokenizer.find(",b"));  // "a,b": the trigger, cut across two tokens, and its sequel
    CHECK(lazy.active());
    CHECK(masked_set(lazy, tokenizer) == Pieces{"b", "]"});
    CHECK_FALSE(lazy.allows(2));
    lazy.accept(tokenizer.find("]"));
    CHECK(lazy.must_end());
    CHECK(masked_set(lazy, tokenizer) == Pieces{"</s>"});
    CHECK_THROWS_CONTAINING_AS(TokenConstraint(grammar, tokenizer, nullptr, GrammarTrigger{}), "needs a trigger", Error);
}

namespace {

Vocab tag_vocab() {
    Vocab v = test::spm_specials();
    for (const char* piece : {"<think>", "</think>", "<", "</", "think", ">", "<tool_call>", "<tool", "_call>", "\n",
                              "{}", "x"})
        v.tokens.push_back({piece, 0.0f, ER_TOKEN_NORMAL});
    return v;
}

// Feeds `pieces` to a copy of `lazy`; whether each was allowed and the last one opened the grammar.
bool opens_after(TokenConstraint lazy, const Tokenizer& tokenizer, std::initializer_list<const char*> pieces) {
    for (const char* piece : pieces) {
        const TokenId id = tokenizer.find(piece);
        REQUIRE(id >= 0);
        CAPTURE(std::string(piece));
        REQUIRE(lazy.allows(id));
        lazy.accept(id);
    }
    return lazy.active();
}

}  // namespace

TEST_CASE("grammar: a lazy trigger inside a thinking block does not open the grammar") {
    const Tokenizer tokenizer(tag_vocab());
    const auto grammar = Grammar::parse(R"(root ::= "<tool_call>" "\n" "{}")");
    const GrammarTrigger plain{.text = "<tool_call>"};
    const GrammarTrigger outside_think{.text = "<tool_call>", .block_open = "<think>", .block_close = "</think>"};
    GrammarTrigger prompt_opened = outside_think;
    prompt_opened.starts_in_block = true;
    const TokenConstraint free_in_think(grammar, tokenizer, nullptr, outside_think);

    // Without blocks the trigger counts anywhere; with them, only outside.
    CHECK(opens_after(TokenConstraint(grammar, tokenizer, nullptr, plain), tokenizer, {"<think>", "<tool_call>"}));
    CHECK_FALSE(opens_after(free_in_think, tokenizer, {"<think>", "<tool_call>"}));
    // In the block, what follows the trigger is free text.
    CHECK_FALSE(opens_after(free_in_think, tokenizer, {"<think>", "x", "<tool_call>", "x", "</think>", "x"}));
    CHECK(opens_after(free_in_think, tokenizer, {"<think>", "<tool_call>", "x", "</think>", "\n", "<tool_call>"}));
    // Tags cut across tokens, both the block's and the trigger.
    CHECK_FALSE(opens_after(free_in_think, tokenizer, {"<", "think", ">", "<tool", "_call>", "</", "think"}));
    CHECK(opens_after(free_in_think, tokenizer, {"<", "think", ">", "<tool", "_call>", "</", "think", ">", "<tool", "_call>"}));
    CHECK(opens_after(free_in_think, tokenizer, {"x", "<tool", "_call>"}));
    // A block the prompt left open: free until it closes.
    const TokenConstraint opened(grammar, tokenizer, nullptr, prompt_opened);
    CHECK_FALSE(opens_after(opened, tokenizer, {"x", "<tool_call>", "x"}));
    CHECK(opens_after(opened, tokenizer, {"x", "</think>", "<tool_call>", "\n"}));

    // Once open, the grammar holds: after the trigger only its sentence may come.
    TokenConstraint lazy = free_in_think;
    for (const char* piece : {"<think>", "x", "</think>", "<tool_call>"}) lazy.accept(tokenizer.find(piece));
    CHECK(lazy.active());
    CHECK_FALSE(lazy.allows(tokenizer.find("x")));
    CHECK(lazy.allows(tokenizer.find("\n")));

    // A trigger that counts only where it opens the answer (whitespace and blocks aside).
    GrammarTrigger first = outside_think;
    first.at_start = true;
    const TokenConstraint opening(grammar, tokenizer, nullptr, first);
    CHECK(opens_after(opening, tokenizer, {"<tool_call>"}));
    CHECK(opens_after(opening, tokenizer, {"\n", "<tool", "_call>"}));
    CHECK(opens_after(opening, tokenizer, {"<", "think", ">", "x", "</think>", "\n", "<tool_call>"}));
    CHECK_FALSE(opens_after(opening, tokenizer, {"x", "<tool_call>"}));
    CHECK_FALSE(opens_after(opening, tokenizer, {"<think>", "</think>", "x", "<tool_call>", "x"}));
    CHECK_FALSE(opens_after(opening, tokenizer, {"<", "x", "<tool_call>"}));

    GrammarTrigger half = outside_think;
    half.block_close.clear();
    CHECK_THROWS_CONTAINING_AS(TokenConstraint(grammar, tokenizer, nullptr, half), "both an opening and a closing tag",
                               Error);
}

TEST_CASE("grammar: TokenConstraint's edge cases: no token, padded logits, shared tries") {
    const Tokenizer tokenizer(bracket_vocab());
    const std::shared_ptr<const Grammar> z = Grammar::parse("root ::= \"z\"");
    const TokenConstraint stuck(z, tokenizer);
    std::vector<float> logits(size_t(tokenizer.n_tokens()), 1.0f);
    CHECK_THROWS_CONTAINING_AS(stuck.mask(logits), "no token may come next", Error);
    CHECK(logits[3 + 4] == 1.0f);  // nothing written when it throws

    const auto trie = TokenConstraint::build_trie(tokenizer);
    const TokenConstraint list(Grammar::parse("root ::= \"[\" \"a\"* \"]\""), tokenizer, trie);
    const TokenConstraint same_trie(Grammar::parse("root ::= \"x\""), tokenizer, trie);
    std::vector<float> padded(size_t(tokenizer.n_tokens()) + 5, 0.0f);
    list.mask(padded);
    for (size_t i = size_t(tokenizer.n_tokens()); i < padded.size(); ++i) CHECK(std::isinf(padded[i]));
    CHECK(std::isfinite(padded[size_t(tokenizer.find("["))]));
    CHECK(same_trie.allows(tokenizer.find("x")));
    std::vector<float> short_logits(4, 0.0f);
    CHECK_THROWS_CONTAINING_AS(list.mask(short_logits), "logits for a vocabulary of", Error);

    Vocab other = bracket_vocab();
    other.tokens.push_back({"y", 0.0f, ER_TOKEN_NORMAL});
    const Tokenizer other_tokenizer(other);
    CHECK_THROWS_CONTAINING_AS(TokenConstraint(z, other_tokenizer, trie), "built for another tokenizer", Error);
}

namespace {

// A SentencePiece-style vocabulary of `n_pieces` distinct pieces in the proportions of a real
// one: mostly lowercase words, many with a leading space (▁), some capitalized, digits,
// punctuation that JSON cares about, and some multibyte characters, plus the 256 byte tokens.
Vocab synthetic_vocab(size_t n_pieces) {
    Vocab v = test::spm_vocab_with_bytes();
    const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
    const std::string punctuation = "{}[]\",:.-\\/_'!?()";
    const char* const multibyte[] = {"\xC3\xA9", "\xC3\xBC", "\xE2\x9C\x93", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
                                     "\xD0\xB6"};
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    auto next = [&seed](size_t bound) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        return size_t(seed % bound);
    };
    std::set<std::string> seen;
    while (seen.size() < n_pieces) {
        std::string piece = next(10) < 4 ? "\xE2\x96\x81" : "";
        const size_t length = 1 + next(4) + next(5);
        for (size_t i = 0; i < length; ++i) {
            const size_t kind = next(100);
            if (kind < 75) piece += letters[std::min(next(letters.size()), next(letters.size()))];
            else if (kind < 82) piece += char('A' + next(26));
            else if (kind < 88) piece += char('0' + next(10));
            else if (kind < 96) piece += punctuation[next(punctuation.size())];
            else piece += multibyte[next(std::size(multibyte))];
        }
        if (seen.insert(piece).second) v.tokens.push_back({piece, 0.0f, ER_TOKEN_NORMAL});
    }
    return v;
}

// States of a JSON document, each a prefix of it.
const char* const kJsonStates[] = {
    "",
    "{",
    "{\"",
    "{\"ke",
    "{\"key\": ",
    "{\"key\": \"va",
    "{\"key\": \"va\\",
    "{\"key\": \"va\\u00",
    "{\"key\": \"va\xE2\x9C",
    "{\"key\": [1, 2.",
    "{\"key\": [1, 2.5e",
    "{\"key\": tr",
    "{\"key\": {\"k\": []}",
    "{\"key\": {\"k\": []}}",
};

}  // namespace

TEST_CASE("grammar: mask agrees with allows on every token, over a JSON grammar and 4000 pieces") {
    const Tokenizer tokenizer(synthetic_vocab(4000));
    const auto trie = TokenConstraint::build_trie(tokenizer);
    for (const char* state : kJsonStates) {
        CAPTURE(state);
        GrammarMatcher matcher(json_grammar());
        REQUIRE(matcher.accept(state));
        TokenConstraint constraint(json_grammar(), tokenizer, trie);
        // Walk there token by token: byte tokens spell any text.
        for (const char c : std::string_view(state)) constraint.accept(tokenizer.find([&] {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", unsigned(uint8_t(c)));
            return std::string(name);
        }()));
        std::vector<float> logits(size_t(tokenizer.n_tokens()), 0.0f);
        constraint.mask(logits);
        size_t n_allowed = 0, disagreements = 0;
        for (TokenId id = 0; id < tokenizer.n_tokens(); ++id) {
            const bool masked_in = std::isfinite(logits[size_t(id)]);
            n_allowed += masked_in;
            if (masked_in != constraint.allows(id)) ++disagreements;
            // And allows() is the matcher's verdict on the piece.
            if (!tokenizer.is_eog(id) && !(tokenizer.token_attr(id) & TOKEN_ATTR_CONTROL)) {
                const std::string piece = tokenizer.token_to_piece(id);
                if (!piece.empty() && masked_in != matcher.allows(piece)) ++disagreements;
            }
        }
        CHECK(disagreements == 0);
        CHECK(n_allowed > 0);
        CHECK(std::isfinite(logits[2]) == matcher.can_end());
    }
}

TEST_CASE("grammar: mask timing on a 50,000-piece vocabulary inside a JSON string") {
    using Clock = std::chrono::steady_clock;
    auto ms_since = [](Clock::time_point start) {
        return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    };
    const Tokenizer tokenizer(synthetic_vocab(50000));
    auto start = Clock::now();
    const auto trie = TokenConstraint::build_trie(tokenizer);
    const double build_ms = ms_since(start);

    TokenConstraint constraint(json_grammar(), tokenizer, trie);
    for (const char* text : {"{", "\"", "key", "\"", ":", " ", "\"", "some text"})
        for (const char c : std::string_view(text)) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", unsigned(uint8_t(c)));
            constraint.accept(tokenizer.find(name));
        }
    std::vector<float> logits(size_t(tokenizer.n_tokens()));
    constexpr int kRuns = 20;
    start = Clock::now();
    for (int run = 0; run < kRuns; ++run) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        constraint.mask(logits);
    }
    const double mask_ms = ms_since(start) / kRuns;
    size_t n_allowed = 0;
    for (const float logit : logits) n_allowed += std::isfinite(logit);

    start = Clock::now();
    size_t n_allows = 0;
    for (TokenId id = 0; id < tokenizer.n_tokens(); ++id) n_allows += constraint.allows(id);
    const double allows_ms = ms_since(start);

    std::printf("grammar timing: %d tokens; trie built in %.1f ms; mask inside a JSON string %.2f ms "
                "(%zu allowed); allows() on every token %.1f ms\n",
                tokenizer.n_tokens(), build_ms, mask_ms, n_allowed, allows_ms);
    CHECK(n_allowed == n_allows);
    CHECK(n_allowed > size_t(tokenizer.n_tokens()) / 2);  // inside a string nearly everything goes
}

TEST_CASE("grammar: a mask whose parses multiply past the work bound is refused in one line") {
    const Tokenizer tokenizer(synthetic_vocab(4000));
    const auto trie = TokenConstraint::build_trie(tokenizer);
    // Every letter may open or close a nesting: the parses alive grow with the text.
    const auto nested = Grammar::parse("root ::= x+\nx ::= [a-z] x [a-z] | [a-z] | [a-z] x\n");
    TokenConstraint constraint(nested, tokenizer, trie);
    std::vector<float> logits(size_t(tokenizer.n_tokens()));
    CHECK_NOTHROW(constraint.mask(logits));
    const TokenId e = tokenizer.find("e");
    REQUIRE(e >= 0);
    int accepted = 0;
    std::string refusal;
    for (; accepted < 400 && refusal.empty(); ++accepted) {
        constraint.accept(e);
        try {
            constraint.mask(logits);
        } catch (const Error& error) {
            refusal = error.what();
            CHECK(error.code() == ER_E_INVALID_ARGUMENT);
        }
    }
    CAPTURE(accepted);
    CHECK(refusal.find("too ambiguous") != std::string::npos);
    // The same text under a grammar that does not multiply its parses goes on.
    TokenConstraint flat(Grammar::parse("root ::= [a-z]+"), tokenizer, trie);
    for (int i = 0; i < accepted; ++i) flat.accept(e);
    CHECK_NOTHROW(flat.mask(logits));
}
