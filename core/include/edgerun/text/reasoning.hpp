// A thinking model's answer split into its reasoning and its reply, as an OpenAI-style
// server returns them (`reasoning_content` beside `content`, as llama.cpp's and vLLM's
// servers do for Qwen3 and DeepSeek-R1): the text of a <think>...</think> block at the
// start of the answer, or of one the prompt left open, is reasoning; the rest is the
// reply.
//
// The answer arrives in pieces. A piece may end in the middle of a tag, or in whitespace
// that turns out to be the end of the reasoning; those bytes are held until the next
// piece says which they are, so the pieces a stream sends add up to exactly what the
// whole answer splits into.
#pragma once

#include <string>
#include <string_view>

namespace edgerun::text {

class ReasoningSplitter {
public:
    static constexpr std::string_view kOpen = "<think>", kClose = "</think>";

    struct Pieces {
        std::string reasoning, content;
    };

    // prompt_opens_block: the prompt ends inside a <think> block (DeepSeek-R1's generation
    // prompt), so the answer starts as reasoning.
    explicit ReasoningSplitter(bool prompt_opens_block);

    // Whether a prompt's text ends inside a <think> block.
    static bool opens_block(std::string_view prompt);

    Pieces feed(std::string_view text);
    // The end of the answer: whatever was held back.
    Pieces finish();

private:
    enum class State { BeforeAnswer, Reasoning, Reply };
    State state_;
    bool skip_space_ = false;  // whitespace after a tag belongs to neither part
    std::string held_;
};

}  // namespace edgerun::text
