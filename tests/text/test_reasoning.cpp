// The reasoning/reply split of a thinking model's answer: the same split whatever pieces
// the answer arrives in.
#include <doctest/doctest.h>

#include <edgerun/text/reasoning.hpp>

#include <string>
#include <vector>

using namespace edgerun::text;

namespace {

using Pieces = ReasoningSplitter::Pieces;

Pieces split(const std::vector<std::string>& pieces, bool prompt_opens_block) {
    ReasoningSplitter splitter(prompt_opens_block);
    Pieces all;
    for (const std::string& p : pieces) {
        const Pieces out = splitter.feed(p);
        all.reasoning += out.reasoning;
        all.content += out.content;
    }
    const Pieces out = splitter.finish();
    all.reasoning += out.reasoning;
    all.content += out.content;
    return all;
}

// The split of `answer` whole, checked against every cut into two and three pieces and
// against one byte at a time.
Pieces split_every_way(const std::string& answer, bool prompt_opens_block) {
    const Pieces whole = split({answer}, prompt_opens_block);
    std::vector<std::string> bytes;
    for (char c : answer) bytes.emplace_back(1, c);
    const Pieces one_by_one = split(bytes, prompt_opens_block);
    CHECK(one_by_one.reasoning == whole.reasoning);
    CHECK(one_by_one.content == whole.content);
    for (size_t i = 0; i <= answer.size(); ++i)
        for (size_t j = i; j <= answer.size(); ++j) {
            const Pieces three = split({answer.substr(0, i), answer.substr(i, j - i), answer.substr(j)}, prompt_opens_block);
            if (three.reasoning != whole.reasoning || three.content != whole.content) {
                FAIL_CHECK("cut at " << i << " and " << j << " of '" << answer << "': reasoning '" << three.reasoning
                                     << "', content '" << three.content << "'");
                return whole;
            }
        }
    return whole;
}

}  // namespace

TEST_CASE("a think block at the start of the answer is reasoning, the rest the reply") {
    const Pieces p = split_every_way("<think>\nFirst, 2+2.\nIt is 4.\n</think>\n\nThe answer is 4.", false);
    CHECK(p.reasoning == "First, 2+2.\nIt is 4.");
    CHECK(p.content == "The answer is 4.");
    const Pieces spaced = split_every_way("\n <think>a < b </thin k></think>c", false);
    CHECK(spaced.reasoning == "a < b </thin k>");
    CHECK(spaced.content == "c");
}

TEST_CASE("a block the prompt opened: the answer starts as reasoning") {
    const Pieces p = split_every_way("\nhmm\n\n</think>\n\nYes.", true);
    CHECK(p.reasoning == "hmm");
    CHECK(p.content == "Yes.");
    CHECK(ReasoningSplitter::opens_block("<｜User｜>q<｜Assistant｜><think>\n"));
    CHECK_FALSE(ReasoningSplitter::opens_block("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    CHECK_FALSE(ReasoningSplitter::opens_block("<|im_start|>assistant\n"));
}

TEST_CASE("an answer with no think block at its start is all reply") {
    const Pieces p = split_every_way("  Hello <think>not reasoning</think>", false);
    CHECK(p.reasoning.empty());
    CHECK(p.content == "  Hello <think>not reasoning</think>");
    CHECK(split_every_way("<thin", false).content == "<thin");
    CHECK(split_every_way(" \n", false).content == " \n");
}

TEST_CASE("an answer cut short inside its reasoning keeps all it wrote") {
    const Pieces p = split_every_way("<think>\nabc </th", false);
    CHECK(p.reasoning == "abc </th");
    CHECK(p.content.empty());
    const Pieces empty = split_every_way("<think></think>", false);
    CHECK(empty.reasoning.empty());
    CHECK(empty.content.empty());
}
