#include "openai_api.hpp"
#include "json_fields.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <optional>
#include <cctype>
#include <chrono>
#include <cmath>
#include <random>

namespace edgerun::serve {

namespace {

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double number(const json& body, const char* name, double fallback, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) throw wrong_type(name, "a number");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw ApiError(400, "'" + std::string(name) + "' must be between " + json(lo).dump() + " and " + json(hi).dump(),
                       name, "invalid_value");
    return x;
}

std::optional<int64_t> integer(const json& body, const char* name) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) throw wrong_type(name, "an integer");
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
        throw ApiError(400, "'" + std::string(name) + "' is out of range", name, "invalid_value");
    return v->get<int64_t>();
}

// A utility endpoint's body.
json object_body(std::string_view text) {
    json body = json::parse(text, nullptr, false);
    if (body.is_discarded() || !body.is_object()) throw ApiError(400, "the body is not a JSON object", "", "invalid_json");
    return body;
}

bool boolean(const json& body, const char* name) {
    const json* v = field(body, name);
    if (!v) return false;
    if (!v->is_boolean()) throw wrong_type(name, "a boolean");
    return v->get<bool>();
}

// Fields the OpenAI API has, that would change what the answer means, and that this
// server does not implement: refused rather than silently ignored.
void refuse_unimplemented(const json& body, Endpoint endpoint) {
    auto refuse = [](const std::string& name, const std::string& why) {
        throw ApiError(400, "'" + name + "' is not supported by this server (" + why + ")", name, "unsupported_parameter");
    };
    if (auto n = integer(body, "n"); n && *n != 1) refuse("n", "one choice per request");
    if (auto n = integer(body, "best_of"); n && *n != 1) refuse("best_of", "one choice per request");
    if (const json* v = field(body, "functions"); v && !v->empty()) refuse("functions", "not implemented");
    if (const json* v = field(body, "function_call"); v && !(v->is_string() && v->get<std::string>() == "none"))
        refuse("function_call", "the tools field is the way to give functions");
    if (endpoint == Endpoint::Completion)
        if (const json* v = field(body, "tools"); v && !v->empty()) refuse("tools", "tools need a chat");
    if (endpoint == Endpoint::Completion) {
        if (const json* v = field(body, "suffix"); v && !(v->is_string() && v->get<std::string>().empty()))
            refuse("suffix", "not implemented");
    }
}

}  // namespace

json ApiError::body() const {
    return json{{"error",
                 {{"message", what()},
                  {"type", type},
                  {"param", param.empty() ? json() : json(param)},
                  {"code", code.empty() ? json() : json(code)}}}};
}

OpenAiApi::OpenAiApi(const text::Tokenizer& tokenizer, const text::ChatTemplate& chat_template, std::string model_id,
                     int32_t n_ctx, bool split_reasoning, bool lazy_tool_grammar)
    : tokenizer_(tokenizer), chat_template_(chat_template), model_id_(std::move(model_id)), n_ctx_(n_ctx),
      split_reasoning_(split_reasoning), lazy_tool_grammar_(lazy_tool_grammar), created_(unix_seconds()) {}

std::string OpenAiApi::dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string OpenAiApi::new_id(Endpoint endpoint) {
    static std::atomic<uint64_t> counter{0};
    static const uint64_t salt = std::random_device{}();
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(salt ^ (++counter * 0x9E3779B97F4A7C15ull)));
    return (endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-") + std::string(hex);
}

json OpenAiApi::model_object() const {
    return json{{"id", model_id_}, {"object", "model"}, {"created", created_}, {"owned_by", "edgerun"}};
}

json OpenAiApi::models() const { return json{{"object", "list"}, {"data", json::array({model_object()})}}; }

json OpenAiApi::model(const std::string& id) const {
    if (id != model_id_) throw model_not_found(id);
    return model_object();
}

ApiError OpenAiApi::model_not_found(const std::string& id) const {
    return ApiError(404, "the model '" + id + "' does not exist (this server has '" + model_id_ + "')", "model",
                    "model_not_found");
}

