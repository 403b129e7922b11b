// The tokenizers on small in-memory vocabularies, where every expected id can be worked
// out by hand from the algorithm. The comparisons with llama.cpp on real vocabularies
// are in run_reference.py.
#include <doctest/doctest.h>

#include "../check_throws.hpp"

#include "vocab_builders.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <algorithm>

using namespace edgerun;
using namespace edgerun::text;
using namespace edgerun::text::test;

using Ids = std::vector<TokenId>;

TEST_CASE("SentencePiece: highest-scoring pairs merge first, space becomes U+2581") {
    const Vocab v = small_spm_vocab();
    const Tokenizer tok(v);
    const TokenId hello = tok.find("\xE2\x96\x81hello"), world = tok.find("\xE2\x96\x81world");
    REQUIRE(hello != kNoToken);
    REQUIRE(world != kNoToken);
    CHECK(tok.encode("hello world", false, false) == Ids{hello, world});
    CHECK(tok.encode("hello world", true, false) == Ids{1, hello, world});  // add_bos by default
    CHECK(tok.encode("", true, false) == Ids{1});
    CHECK(tok.encode("", false, false).empty());
    // The space prefix is added to text at the start, so "hello" is "▁hello" too.
    CHECK(tok.encode("hello", false, false) == Ids{hello});
}

TEST_CASE("SentencePiece: characters outside the vocabulary fall back to byte tokens") {
    const Tokenizer tok(small_spm_vocab());
    const TokenId space = tok.find("\xE2\x96\x81"), h = tok.find("h"), llo = tok.find("llo");
    CHECK(tok.encode("h\xC3\xA9llo", false, false) == Ids{space, h, 3 + 0xC3, 3 + 0xA9, llo});
    CHECK(tok.decode(Ids{space, h, 3 + 0xC3, 3 + 0xA9, llo}) == "h\xC3\xA9llo");  // leading space dropped
    CHECK(tok.token_to_piece(3 + 0xC3) == "\xC3");
    CHECK(tok.token_to_piece(space) == " ");
}

TEST_CASE("SentencePiece: special tokens in text, and the space prefix after them") {
    const Tokenizer tok(small_spm_vocab());
    const TokenId hello = tok.find("\xE2\x96\x81hello"), space = tok.find("\xE2\x96\x81");
    CHECK(tok.encode("<s>hello", false, true) == Ids{1, hello});
    // Without parse_special, control tokens are plain text: '<', 's', '>' become bytes.
    CHECK(tok.encode("<s>hello", false, false) == Ids{space, 3 + '<', 3 + 's', 3 + '>', tok.find("hello")});
    CHECK(tok.token_to_piece(1).empty());
    CHECK(tok.token_to_piece(1, /*special=*/true) == "<s>");
    // Dropping BOS keeps the space the prefix put there (as llama_detokenize does).
    CHECK(tok.decode(Ids{1, hello}, /*remove_special=*/true) == " hello");
    CHECK(tok.decode(Ids{hello}) == "hello");
    CHECK(tok.decode(Ids{1, hello}, false, /*unparse_special=*/true) == "<s> hello");
    CHECK(tok.is_eog(2));  // </s>, the default EOS
    CHECK_FALSE(tok.is_eog(1));
    CHECK(tok.newline() == 3 + '\n');
}

TEST_CASE("byte-level BPE: merges by rank within pre-tokenized words") {
    const Tokenizer tok(small_bpe_vocab("gpt-2"));
    const TokenId hello = tok.find("hello"), world = tok.find("\xC4\xA0world");
    REQUIRE(hello != kNoToken);
    REQUIRE(world != kNoToken);
    CHECK(tok.encode("hello world", false, false) == Ids{hello, world});
    CHECK(tok.encode("hello world", true, false) == Ids{hello, world});  // gpt-2: no BOS
    CHECK(tok.decode(Ids{hello, world}) == "hello world");
    CHECK(tok.token_to_piece(world) == " world");
    // "helloworld" is one word; "hello" + "world" has no merge, so the ranks leave
    // "hello" and the separate letters.
    CHECK(tok.encode("helloworld", false, false) == Ids{hello, 'w', tok.find("or"), tok.find("ld")});
}

