// GBNF grammars: the parser (llama.cpp's syntax and its error cases) and the matcher fed
// byte by byte (UTF-8 cut anywhere). The token constraint: test_token_constraint.cpp.
#include <doctest/doctest.h>

#include "../check_throws.hpp"
#include "json_gbnf.hpp"

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
using grammar_test::kJson;

namespace {

using GrammarPtr = std::shared_ptr<const Grammar>;
constexpr size_t kAll = std::string_view::npos;

// The offset of the first byte the grammar refuses, or kAll when it takes every byte.
size_t refused_at(const GrammarPtr& grammar, std::string_view text) {
    GrammarMatcher matcher(grammar);
    for (size_t i = 0; i < text.size(); ++i)
        if (!matcher.advance(uint8_t(text[i]))) return i;
    return kAll;
}

bool whole(const GrammarPtr& grammar, std::string_view text) {
    GrammarMatcher matcher(grammar);
    return matcher.accept(text) && matcher.can_end();
}

// The message Grammar::parse throws (checking it is an invalid-argument Error).
std::string parse_error(std::string_view gbnf, std::string_view root = "root") {
    try {
        Grammar::parse(gbnf, root);
    } catch (const Error& e) {
        CHECK(e.code() == ER_E_INVALID_ARGUMENT);
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("grammar: JSON documents are accepted whole, fed in any two pieces") {
    const GrammarPtr json = json_grammar();
    const std::string documents[] = {
        R"({"name": "edgerun", "n": [1, -2.5e3, 0, 1E+2], "ok": true, "none": null})",
        "{}",
        "[]",
        " 42",
        "-0.5",
        R"("a\"b\\c\/\u00e9\n")",
        "\"h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80\"",
        R"({"a":{"b":[{}, [], ""]}})",
        "{\n  \"x\": false,\n\t\"y\": [true]\n}\n",
    };
    for (const std::string& doc : documents) {
        CAPTURE(doc);
        CHECK(refused_at(json, doc) == kAll);
        for (size_t cut = 0; cut <= doc.size(); ++cut) {
            GrammarMatcher matcher(json);
            CAPTURE(cut);
            REQUIRE(matcher.accept(std::string_view(doc).substr(0, cut)));
            CHECK(matcher.allows(std::string_view(doc).substr(cut)));
            REQUIRE(matcher.accept(std::string_view(doc).substr(cut)));
            CHECK(matcher.can_end());
        }
    }
}

TEST_CASE("grammar: JSON mistakes are refused at the byte where they go wrong") {
    const GrammarPtr json = json_grammar();
    const std::pair<std::string, size_t> mistakes[] = {
        {R"({"a" 1})", 5},           // a ':' was due
        {"[1,]", 3},                  // a value was due after ','
        {R"({"a":01})", 6},          // no leading zeros
        {"\"tab\there\"", 4},         // a raw control character in a string
        {R"("\x41")", 2},            // not a JSON escape
        {R"("\u00g0")", 5},          // not a hex digit
        {"trUe", 2},
        {R"({"a": 1}})", 8},         // after the value nothing may follow
        {"[]  ", 3},                  // whitespace is bounded: one space, not two
        {"\"\xC3(\"", 2},             // a lead byte followed by no continuation byte
        {"\"\xC0\x80\"", 1},          // an overlong form never starts a character
        {"\"\xED\xA0\x80\"", 2},      // neither does a surrogate
        {"00", 1},
        {"[\n" + std::string(21, ' ') + "1]", 22},  // a newline and at most 20 indenting characters
    };
    for (const auto& [text, at] : mistakes) {
        CAPTURE(text);
        CHECK(refused_at(json, text) == at);
        // A refused byte leaves the state as it was: the good prefix still goes on.
        GrammarMatcher matcher(json);
        REQUIRE(matcher.accept(std::string_view(text).substr(0, at)));
        CHECK_FALSE(matcher.accept(std::string_view(text).substr(at)));
        CHECK(matcher.accept(std::string_view(text).substr(0, 0)));
    }
    CHECK_FALSE(whole(json, "[[1]"));  // every byte taken, but not a whole document
    CHECK_FALSE(whole(json, "\"abc"));
    CHECK(whole(json, "[[1]]"));
}

TEST_CASE("grammar: repetition counts are exact") {
    const GrammarPtr two_to_four = Grammar::parse(R"(root ::= "a"{2,4})");
    CHECK_FALSE(whole(two_to_four, "a"));
    CHECK(whole(two_to_four, "aa"));
    CHECK(whole(two_to_four, "aaa"));
    CHECK(whole(two_to_four, "aaaa"));
    CHECK(refused_at(two_to_four, "aaaaa") == 4);
    CHECK_FALSE(whole(two_to_four, ""));

    // The item is the whole literal, a class or a group.
    const GrammarPtr words = Grammar::parse(R"(root ::= "ab"{2} [0-9]{3,} ("x" | "yz"){0,2} "." ?)");
    CHECK(whole(words, "abab123"));
    CHECK(whole(words, "abab1234567xyz."));
    CHECK(whole(words, "abab000yzyz"));
    CHECK(refused_at(words, "ab12") == 2);
    CHECK_FALSE(whole(words, "abab12"));
    CHECK(refused_at(words, "abab123xxx") == 9);

    const GrammarPtr zero = Grammar::parse("root ::= \"x\" \"y\"{0} \"z\" \"w\"{ 1 , } \"v\"*");
    CHECK(whole(zero, "xzw"));
    CHECK(whole(zero, "xzwwwvv"));
    CHECK(refused_at(zero, "xyz") == 1);

    // {0,n} is a chain of n nested helper rules, not 2^n ways of choosing optional copies.
    const GrammarPtr bounded = Grammar::parse("root ::= [a-z]{0,20}");
    CHECK(bounded->rules().size() == 21);
    CHECK(whole(bounded, std::string(20, 'q')));
    CHECK(refused_at(bounded, std::string(21, 'q')) == 20);
    std::string rounds;
    for (int i = 0; i < 20; ++i) rounds.append(1, 'a').append(size_t(i), 'q');
    const GrammarPtr nested = Grammar::parse("root ::= (\"a\" [b-z]{0,20}){0,20}");
    CHECK(whole(nested, rounds));
    CHECK(refused_at(nested, rounds + "a") == rounds.size());

    // Parses that really multiply (here, 2^n ways to close n a's) are refused, not followed.
    const GrammarPtr exploding = Grammar::parse("root ::= \"a\" root \"b\" | \"a\" root \"c\" | ");
    GrammarMatcher deep(exploding);
    REQUIRE(deep.accept(std::string(10, 'a')));
    CHECK(deep.accept("bcbbc"));
    CHECK_THROWS_CONTAINING_AS(GrammarMatcher(exploding).accept(std::string(20, 'a')), "too ambiguous", Error);

    // Above 2000 a maximum means no maximum (as in llama.cpp); a minimum that large is refused.
    CHECK(whole(Grammar::parse("root ::= \"a\"{1,5000}"), std::string(3000, 'a')));
}

TEST_CASE("grammar: multibyte characters fed one byte at a time") {
    // [é-ë]: C3 may complete to é (C3 A9), so it is alive; C3 A8 (è) is not in the set.
    GrammarMatcher accented(Grammar::parse("root ::= [\xC3\xA9-\xC3\xAB]"));
    REQUIRE(accented.advance(0xC3));
    CHECK(accented.alive());
    CHECK_FALSE(accented.can_end());
    CHECK_FALSE(accented.advance(0xA8));
    CHECK(accented.advance(0xA9));
    CHECK(accented.can_end());

    // [α]: CE B1. C3 can only become U+00C0..U+00FF.
    GrammarMatcher alpha(Grammar::parse("root ::= [\\u03B1]"));
    CHECK_FALSE(alpha.advance(0xC3));
    REQUIRE(alpha.advance(0xCE));
    CHECK_FALSE(alpha.advance(0xB2));
    CHECK(alpha.advance(0xB1));
    CHECK(alpha.must_end());

    // A negated set: C3 is refused only when every character it starts is excluded.
    CHECK_FALSE(GrammarMatcher(Grammar::parse("root ::= [^\\u00C0-\\u00FF]")).allows("\xC3"));
    CHECK(GrammarMatcher(Grammar::parse("root ::= [^\\u00C0-\\u00FF]")).allows("\xC4"));
    CHECK(GrammarMatcher(Grammar::parse("root ::= [^\\u00E9]")).allows("\xC3"));  // è, ê, ... remain

    const GrammarPtr not_quote = Grammar::parse(R"(root ::= "\"" [^"]* "\"")");
    const std::string text = "\"\xC3\xA9\xE2\x9C\x93\xF0\x9F\x98\x80\"";  // "é✓😀"
    GrammarMatcher matcher(not_quote);
    for (size_t i = 0; i < text.size(); ++i) {
        CAPTURE(i);
        REQUIRE(matcher.advance(uint8_t(text[i])));
        CHECK(matcher.alive());
        const bool inside_character = i == 1 || i == 3 || i == 4 || (i >= 6 && i <= 8);
        const bool closed = i + 1 == text.size();
        CHECK(matcher.allows("\"") == (!inside_character && !closed));
    }
    CHECK(matcher.must_end());

    // A 3-byte literal, and the four-byte range of an emoji class.
    GrammarMatcher check(Grammar::parse("root ::= \"\xE2\x9C\x93\""));
    CHECK(check.advance(0xE2));
    CHECK(check.advance(0x9C));
    CHECK_FALSE(check.advance(0x94));
    CHECK(check.advance(0x93));
    const GrammarPtr emoji = Grammar::parse("root ::= [\\U0001F600-\\U0001F64F]+");
    CHECK(whole(emoji, "\xF0\x9F\x98\x80\xF0\x9F\x99\x8F"));
    CHECK(refused_at(emoji, "\xF0\x9F\x9A\x80") == 2);  // U+1F680 is past the range
}

TEST_CASE("grammar: '.' takes any code point, and no invalid UTF-8") {
    const GrammarPtr two = Grammar::parse("root ::= . .");
    CHECK(whole(two, "ab"));
    CHECK(whole(two, "\xC3\xA9\xF0\x9F\x98\x80"));
    CHECK(whole(two, std::string("\0\x7F", 2)));
    CHECK_FALSE(whole(two, "a"));
    CHECK(refused_at(two, "abc") == 2);

    const GrammarPtr any = Grammar::parse("root ::= .*");
    const std::pair<std::string, size_t> invalid[] = {
        {"\x80", 0},         {"\xC0\x80", 0},     {"\xC1\xBF", 0},     {"\xF5\x80", 0},
        {"\xF8", 0},         {"\xFF", 0},         {"\xE0\x80", 1},     {"\xED\xA0", 1},
        {"\xF0\x80", 1},     {"\xF4\x90", 1},     {"\xC3" "A", 1},     {"\xE2\x9C" "A", 2},
    };
    for (const auto& [bytes, at] : invalid) {
        CAPTURE(bytes);
        CHECK(refused_at(any, bytes) == at);
    }
    CHECK(whole(any, "\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF"));  // U+D7FF, U+E000, U+10FFFF
    GrammarMatcher cut(any);
    REQUIRE(cut.accept("ab\xE2\x9C"));
    CHECK_FALSE(cut.can_end());  // an unfinished character is not a whole text
    CHECK(cut.accept("\x93"));
    CHECK(cut.can_end());
}

TEST_CASE("grammar: escapes and ranges in literals and classes") {
    const GrammarPtr set = Grammar::parse(R"(root ::= [\x41-\x43\u00e9\]\-\\\n]+ "\t\r\"\[" )");
    CHECK(whole(set, "ABC\xC3\xA9]-\\\n\t\r\"["));
    CHECK(refused_at(set, "AD") == 1);
    const GrammarPtr dash = Grammar::parse("root ::= [-+a-]+");  // '-' first or last is itself
    CHECK(whole(dash, "-+a-"));
    CHECK(refused_at(dash, "b") == 0);
    CHECK(whole(Grammar::parse("root ::= \"\\U0001F600\""), "\xF0\x9F\x98\x80"));
}

TEST_CASE("grammar: can_end and must_end") {
    GrammarMatcher matcher(Grammar::parse("root ::= \"a\" \"b\"?"));
    CHECK_FALSE(matcher.can_end());
    CHECK_FALSE(matcher.must_end());
    REQUIRE(matcher.accept("a"));
    CHECK(matcher.can_end());
    CHECK_FALSE(matcher.must_end());
    CHECK_FALSE(matcher.accept("bx"));  // refused whole: the "b" is not taken either
    REQUIRE(matcher.accept("b"));
    CHECK(matcher.must_end());
    CHECK_FALSE(matcher.allows("b"));

    GrammarMatcher empty(Grammar::parse("root ::= "));
    CHECK(empty.can_end());
    CHECK(empty.must_end());

    // Recursion that is not left recursion: balanced parentheses.
    const GrammarPtr balanced = Grammar::parse("root ::= \"(\" root \")\" root | ");
    CHECK(whole(balanced, "(()())()"));
    CHECK(refused_at(balanced, "())") == 2);
    GrammarMatcher open(balanced);
    REQUIRE(open.accept("(("));
    CHECK_FALSE(open.can_end());

    // The root rule may be named.
    CHECK(whole(Grammar::parse("greeting ::= \"hi\"", "greeting"), "hi"));
}

TEST_CASE("grammar: newlines end a rule except inside parentheses and after '::=' or '|'") {
    CHECK(whole(Grammar::parse("root ::=\n  \"a\" |\n  \"b\" # comment\n\n"), "b"));
    CHECK(whole(Grammar::parse("root ::= (\n  \"a\"\n  \"b\" # comment\n)\nother ::= \"c\""), "ab"));
    CHECK(whole(Grammar::parse("root ::= \"a\"\r\nother ::= \"c\"\r\n"), "a"));
    CHECK(parse_error("root ::= \"a\"\n  \"b\"") ==
          "grammar: line 2, column 3: expected a rule name, found '\"'");
}

TEST_CASE("grammar: parse errors name the line and column, or the rule") {
    CHECK(parse_error("root ::= \"a\"\nnext \"b\"") == "grammar: line 2, column 6: expected '::=', found '\"'");
    CHECK(parse_error("root ::= value") == "grammar: rule 'value' is used but not defined");
    CHECK(parse_error("root ::= a b\nb ::= c") == "grammar: rule 'a' is used but not defined");
    CHECK(parse_error("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]") ==
          "grammar: rule 'expr' is left-recursive");
    // Indirect, and through rules that may match nothing.
    CHECK(parse_error("root ::= a\na ::= ws b\nb ::= a \"x\" | \"y\"\nws ::= \" \"*") ==
          "grammar: rule 'a' is left-recursive");
    CHECK(parse_error("root ::= x\nx ::= \"a\"? x \"b\" | \"c\"") == "grammar: rule 'x' is left-recursive");
    CHECK(parse_error("root ::= (\"a\" | \"\")* \"b\"") == "grammar: rule 'root' is left-recursive");
    CHECK(parse_error("expr ::= \"a\"") == "grammar: no rule named 'root'");
    CHECK(parse_error("root ::= \"a\"", "start") == "grammar: no rule named 'start'");
    CHECK(parse_error("") == "grammar: the grammar is empty (it has no rules)");
    CHECK(parse_error("# nothing but a comment\n\n  \n") == "grammar: the grammar is empty (it has no rules)");

    CHECK(parse_error("root ::= \"abc") == "grammar: line 1, column 10: unterminated string literal");
    CHECK(parse_error("root ::= [a-z") == "grammar: line 1, column 10: unterminated character class");
    CHECK(parse_error("root ::= []") == "grammar: line 1, column 10: empty character class");
    CHECK(parse_error("root ::= [z-a]") ==
          "grammar: line 1, column 11: character range is backwards (its end is below its start)");
    CHECK(parse_error("root ::= \"\\q\"") == "grammar: line 1, column 11: unknown escape '\\q'");
    CHECK(parse_error("root ::= [\\\n]") == "grammar: line 1, column 11: unknown escape: '\\' before a newline");
    CHECK(parse_error("root ::= \"\\x4\"") ==
          "grammar: line 1, column 14: expected 2 hex digits in the escape, found '\"'");
    CHECK(parse_error("root ::= \"\\U00110000\"") ==
          "grammar: line 1, column 11: escape beyond U+10FFFF, the last code point");
    CHECK(parse_error("root ::= (\"a\"") == "grammar: line 1, column 14: expected ')', found the end of the grammar");
    CHECK(parse_error("root ::= \"a\")") ==
          "grammar: line 1, column 13: expected an element, '|' or the end of the line, found ')'");
    CHECK(parse_error("root ::= *") == "grammar: line 1, column 10: expected an element before '*'");
    CHECK(parse_error("root ::= \"a\"{2") ==
          "grammar: line 1, column 15: expected ',' or '}', found the end of the grammar");
    CHECK(parse_error("root ::= \"a\"{2,2 x") == "grammar: line 1, column 18: expected '}', found 'x'");
    CHECK(parse_error("root ::= \"a\"{x}") == "grammar: line 1, column 14: expected a number, found 'x'");
    CHECK(parse_error("root ::= \"a\"{3,1}") == "grammar: line 1, column 13: repetition maximum below its minimum");
    CHECK(parse_error("root ::= \"a\"{5000}") == "grammar: line 1, column 13: repetition count over the limit of 2000");
    CHECK(parse_error("root ::= <think>") ==
          "grammar: line 1, column 10: token references (<...>, !<...>) are not supported");
    CHECK(parse_error("root ::= \"a\"\nroot ::= \"b\"") == "grammar: line 2, column 1: rule 'root' is defined twice");
    CHECK(parse_error("root ::= \"\xC3(\"") == "grammar: line 1, column 11: invalid UTF-8");
    CHECK(parse_error("::= \"a\"") == "grammar: line 1, column 1: expected a rule name, found ':'");
    CHECK(parse_error("root = \"a\"") == "grammar: line 1, column 6: expected '::=', found '='");
    // Columns count characters; CRLF is one line break.
    CHECK(parse_error("root ::= \"\xC3\xA9\" @") ==
          "grammar: line 1, column 14: expected an element, '|' or the end of the line, found '@'");
    CHECK(parse_error("root ::= \"a\"\r\nx ::= ]") ==
          "grammar: line 2, column 7: expected an element, '|' or the end of the line, found ']'");
    CHECK(parse_error("root ::= " + std::string(300, '(')) ==
          "grammar: line 1, column 266: groups nested deeper than 256");
    CHECK(parse_error("root ::= \"ab\"{2000}{2000}") ==
          "grammar: line 1, column 20: the grammar is too large once its repetitions are expanded");
}

TEST_CASE("grammar: truncated and mutated grammars fail cleanly, never crash or hang") {
    const std::string sources[] = {
        kJson,
        "root ::= (\"a\" | [b-d]{1,3} \"\\u00e9\")+ x?\nx ::= [^\\n]* \"\\n\" # end\n",
        "root ::= \"[\" (item (\",\" item){0,5})? \"]\"\nitem ::= [0-9]+ | \"\\\"\" [^\"]* \"\\\"\"\n",
    };
    const std::string alphabet = "\"[]()|*+?{},.:=-^\\#\n ab0x\xC3\xA9";
    uint64_t seed = 0x2545F4914F6CDD1Dull;
    auto next = [&seed](size_t bound) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        return size_t(seed % bound);
    };
    auto try_grammar = [&](const std::string& text) {
        GrammarPtr grammar;
        try {
            grammar = Grammar::parse(text);
        } catch (const Error& e) {
            CHECK(std::string(e.what()).rfind("grammar: ", 0) == 0);
            return;
        }
        try {
            GrammarMatcher matcher(grammar);
            for (int i = 0; i < 16; ++i) {
                (void)matcher.advance(uint8_t(alphabet[next(alphabet.size())]));
                (void)matcher.can_end();
            }
        } catch (const Error& e) {  // only a grammar too ambiguous to follow may throw here
            CHECK(std::string(e.what()).find("too ambiguous") != std::string::npos);
        }
    };
    size_t parsed = 0;
    for (const std::string& source : sources) {
        for (size_t cut = 0; cut <= source.size(); ++cut) try_grammar(source.substr(0, cut));
        for (int round = 0; round < 2000; ++round) {
            std::string text = source;
            for (int edits = 1 + int(next(3)); edits > 0; --edits) {
                const size_t at = next(text.size() + 1);
                const char c = alphabet[next(alphabet.size())];
                if (next(2) || at == text.size()) text.insert(at, 1, c);
                else text[at] = c;
            }
            try_grammar(text);
            try {
                Grammar::parse(text);
                ++parsed;
            } catch (const Error&) {
            }
        }
    }
    // And short random rules from scratch.
    for (int round = 0; round < 5000; ++round) {
        std::string text = "root ::= ";
        for (size_t n = 1 + next(24); n > 0; --n) text += alphabet[next(alphabet.size())];
        try_grammar(text);
    }
    CHECK(parsed > 100);  // the mutations did not all break the syntax
}

// ---- TokenConstraint ---------------------------------------------------------------------------