ApiError OpenAiApi::sampling_refused(const std::string& message) {
    static constexpr std::pair<std::string_view, const char*> kFlagToField[] = {
        {"--temp", "temperature"}, {"--top-k", "top_k"}, {"--top-p", "top_p"}, {"--min-p", "min_p"},
        {"--presence-penalty", "presence_penalty"}, {"--frequency-penalty", "frequency_penalty"}, {"--seed", "seed"}};
    std::string text = message;
    if (text.rfind("creating sampler: ", 0) == 0) text.erase(0, 18);
    for (const auto& [flag, name] : kFlagToField) {
        const size_t at = text.find(flag);
        const size_t end = at + flag.size();
        if (at == std::string::npos || (end < text.size() && (std::isalnum(uint8_t(text[end])) || text[end] == '-')))
            continue;  // absent, or the start of a longer flag
        text.replace(at, flag.size(), "'" + std::string(name) + "'");
        return ApiError(400, text, name, "invalid_value");
    }
    return ApiError(400, "the sampling parameters were refused: " + text, "", "invalid_value");
}

namespace {

// A request's text content: a string, or an array of text parts.
std::string message_content(const json* c, const std::string& where) {
    if (c->is_string()) return c->get<std::string>();
    std::string content;
    for (const json& part : *c) {
        if (!part.is_object() || part.value("type", json()) != json("text") || !part.contains("text") ||
            !part["text"].is_string())
            throw ApiError(400, where + ".content: only text parts are supported", where + ".content", "invalid_value");
        content += part["text"].get<std::string>();
    }
    return content;
}

// An assistant message's earlier calls, their arguments as the template's tojson writes them.
std::vector<text::ToolCall> message_tool_calls(const json& calls, const std::string& where) {
    if (!calls.is_array()) throw wrong_type(where, "an array");
    std::vector<text::ToolCall> out;
    for (size_t i = 0; i < calls.size(); ++i) {
        const std::string at = where + "[" + std::to_string(i) + "].function";
        const json* function = calls[i].is_object() ? field(calls[i], "function") : nullptr;
        if (!function || !function->is_object()) throw wrong_type(at, "an object");
        const json* name = field(*function, "name");
        if (!name || !name->is_string()) throw wrong_type(at + ".name", "a string");
        const json* arguments = field(*function, "arguments");
        json parsed = json::object();
        if (arguments && arguments->is_string()) {  // the API's JSON text
            parsed = json::parse(arguments->get<std::string>(), nullptr, false);
            if (parsed.is_discarded() || !parsed.is_object())
                throw ApiError(400, at + ".arguments is not a JSON object", at + ".arguments", "invalid_value");
        } else if (arguments && arguments->is_object()) {
            parsed = *arguments;
        } else if (arguments) {
            throw wrong_type(at + ".arguments", "a string of JSON");
        }
        out.push_back({name->get<std::string>(), template_json(parsed)});
    }
    return out;
}

}  // namespace

