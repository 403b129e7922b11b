#include <doctest/doctest.h>

#include "vocab_builders.hpp"

#include <edgerun/text/tokenizer.hpp>

using namespace edgerun::text;
using namespace edgerun::text::test;

namespace {

const char kFFFD[] = "\xEF\xBF\xBD";

// Feeds bytes one at a time and returns what came out after each.
std::vector<std::string> feed(Utf8Stream& s, const std::string& bytes) {
    std::vector<std::string> out;
    for (char c : bytes) out.push_back(s.push(std::string(1, c)));
    return out;
}

}  // namespace

TEST_CASE("a character split across tokens comes out whole, once complete") {
    const Tokenizer tok(small_bpe_vocab("gpt-2"));  // token id == byte for ids < 256
    StreamDecoder d(tok);
    CHECK(d.push(0xE4).empty());
    CHECK(d.push(0xB8).empty());
    CHECK(d.push(0xAD) == "\xE4\xB8\xAD");  // 中
    CHECK(d.push('a') == "a");
    CHECK(d.push(tok.find("hello")) == "hello");
    CHECK(d.flush().empty());
    Utf8Stream emoji;
    CHECK(feed(emoji, "\xF0\x9F\xA6\x99") == std::vector<std::string>{"", "", "", "\xF0\x9F\xA6\x99"});
}

TEST_CASE("bytes that can never complete a character become U+FFFD at once") {
    Utf8Stream d;
    CHECK(d.push("\xFF") == kFFFD);
    CHECK(d.push("\x80z") == std::string(kFFFD) + "z");
    CHECK(d.push("\xE4\xB8").empty());  // may still complete
    CHECK(d.push("a") == std::string(kFFFD) + "a");  // one U+FFFD for the maximal subpart
    CHECK(d.push("\xE0\x80") == std::string(kFFFD) + kFFFD);  // E0 80 is never well formed
    CHECK(d.push("\xED\xA0") == std::string(kFFFD) + kFFFD);  // nor are surrogates
    CHECK(d.push("\xF0\x9F").empty());
    CHECK(d.flush() == kFFFD);  // the stream ended inside a character
    CHECK(d.flush().empty());
}

TEST_CASE("the stream equals the whole text decoded at once") {
    const std::string text = "h\xC3\xA9llo \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80!";
    for (size_t cut = 0; cut <= text.size(); ++cut) {
        Utf8Stream d;
        std::string out = d.push(text.substr(0, cut));
        out += d.push(text.substr(cut));
        out += d.flush();
        CHECK(out == text);
    }
}
