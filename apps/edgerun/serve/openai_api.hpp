// The OpenAI API's shapes: a /v1/chat/completions or /v1/completions body becomes a
// JobSpec (or an ApiError with the status and the field at fault), and a job's output
// becomes a response or a stream of chunks. No HTTP here.
#pragma once

#include "job.hpp"
#include "tool_calls.hpp"

#include <edgerun/text/chat_template.hpp>
#include <edgerun/text/reasoning.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace edgerun::serve {

// An error as the OpenAI API reports it: {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error {
    ApiError(int status, const std::string& message, std::string param = {}, std::string code = {},
             std::string type = "invalid_request_error")
        : std::runtime_error(message), status(status), param(std::move(param)), code(std::move(code)),
          type(std::move(type)) {}
    int status;
    std::string param, code, type;
    json body() const;
};

enum class Endpoint { Chat, Completion };

struct ParsedRequest {
    JobSpec spec;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    // The answer's <think> block goes to reasoning_content (a chat with a thinking
    // template, unless the server was told --reasoning-format none) ...
    bool split_reasoning = false;
    bool reasoning_open = false;  // ... and the prompt opened it already (DeepSeek-R1)
    std::optional<ToolCallFormat> tool_calls;  // tools were given: how the reply's calls are written
    std::string echo;             // completions' echo: the prompt's text, before the completion's
};

// Where a stream chunk's text goes: the reply, or the reasoning before it.
enum class Delta { Content, Reasoning };

class OpenAiApi {
public:
    // split_reasoning: a thinking template's <think> block goes to reasoning_content.
    // lazy_tool_grammar: with tools and tool_choice auto, a call the answer opens is held to
    // the call format and the functions' parameter schemas (llama.cpp's lazy grammars).
    OpenAiApi(const text::Tokenizer& tokenizer, const text::ChatTemplate& chat_template, std::string model_id,
              int32_t n_ctx, bool split_reasoning, bool lazy_tool_grammar = true);

    const std::string& model_id() const { return model_id_; }

    // Throws ApiError (400 bad field, 404 unknown model) for what cannot be served.
    ParsedRequest parse(Endpoint endpoint, std::string_view body) const;
    // llama.cpp's utility endpoints (POST, JSON in and out):
    //   /apply-template: a chat request's prompt text, {"prompt": ...};
    //   /tokenize: {"content", "add_special" (false), "parse_special" (true), "with_pieces"
    //   (false)} -> {"tokens": [id, ...] or [{"id", "piece"}, ...]} (a piece that is not
    //   UTF-8 as its bytes);
    //   /detokenize: {"tokens": [id, ...]} -> {"content": ...}.
    json apply_template(std::string_view body) const;
    json tokenize(std::string_view body) const;
    json detokenize(std::string_view body) const;

    json models() const;
    // GET /v1/models/{id}: the model object, or ApiError 404 for another id.
    json model(const std::string& id) const;

    // The sampler plugin refused a request's sampling parameters: a 400 naming the field
    // when the plugin's message names its command-line flag (--top-p: top_p).
    static ApiError sampling_refused(const std::string& message);

    // A whole response (stream: false); `reasoning`, when not empty, is the chat
    // message's reasoning_content, and `calls` its tool_calls.
    json response(Endpoint endpoint, const std::string& id, const std::string& text, const std::string& reasoning,
                  const std::vector<ParsedToolCall>& calls, const std::string& finish_reason, const Usage& usage) const;
    // One chunk of a stream: the role first (chat), then text, then the finish reason.
    json chunk(Endpoint endpoint, const std::string& id, const std::string* text, const std::string* finish_reason,
               bool with_role, bool include_usage, Delta delta = Delta::Content) const;
    // choices[0].logprobs of a response or chunk: the chat API's {"content": [...]}, or the
    // completions API's columns, whose text_offset (bytes into the completion) continues
    // from `text_offset` across a stream's chunks.
    json logprobs(Endpoint endpoint, const std::vector<TokenLogprob>& tokens, int64_t& text_offset) const;
    // A chat stream's tool calls, all in one chunk (they are read when the answer ends).
    json tool_calls_chunk(const std::string& id, const std::vector<ParsedToolCall>& calls, bool include_usage) const;
    // The last chunk when stream_options.include_usage: no choices, the usage.
    json usage_chunk(Endpoint endpoint, const std::string& id, const Usage& usage) const;
    // llama.cpp's `timings` of a response (and of a stream's chunk with the finish reason):
    // prompt_n/ms and predicted_n/ms with their rates, and with speculative decoding
    // draft_n and draft_n_accepted.
    static json timings(const Usage& usage);

    static std::string new_id(Endpoint endpoint);
    // JSON text; invalid UTF-8 (which the tokenizer should never make) replaced, not thrown.
    static std::string dump(const json& value);

private:
    json model_object() const;
    ApiError model_not_found(const std::string& id) const;
    // The chat's prompt text, in the model's template; with_tools: tools were given.
    // constrained: a grammar will constrain the answer (output_grammar).
    std::string chat_prompt(const json& body, bool constrained, bool& with_tools) const;
    // What the request constrains the answer to (output_grammar.cpp): a grammar (nullptr:
    // none) and, for a lazy one, the text from which on it applies.
    struct OutputGrammar {
        std::shared_ptr<const text::Grammar> grammar;
        text::GrammarTrigger trigger;  // text empty: the grammar holds from the first byte
        bool from_start() const { return grammar && trigger.text.empty(); }
    };
    OutputGrammar output_grammar(const json& body, Endpoint endpoint) const;
    ToolCallFormat tool_call_format() const;
    // logit_bias: {"token id": bias from -100 to 100}.
    std::vector<LogitBias> logit_bias(const json& body) const;
    std::vector<int32_t> completion_prompt(const json& body) const;

    const text::Tokenizer& tokenizer_;
    const text::ChatTemplate& chat_template_;
    std::string model_id_;
    int32_t n_ctx_;
    bool split_reasoning_;
    bool lazy_tool_grammar_;
    int64_t created_;
};

}  // namespace edgerun::serve