std::string OpenAiApi::chat_prompt(const json& body, bool constrained, bool& with_tools) const {
    const json* messages = field(body, "messages");
    if (!messages) throw ApiError(400, "'messages' is required", "messages", "missing_required_parameter");
    if (!messages->is_array()) throw wrong_type("messages", "an array");
    if (messages->empty()) throw ApiError(400, "'messages' must not be empty", "messages", "invalid_value");
    std::vector<text::ChatMessage> chat;
    for (size_t i = 0; i < messages->size(); ++i) {
        const json& m = (*messages)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw wrong_type(where, "an object");
        const json* role = field(m, "role");
        if (!role || !role->is_string()) throw wrong_type(where + ".role", "a string");
        std::string r = role->get<std::string>();
        if (r == "developer") r = "system";  // the newer name of the system role
        if (r != "system" && r != "user" && r != "assistant" && r != "tool")
            throw ApiError(400, where + ".role: '" + r + "' is not system, developer, user, assistant or tool",
                           where + ".role", "invalid_value");
        const json* c = field(m, "content");
        if (c ? !c->is_string() && !c->is_array() : r != "assistant")
            throw wrong_type(where + ".content", "a string or an array of text parts");
        text::ChatMessage message(r, c ? message_content(c, where) : std::string());
        if (r == "assistant") {
            if (const json* calls = field(m, "tool_calls")) message.tool_calls = message_tool_calls(*calls, where + ".tool_calls");
            if (const json* reasoning = field(m, "reasoning_content")) {
                if (!reasoning->is_string()) throw wrong_type(where + ".reasoning_content", "a string");
                message.reasoning_content = reasoning->get<std::string>();
            }
        }
        chat.push_back(std::move(message));
    }
    text::ChatOptions options;  // with the generation prompt
    // A grammar leaves the model no room to think: a thinking template is told so (Qwen3
    // closes an empty <think> block), unless the request says otherwise.
    if (constrained) options.enable_thinking = false;
    const json* tool_choice = field(body, "tool_choice");
    const json* tools = field(body, "tools");
    if (tools && !(tool_choice && *tool_choice == json("none"))) {
        if (!tools->is_array()) throw wrong_type("tools", "an array");
        for (size_t i = 0; i < tools->size(); ++i) {
            const json& tool = (*tools)[i];
            const std::string where = "tools[" + std::to_string(i) + "]";
            const json* function = tool.is_object() ? field(tool, "function") : nullptr;
            if (!function || !function->is_object() || tool.value("type", json("function")) != json("function"))
                throw ApiError(400, where + " must be {\"type\": \"function\", \"function\": {...}}", where, "invalid_value");
            if (const json* name = field(*function, "name"); !name || !name->is_string())
                throw wrong_type(where + ".function.name", "a string");
            options.tools.push_back(template_json(tool));
        }
        if (!options.tools.empty() && !chat_template_.calls_tools())
            throw ApiError(400, "'tools': the model's chat template (" + chat_template_.name() +
                                    ") does not take tools in this server (Qwen3's, Qwen2.5's and Llama "
                                    "3.1's and later do)",
                           "tools", "unsupported_parameter");
    }
    with_tools = !options.tools.empty();
    if (const json* kwargs = field(body, "chat_template_kwargs")) {  // vLLM's and llama.cpp's name
        if (!kwargs->is_object()) throw wrong_type("chat_template_kwargs", "an object");
        if (const json* thinking = field(*kwargs, "enable_thinking")) {
            if (!thinking->is_boolean()) throw wrong_type("chat_template_kwargs.enable_thinking", "a boolean");
            options.enable_thinking = thinking->get<bool>();
        }
    }
    return chat_template_.format(chat, options);
}

std::vector<int32_t> OpenAiApi::completion_prompt(const json& body) const {
    const json* prompt = field(body, "prompt");
    if (!prompt) throw ApiError(400, "'prompt' is required", "prompt", "missing_required_parameter");
    if (prompt->is_string()) return tokenizer_.encode(prompt->get<std::string>(), true, true);
    if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string())
        return tokenizer_.encode((*prompt)[0].get<std::string>(), true, true);
    if (prompt->is_array() && !prompt->empty() && std::all_of(prompt->begin(), prompt->end(), [](const json& t) { return t.is_number_integer(); })) {
        std::vector<int32_t> tokens;
        const int64_t n_vocab = tokenizer_.n_tokens();
        for (const json& t : *prompt) {
            const int64_t id = t.is_number_unsigned() && t.get<uint64_t>() > uint64_t(INT64_MAX) ? -1 : t.get<int64_t>();
            if (id < 0 || id >= n_vocab)
                throw ApiError(400, "'prompt': token " + t.dump() + " is not in the vocabulary", "prompt", "invalid_value");
            tokens.push_back(int32_t(id));
        }
        return tokens;
    }
    if (prompt->is_array() && prompt->size() > 1 && (*prompt)[0].is_string())
        throw ApiError(400, "'prompt': one prompt per request (a batch of prompts is not supported)", "prompt",
                       "unsupported_parameter");
    throw wrong_type("prompt", "a string, or an array of token ids");
}

