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
        Text out;
        if (!reasoning_) {
            out.content = tools_ ? tools_->feed(text) : text;
            return out;
        }
        text::ReasoningSplitter::Pieces pieces = reasoning_->feed(text);
        out.reasoning = std::move(pieces.reasoning);
        out.content = tools_ ? tools_->feed(pieces.content) : std::move(pieces.content);
        return out;
    }

    // The end of the answer: the text held back, and the calls.
    Text finish(std::vector<ParsedToolCall>& calls) {
        Text out;
        if (reasoning_) {
            text::ReasoningSplitter::Pieces pieces = reasoning_->finish();
            out.reasoning = std::move(pieces.reasoning);
            out.content = tools_ ? tools_->feed(pieces.content) : std::move(pieces.content);
        }
        if (tools_) {
            ToolCallSplitter::End end = tools_->finish();
            out.content += end.content;
            calls = std::move(end.calls);
        }
        return out;
    }

private:
    std::optional<text::ReasoningSplitter> reasoning_;
    std::optional<ToolCallSplitter> tools_;
};

}  // namespace edgerun::serve