TEST_CASE("byte-level BPE: special tokens; user-defined ones split even without parse_special") {
    const Tokenizer tok(small_bpe_vocab("gpt-2"));
    const TokenId tool = tok.find("<tool>"), im_end = tok.find("<|im_end|>");
    CHECK(tok.encode("hello<tool>x", false, false) == Ids{tok.find("hello"), tool, 'x'});
    // <|im_end|> is stored user-defined, but ends a turn, so it is treated as control.
    CHECK((tok.token_attr(im_end) & TOKEN_ATTR_CONTROL));
    CHECK(tok.is_eog(im_end));
    CHECK(tok.encode("a<|im_end|>", false, true) == Ids{'a', im_end});
    const Ids plain = tok.encode("a<|im_end|>", false, false);
    CHECK(std::find(plain.begin(), plain.end(), im_end) == plain.end());
    CHECK(tok.decode(plain) == "a<|im_end|>");
    CHECK(tok.token_to_piece(im_end).empty());
    CHECK(tok.token_to_piece(tool) == "<tool>");  // user-defined tokens always show
}

TEST_CASE("the pre-tokenizer name sets llama.cpp's defaults") {
    const Tokenizer llama3(small_bpe_vocab("llama-bpe"));
    CHECK(llama3.add_bos());
    CHECK(llama3.bos() == 11);  // llama.cpp's default BOS id for BPE vocabularies
    CHECK(llama3.encode("hello", true, false) == Ids{11, llama3.find("hello")});
    Vocab v = small_bpe_vocab("llama-bpe");
    v.add_bos = false;
    CHECK_FALSE(Tokenizer(v).add_bos());
    CHECK_FALSE(Tokenizer(small_bpe_vocab("qwen2")).clean_spaces());
    CHECK(Tokenizer(small_bpe_vocab("gpt-2")).clean_spaces());
}

TEST_CASE("vocabularies the tokenizer cannot run are refused with the reason") {
    CHECK_THROWS_CONTAINING_AS(Tokenizer(small_bpe_vocab("xyz")), "unsupported pre-tokenizer 'xyz' (supported:",
                               Error);
    Vocab dup = small_bpe_vocab("gpt-2");
    dup.tokens.push_back({"hello", 0.0f, ER_TOKEN_NORMAL});
    CHECK_THROWS_CONTAINING_AS(Tokenizer{dup}, "duplicate token in vocabulary: 'hello'", Error);
    Vocab none = small_bpe_vocab("gpt-2");
    none.kind = ER_VOCAB_NONE;
    none.model = "t5";
    CHECK_THROWS_CONTAINING_AS(Tokenizer{none}, "unsupported tokenizer model 't5'", Error);
    Vocab no_bos = small_spm_vocab();
    no_bos.tokens.resize(1);  // the default BOS id 1 is now past the end, yet add_bos is on
    CHECK_THROWS_CONTAINING_AS(Tokenizer{no_bos}, "add_bos_token is true", Error);
    CHECK_THROWS_AS(Tokenizer(small_spm_vocab()).token_text(100000), Error);
}

TEST_CASE("detokenizing cleans spaces before punctuation where the tokenizer asks for it") {
    const Tokenizer tok(small_bpe_vocab("gpt-2"));
    const Ids ids = tok.encode("a , b . c ' d 's", false, false);
    CHECK(tok.decode(ids) == "a, b. c'd's");
    const Tokenizer qwen(small_bpe_vocab("qwen2"));  // clean_spaces off
    CHECK(qwen.decode(qwen.encode("a , b . c ' d 's", false, false)) == "a , b . c ' d 's");
}