std::vector<LogitBias> OpenAiApi::logit_bias(const json& body) const {
    const json* biases = field(body, "logit_bias");
    if (!biases) return {};
    if (!biases->is_object()) throw wrong_type("logit_bias", "an object of token ids to biases");
    std::vector<LogitBias> out;
    for (const auto& [key, value] : biases->items()) {
        int64_t id = -1;
        const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (error != std::errc() || end != key.data() + key.size() || id < 0 || id >= tokenizer_.n_tokens())
            throw ApiError(400, "'logit_bias': '" + key + "' is not a token id of this model's vocabulary (0 to " +
                                    std::to_string(tokenizer_.n_tokens() - 1) + ")",
                           "logit_bias", "invalid_value");
        if (!value.is_number() || !(std::fabs(value.get<double>()) <= kMaxLogitBias))
            throw ApiError(400, "'logit_bias': the bias of token " + key + " must be a number from -100 to 100",
                           "logit_bias", "invalid_value");
        out.push_back({int32_t(id), value.get<float>()});
    }
    return out;
}

ParsedRequest OpenAiApi::parse(Endpoint endpoint, std::string_view text) const {
    json body = json::parse(text, nullptr, false);
    if (body.is_discarded()) throw ApiError(400, "the body is not valid JSON", "", "invalid_json");
    if (!body.is_object()) throw ApiError(400, "the body must be a JSON object", "", "invalid_json");

    const json* model = field(body, "model");
    if (!model) throw ApiError(400, "'model' is required", "model", "missing_required_parameter");
    if (!model->is_string()) throw wrong_type("model", "a string");
    if (model->get<std::string>() != model_id_) throw model_not_found(model->get<std::string>());
    refuse_unimplemented(body, endpoint);

    ParsedRequest out;
    out.stream = boolean(body, "stream");
    if (const json* options = field(body, "stream_options")) {
        if (!options->is_object()) throw wrong_type("stream_options", "an object");
        out.include_usage = boolean(*options, "include_usage");
    }

    JobSpec& spec = out.spec;
    const bool echo = endpoint == Endpoint::Completion && boolean(body, "echo");
    std::optional<int64_t> max_tokens = integer(body, "max_tokens");
    if (endpoint == Endpoint::Chat)
        if (auto m = integer(body, "max_completion_tokens")) max_tokens = m;
    const char* max_name = endpoint == Endpoint::Chat && field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    // 0 with echo: the prompt alone, scored (lm-evaluation-harness's loglikelihood requests).
    if (max_tokens && *max_tokens < (echo ? 0 : 1))
        throw ApiError(400, "'" + std::string(max_name) + "' must be at least 1 (0 only with echo)", max_name,
                       "invalid_value");
    if (max_tokens && *max_tokens > n_ctx_)
        throw ApiError(400, "'" + std::string(max_name) + "' (" + std::to_string(*max_tokens) + ") is more than the context of " +
                            std::to_string(n_ctx_) + " tokens", max_name, "invalid_value");
    spec.max_tokens = max_tokens ? int32_t(*max_tokens) : -1;

    if (const json* stop = field(body, "stop")) {
        if (stop->is_string()) {
            spec.stop.push_back(stop->get<std::string>());
        } else if (stop->is_array() && stop->size() <= 16) {
            for (const json& s : *stop) {
                if (!s.is_string()) throw wrong_type("stop", "a string or an array of strings");
                spec.stop.push_back(s.get<std::string>());
            }
        } else {
            throw wrong_type("stop", "a string or an array of at most 16 strings");
        }
    }

    constexpr int64_t kMaxTopLogprobs = 20;
    const auto top_count = [&](const char* name) {
        const std::optional<int64_t> n = integer(body, name);
        if (n && (*n < 0 || *n > kMaxTopLogprobs))
            throw ApiError(400, "'" + std::string(name) + "' must be 0 to " + std::to_string(kMaxTopLogprobs), name,
                           "invalid_value");
        return n;
    };
    if (endpoint == Endpoint::Chat) {
        const bool logprobs = boolean(body, "logprobs");
        const std::optional<int64_t> top = top_count("top_logprobs");
        if (top && *top > 0 && !logprobs)
            throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "top_logprobs", "invalid_value");
        spec.top_logprobs = logprobs ? int32_t(top.value_or(0)) : -1;
    } else if (const std::optional<int64_t> top = top_count("logprobs")) {  // the completions API's count
        spec.top_logprobs = int32_t(*top);
    }

    er_sampler_params& p = spec.sampler;
    p.struct_size = sizeof(er_sampler_params);
    p.temperature = float(number(body, "temperature", 1.0, 0.0, 2.0));
    p.top_p = float(number(body, "top_p", 1.0, 0.0, 1.0));
    p.min_p = float(number(body, "min_p", 0.0, 0.0, 1.0));
    p.presence_penalty = float(number(body, "presence_penalty", 0.0, -2.0, 2.0));
    p.frequency_penalty = float(number(body, "frequency_penalty", 0.0, -2.0, 2.0));
    p.repeat_penalty = 1.0f;
    p.penalty_last_n = n_ctx_;  // as OpenAI's penalties: over the whole text
    if (const std::optional<int64_t> n_max = integer(body, "speculative.n_max")) {
        if (*n_max < 0 || *n_max > 64)
            throw ApiError(400, "'speculative.n_max' must be 0 to 64", "speculative.n_max", "invalid_value");
        spec.draft_max = int32_t(*n_max);
    }
    const std::optional<int64_t> top_k = integer(body, "top_k");
    if (top_k && *top_k < 0) throw ApiError(400, "'top_k' must be >= 0", "top_k", "invalid_value");
    p.top_k = top_k ? int32_t(std::min<int64_t>(*top_k, INT32_MAX)) : 0;
    const std::optional<int64_t> seed = integer(body, "seed");
    p.seed = seed ? uint64_t(*seed) : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();

    spec.logit_bias = logit_bias(body);
    OutputGrammar constraint = output_grammar(body, endpoint);
    const bool from_start = constraint.from_start();
    spec.grammar = std::move(constraint.grammar);
    spec.grammar_trigger = std::move(constraint.trigger);
    if (endpoint == Endpoint::Chat) {
        bool with_tools = false;
        const std::string prompt = chat_prompt(body, from_start, with_tools);
        if (with_tools) out.tool_calls = tool_call_format();
        spec.prompt = text::encode_chat_prompt(tokenizer_, prompt, true);
        // A constrained answer is the grammar's sentence from its first byte: no <think>
        // block comes before it.
        out.split_reasoning = split_reasoning_ && !from_start;
        out.reasoning_open = out.split_reasoning && text::ReasoningSplitter::opens_block(prompt);
        // Reasoning may mention a call's tag without making one: a lazy grammar starts at a
        // trigger outside the <think> block.
        if (!spec.grammar_trigger.text.empty()) {
            spec.grammar_trigger.block_open = text::ReasoningSplitter::kOpen;
            spec.grammar_trigger.block_close = text::ReasoningSplitter::kClose;
            spec.grammar_trigger.starts_in_block = text::ReasoningSplitter::opens_block(prompt);
        }
    } else {
        spec.prompt = completion_prompt(body);
        if (echo) {
            const json* prompt = field(body, "prompt");
            out.echo = prompt->is_string() ? prompt->get<std::string>()
                       : (*prompt)[0].is_string() ? (*prompt)[0].get<std::string>()
                                                  : tokenizer_.decode(spec.prompt);
            spec.prompt_logprobs = spec.top_logprobs >= 0;
        }
    }
    const char* prompt_name = endpoint == Endpoint::Chat ? "messages" : "prompt";
    if (spec.prompt.empty()) throw ApiError(400, "the prompt is empty (no tokens)", prompt_name, "invalid_value");
    if (int64_t(spec.prompt.size()) >= n_ctx_)
        throw ApiError(400, "the prompt is " + std::to_string(spec.prompt.size()) + " tokens; this server's context is " +
                            std::to_string(n_ctx_) + " tokens per request (leave room for at least one to generate)",
                       prompt_name, "context_length_exceeded");
    return out;
}

