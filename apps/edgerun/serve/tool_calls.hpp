// Function calling for the chat templates that take tools (Qwen3's, Qwen2.5's): the
// request's JSON written as those templates' `tojson` writes it, and the model's
// <tool_call> blocks taken out of its reply as the API's tool_calls.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace edgerun::serve {

using json = nlohmann::ordered_json;  // objects keep the client's key order, as templates see it

// JSON text as Python's json.dumps(value, ensure_ascii=False) writes it (", " and ": "
// between items, UTF-8 left as it is): what transformers' and vLLM's `tojson` filter
// gives a template.
std::string template_json(const json& value);

struct ParsedToolCall {
    std::string id;         // call_ and 24 hex digits
    std::string name;
    std::string arguments;  // compact JSON text, as the API sends arguments
};

// How a template's model answers with calls.
enum class ToolCallFormat {
    TaggedBlocks,  // Qwen: <tool_call>{"name": ..., "arguments": {...}}</tool_call>, after any text
    JsonReply,     // Llama 3.1+: the whole reply is {"name": ..., "parameters": {...}}
};

// A reply arriving in pieces: text that cannot be a call goes on as content (before the
// first <tool_call>; a reply that does not open with "{"), the rest is held until the
// end, when it is read as calls. What is not a call is given back as content, so
// nothing the model wrote is lost. Arguments written as a string of JSON are read as the
// object it holds.
class ToolCallSplitter {
public:
    explicit ToolCallSplitter(ToolCallFormat format) : format_(format) {}

    struct End {
        std::string content;  // held text that was not calls
        std::vector<ParsedToolCall> calls;
    };
    // Content that can go out now.
    std::string feed(std::string_view text);
    End finish();

private:
    std::string feed_tagged();
    std::string feed_json();

    ToolCallFormat format_;
    std::string held_;
    bool in_calls_ = false;
    bool content_ = false;  // JsonReply: the reply is text, not a call
};

}  // namespace edgerun::serve
