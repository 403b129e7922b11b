// The model's text as a chat response returns it: the reasoning split out (a thinking
// template's <think> block) and the tool calls taken out of the reply, piece by piece as
// a stream sends it or all at once.
#pragma once

#include "tool_calls.hpp"

#include <edgerun/text/reasoning.hpp>

#include <optional>
#include <string>
#include <vector>

namespace edgerun::serve {

class AnswerParts {
public:
    struct Text {
        std::string reasoning, content;
    };

    // split_reasoning: the reply's <think> block (or one the prompt opened) is reasoning;
    // tool_calls: how the reply's calls are written, when tools were given.
    AnswerParts(bool split_reasoning, bool reasoning_open, std::optional<ToolCallFormat> tool_calls) {
        if (split_reasoning) reasoning_.emplace(reasoning_open);
        if (tool_calls) tools_.emplace(*tool_calls);
    }

    // What can be sent of the next piece of text.
    Text feed(const std::string& text) {
        return split_calls(reasoning_ ? reasoning_->feed(text) : text::ReasoningSplitter::Pieces{{}, text});
    }

    // The end of the answer: the text held back, and the calls.
    Text finish(std::vector<ParsedToolCall>& calls) {
        Text out = split_calls(reasoning_ ? reasoning_->finish() : text::ReasoningSplitter::Pieces{});
        if (tools_) {
            ToolCallSplitter::End end = tools_->finish();
            out.content += end.content;
            calls = std::move(end.calls);
        }
        return out;
    }

private:
    // The reply's part of the pieces goes through the tool-call splitter.
    Text split_calls(text::ReasoningSplitter::Pieces pieces) {
        return {std::move(pieces.reasoning), tools_ ? tools_->feed(pieces.content) : std::move(pieces.content)};
    }

    std::optional<text::ReasoningSplitter> reasoning_;
    std::optional<ToolCallSplitter> tools_;
};

}  // namespace edgerun::serve