namespace {

json tool_calls_json(const std::vector<ParsedToolCall>& calls, bool with_index) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        json call{{"id", calls[i].id},
                  {"type", "function"},
                  {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (with_index) call["index"] = i;
        out.push_back(std::move(call));
    }
    return out;
}

}  // namespace

ToolCallFormat OpenAiApi::tool_call_format() const {
    return chat_template_.family() == text::ChatFamily::Llama3 ? ToolCallFormat::JsonReply : ToolCallFormat::TaggedBlocks;
}

json OpenAiApi::apply_template(std::string_view text) const {
    const json body = object_body(text);
    bool with_tools = false;
    return json{{"prompt", chat_prompt(body, output_grammar(body, Endpoint::Chat).from_start(), with_tools)}};
}

json OpenAiApi::tokenize(std::string_view text) const {
    const json body = object_body(text);
    const json* content = field(body, "content");
    if (!content || !content->is_string()) throw wrong_type("content", "a string");
    const std::vector<text::TokenId> ids =
        tokenizer_.encode(content->get<std::string>(), boolean(body, "add_special"),
                          field(body, "parse_special") ? boolean(body, "parse_special") : true);
    const bool with_pieces = boolean(body, "with_pieces");
    json tokens = json::array();
    for (const text::TokenId id : ids) {
        if (!with_pieces) {
            tokens.push_back(id);
            continue;
        }
        const std::string piece = tokenizer_.token_to_piece(id, true);
        json shown = piece;
        try {
            (void)shown.dump();  // throws on bytes that are not UTF-8
        } catch (const json::type_error&) {
            shown = json::array();
            for (const char c : piece) shown.push_back(int(uint8_t(c)));
        }
        tokens.push_back({{"id", id}, {"piece", shown}});
    }
    return json{{"tokens", tokens}};
}

