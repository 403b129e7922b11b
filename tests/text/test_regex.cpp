#include <doctest/doctest.h>

#include "../check_throws.hpp"

#include "pretokenizer.hpp"
#include "regex.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/text/unicode.hpp>

using namespace edgerun::text;
using namespace edgerun::text::detail;

namespace {

// All non-overlapping matches, as UTF-8 strings.
std::vector<std::string> matches(const Regex& re, const std::string& text) {
    const auto cps = decode_utf8(text);
    const auto units = regex_units(cps, re.mode());
    std::vector<std::string> out;
    size_t pos = 0, b = 0, e = 0;
    while (re.search(units.data(), 0, units.size(), pos, b, e)) {
        out.push_back(encode_utf8(std::vector<uint32_t>(cps.begin() + long(b), cps.begin() + long(e))));
        pos = e;
    }
    return out;
}

using Words = std::vector<std::string>;

}  // namespace

TEST_CASE("alternatives are tried in order, quantifiers are greedy and back off") {
    CHECK(matches(Regex("a|ab", RegexMode::Table), "ab") == Words{"a"});
    CHECK(matches(Regex("ab|a", RegexMode::Table), "ab") == Words{"ab"});
    CHECK(matches(Regex("a+ab", RegexMode::Table), "aaab") == Words{"aaab"});
    CHECK(matches(Regex("\\d{1,3}", RegexMode::Table), "1234567") == (Words{"123", "456", "7"}));
    // \s+(?!\S) leaves the last space of a run for the word after it.
    CHECK(matches(Regex("\\s+(?!\\S)|\\s+", RegexMode::Table), "a   b  ") == (Words{"  ", " ", "  "}));
    CHECK(matches(Regex("(?:x|y)+z", RegexMode::Table), "xyxz yz") == (Words{"xyxz", "yz"}));
    CHECK(matches(Regex("\\s+$", RegexMode::Wide), "a  b  ") == Words{"  "});
    CHECK(matches(Regex("[^a-c]+", RegexMode::Wide), "abxyzcd") == (Words{"xyz", "d"}));
}

TEST_CASE("classes follow the mode llama.cpp runs a pattern in") {
    // Table: Unicode categories. Collapsed: ASCII sets plus one class byte per non-ASCII
    // code point. Both agree on letters...
    CHECK(matches(Regex("\\p{L}+", RegexMode::Table), "héllo wörld") == (Words{"héllo", "wörld"}));
    CHECK(matches(Regex("\\p{L}+", RegexMode::Collapsed), "héllo wörld") == (Words{"héllo", "wörld"}));
    // ...but \s in std::regex is ASCII only: non-ASCII whitespace is folded into \v first.
    CHECK(matches(Regex("\\s+", RegexMode::Collapsed), "a\u3000b") == Words{"\u3000"});
    CHECK(matches(Regex("[\\p{P}\\p{S}]+", RegexMode::Collapsed), "a!~$b") == Words{"!~$"});
    CHECK(matches(Regex("\\p{N}+", RegexMode::Collapsed), "x١٢3y") == Words{"١٢3"});
    CHECK(matches(Regex("[\u4E00-\u9FA5]+", RegexMode::Wide), "ab中文cd") == Words{"中文"});
}

TEST_CASE("patterns outside the supported subset are refused with a reason") {
    CHECK_THROWS_CONTAINING_AS(Regex("(?i:'s)", RegexMode::Table), "unsupported group", std::runtime_error);
    CHECK_THROWS_CONTAINING_AS(Regex("(ab", RegexMode::Table), "missing ')'", std::runtime_error);
    CHECK_THROWS_CONTAINING_AS(Regex("a+?", RegexMode::Table), "lazy", std::runtime_error);
    CHECK_THROWS_CONTAINING_AS(Regex("\\p{Han}", RegexMode::Collapsed), "\\p{Han}", std::runtime_error);
    CHECK_THROWS_CONTAINING_AS(Regex("[\u4E00-\u9FA5]\\p{L}", RegexMode::Collapsed), "non-ASCII",
                               std::runtime_error);
}

TEST_CASE("the GPT-2 and Llama 3 splits") {
    const PreTokenizer gpt2(find_pre_tokenizer("gpt-2"));
    CHECK(gpt2.split_words("Hello world's  test 123!!") ==
          (Words{"Hello", " world", "'s", " ", " test", " 123", "!!"}));
    const PreTokenizer llama3(find_pre_tokenizer("llama3"));
    CHECK(llama3.split_words("I'M 12345 ok\n\n  x") == (Words{"I", "'M", " ", "123", "45", " ok", "\n\n", " ", " x"}));
    // The words come out in GPT-2's byte characters.
    CHECK(gpt2.split(" a\n") == (Words{"\xC4\xA0" "a", "\xC4\x8A"}));
}

TEST_CASE("an unknown pre-tokenizer is an error that names it and the supported ones") {
    CHECK_THROWS_CONTAINING_AS(find_pre_tokenizer("xyz"), "unsupported pre-tokenizer 'xyz' (supported: ",
                               edgerun::Error);
    try {
        find_pre_tokenizer("xyz");
    } catch (const edgerun::Error& e) {
        const std::string what = e.what();
        for (const char* name : {"gpt-2", "llama-bpe", "qwen2", "smollm", "starcoder", "refact", "deepseek-coder",
                                 "deepseek-llm", "falcon", "mpt", "default"})
            CHECK(what.find(std::string(name)) != std::string::npos);
    }
    CHECK(find_pre_tokenizer("").name == "default");
    // Every registered pattern compiles.
    for (const auto& name : supported_pre_tokenizers()) CHECK_NOTHROW(PreTokenizer(find_pre_tokenizer(name)));
}

TEST_CASE("long inputs do not exhaust the stack") {
    // llama.cpp's std::regex crashes on these; a lookahead group repeated per letter is
    // matched like a character class here.
    const std::string letters(100000, 'a');
    for (const char* name : {"tekken", "gpt-4o", "qwen2", "deepseek-llm", "llama3"})
        CHECK(PreTokenizer(find_pre_tokenizer(name)).split_words(letters).size() == 1);
    CHECK(PreTokenizer(find_pre_tokenizer("gpt-4o")).split_words(std::string(50000, ' ') + "x").size() == 2);
    // A group that cannot be matched like a class reports the limit instead of crashing.
    const Regex nested("(?:ab)+", RegexMode::Table);
    std::string abs;
    for (int i = 0; i < 5000; ++i) abs += "ab";
    const auto units = regex_units(decode_utf8(abs), RegexMode::Table);
    size_t b = 0, e = 0;
    CHECK_THROWS_CONTAINING_AS(nested.search(units.data(), 0, units.size(), 0, b, e), "repeats too often",
                               std::runtime_error);
}