json OpenAiApi::detokenize(std::string_view text) const {
    const json body = object_body(text);
    const json* tokens = field(body, "tokens");
    if (!tokens || !tokens->is_array()) throw wrong_type("tokens", "an array of token ids");
    std::vector<text::TokenId> ids;
    for (const json& t : *tokens) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= int64_t(tokenizer_.n_tokens()))
            throw ApiError(400, "'tokens': " + t.dump() + " is not a token id of this model", "tokens", "invalid_value");
        ids.push_back(text::TokenId(t.get<int64_t>()));
    }
    return json{{"content", tokenizer_.decode(ids, false, true)}};
}

json OpenAiApi::response(Endpoint endpoint, const std::string& id, const std::string& text, const std::string& reasoning,
                         const std::vector<ParsedToolCall>& calls, const std::string& finish_reason,
                         const Usage& usage) const {
    json message{{"role", "assistant"}, {"content", text.empty() && !calls.empty() ? json() : json(text)}};
    if (!reasoning.empty()) message["reasoning_content"] = reasoning;
    if (!calls.empty()) message["tool_calls"] = tool_calls_json(calls, false);
    json choice = endpoint == Endpoint::Chat
                      ? json{{"index", 0}, {"message", message}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}
                      : json{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
    return json{{"id", id},
                {"object", endpoint == Endpoint::Chat ? "chat.completion" : "text_completion"},
                {"created", unix_seconds()},
                {"model", model_id_},
                {"choices", json::array({choice})},
                {"usage",
                 {{"prompt_tokens", usage.prompt_tokens},
                  {"completion_tokens", usage.completion_tokens},
                  {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
                  {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}}},
                {"timings", timings(usage)}};
}

json OpenAiApi::timings(const Usage& usage) {
    const Timings& t = usage.timings;
    const int32_t prompt_n = usage.prompt_tokens - usage.cached_tokens, predicted_n = usage.completion_tokens;
    auto per_token = [](double ms, int32_t n) { return n > 0 ? ms / n : 0.0; };
    auto per_second = [](double ms, int32_t n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
    json out{{"prompt_n", prompt_n},
             {"prompt_ms", t.prompt_ms},
             {"prompt_per_token_ms", per_token(t.prompt_ms, prompt_n)},
             {"prompt_per_second", per_second(t.prompt_ms, prompt_n)},
             {"predicted_n", predicted_n},
             {"predicted_ms", t.predicted_ms},
             {"predicted_per_token_ms", per_token(t.predicted_ms, predicted_n)},
             {"predicted_per_second", per_second(t.predicted_ms, predicted_n)}};
    if (t.drafting) {
        out["draft_n"] = t.draft_tokens;
        out["draft_n_accepted"] = t.draft_accepted;
    }
    return out;
}

json OpenAiApi::chunk(Endpoint endpoint, const std::string& id, const std::string* text,
                      const std::string* finish_reason, bool with_role, bool include_usage, Delta delta_field) const {
    json choice{{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason ? json(*finish_reason) : json()}};
    if (endpoint == Endpoint::Chat) {
        json delta = json::object();
        if (with_role) delta["role"] = "assistant";
        if (text) delta[delta_field == Delta::Reasoning ? "reasoning_content" : "content"] = *text;
        else if (with_role) delta["content"] = "";
        choice["delta"] = delta;
    } else {
        choice["text"] = text ? *text : std::string();
    }
    json out{{"id", id},
             {"object", endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
             {"created", unix_seconds()},
             {"model", model_id_},
             {"choices", json::array({choice})}};
    if (include_usage) out["usage"] = nullptr;
    return out;
}

json OpenAiApi::logprobs(Endpoint endpoint, const std::vector<TokenLogprob>& tokens, int64_t& text_offset) const {
    const auto bytes = [](const std::string& piece) {
        json out = json::array();
        for (const char c : piece) out.push_back(int(uint8_t(c)));
        return out;
    };
    if (endpoint == Endpoint::Chat) {
        json content = json::array();
        for (const TokenLogprob& t : tokens) {
            const std::string piece = tokenizer_.token_to_piece(t.token);
            json top = json::array();
            for (const auto& [id, logprob] : t.top) {
                const std::string alternative = tokenizer_.token_to_piece(id);
                top.push_back({{"token", alternative}, {"logprob", logprob}, {"bytes", bytes(alternative)}});
            }
            content.push_back({{"token", piece}, {"logprob", t.logprob}, {"bytes", bytes(piece)}, {"top_logprobs", top}});
        }
        return json{{"content", content}};
    }
    json pieces = json::array(), values = json::array(), tops = json::array(), offsets = json::array();
    for (const TokenLogprob& t : tokens) {
        const std::string piece = tokenizer_.token_to_piece(t.token);
        json top = json::object();
        for (const auto& [id, logprob] : t.top) top[tokenizer_.token_to_piece(id)] = logprob;
        pieces.push_back(piece);
        values.push_back(std::isnan(t.logprob) ? json() : json(t.logprob));  // the prompt's first token
        tops.push_back(std::isnan(t.logprob) ? json() : top);
        offsets.push_back(text_offset);
        text_offset += int64_t(piece.size());
    }
    return json{{"tokens", pieces}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json OpenAiApi::tool_calls_chunk(const std::string& id, const std::vector<ParsedToolCall>& calls, bool include_usage) const {
    json out = chunk(Endpoint::Chat, id, nullptr, nullptr, false, include_usage);
    out["choices"][0]["delta"] = json{{"tool_calls", tool_calls_json(calls, true)}};
    return out;
}

json OpenAiApi::usage_chunk(Endpoint endpoint, const std::string& id, const Usage& usage) const {
    json out = response(endpoint, id, "", "", {}, "stop", usage);
    out["object"] = endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
    out["choices"] = json::array();
    out.erase("timings");  // the chunk with the finish reason has them
    return out;
}

}  // namespace edgerun::serve
