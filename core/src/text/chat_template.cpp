#include <edgerun/text/chat_template.hpp>

#include <edgerun/host_api.hpp>
#include <edgerun/text/json_text.hpp>
#include <edgerun/text/tokenizer.hpp>
#include <edgerun/text/unicode.hpp>

#include <algorithm>
#include <ctime>

namespace edgerun::text {

namespace {

struct FamilyName {
    ChatFamily family;
    const char* name;
};
constexpr FamilyName kFamilies[] = {
    {ChatFamily::ChatML, "chatml"},         {ChatFamily::Qwen3, "qwen3"},
    {ChatFamily::Llama3, "llama3"},         {ChatFamily::Llama2, "llama2"},
    {ChatFamily::Mistral, "mistral-v1"},    {ChatFamily::Mistral, "mistral-v3"},
    {ChatFamily::Mistral, "mistral-v3-tekken"}, {ChatFamily::Phi3, "phi3"},
    {ChatFamily::Gemma, "gemma"},           {ChatFamily::Zephyr, "zephyr"},
    {ChatFamily::DeepSeekR1, "deepseek-r1"}};

// The Mistral releases' spellings: v1 (7B v0.2), v3 (7B v0.3, Large 2407), v3-tekken
// (Nemo, whose tokenizer has no space before its control tokens).
MistralStyle mistral_style(std::string_view name) {
    using System = MistralStyle::System;
    if (name == "mistral-v1") return {" [INST] ", " [/INST]", " ", false, System::FirstUserTurn};
    if (name == "mistral-v3-tekken") return {"[INST]", "[/INST]", "", false, System::LastUserTurn};
    return {"[INST] ", "[/INST]", " ", true, System::LastUserTurn};
}
// Mistral 7B's first template (before v1): no system prompt at all.
constexpr MistralStyle kMistralPreV1{"[INST] ", " [/INST]", "", false, MistralStyle::System::Refused};

[[noreturn]] void unrecognised(const std::string& why) {
    throw Error("unrecognised chat template" + why + " (supported families: " + ChatTemplate::name_list() +
                    "; choose one with --chat-template NAME)",
                ER_E_UNSUPPORTED);
}

// Python's str.isspace(), which Jinja's trim filter and str.strip() use.
bool is_python_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

// Jinja's `trim` / Python's str.strip(): whitespace off both ends.
std::string trim(const std::string& s) {
    const std::vector<uint32_t> cps = decode_utf8(s);
    size_t b = 0, e = cps.size();
    while (b < e && is_python_space(cps[b])) ++b;
    while (e > b && is_python_space(cps[e - 1])) --e;
    if (b == 0 && e == cps.size()) return s;  // keeps any malformed bytes as they were
    return encode_utf8(std::vector<uint32_t>(cps.begin() + long(b), cps.begin() + long(e)));
}

std::string strip_newlines_left(const std::string& s) {
    const size_t b = s.find_first_not_of('\n');
    return b == std::string::npos ? std::string() : s.substr(b);
}
std::string strip_newlines_right(const std::string& s) {
    const size_t e = s.find_last_not_of('\n');
    return e == std::string::npos ? std::string() : s.substr(0, e + 1);
}

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, std::string_view p) {
    return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// The escapes of a Jinja string literal.
std::string jinja_unescape(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out.push_back(s[i]);
            continue;
        }
        const char c = s[++i];
        switch (c) {
            case 'n': out.push_back('\n'); break;
            case 't': out.push_back('\t'); break;
            case 'r': out.push_back('\r'); break;
            case '\\': case '\'': case '"': out.push_back(c); break;
            default: out.push_back('\\'), out.push_back(c);
        }
    }
    return out;
}

// A ChatML template's fallback system prompt: a string literal that writes a whole
// system turn, "<|im_start|>system\n...<|im_end|>", with text of its own.
std::string default_system_prompt(std::string_view src) {
    const std::string_view marker = "<|im_start|>system";
    for (size_t pos = src.find(marker); pos != std::string_view::npos; pos = src.find(marker, pos + 1)) {
        size_t p = pos + marker.size();
        if (src.substr(p, 1) == "\n") p += 1;
        else if (src.substr(p, 2) == "\\n") p += 2;
        else continue;
        const size_t end = src.find("<|im_end|>", p);
        if (end == std::string_view::npos) continue;
        const std::string_view text = src.substr(p, end - p);
        bool literal_continues = !text.empty();
        for (size_t i = 0; i < text.size() && literal_continues; ++i) {
            if (text[i] == '\\') ++i;
            else if (text[i] == '\'' || text[i] == '"') literal_continues = false;
        }
        if (literal_continues) return jinja_unescape(text);
    }
    return {};
}

std::string today() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[32];
    std::strftime(buf, sizeof buf, "%d %b %Y", &local);
    return buf;
}

// The system turn's tail that Qwen's templates write when tools are given: the functions'
// signatures and how to call them.
std::string qwen_tools_block(const std::vector<std::string>& tools) {
    std::string out =
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
        "function signatures within <tools></tools> XML tags:\n<tools>";
    for (const std::string& tool : tools) out += "\n" + tool;
    return out +
           "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
           "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
           "<args-json-object>}\n</tool_call><|im_end|>\n";
}

std::string qwen_tool_call(const ToolCall& call) {
    return "<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + call.arguments + "}\n</tool_call>";
}

// Tool results: consecutive ones in one user turn.
std::string qwen_tool_response(const std::vector<ChatMessage>& messages, size_t i) {
    std::string out;
    if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
    out += "\n<tool_response>\n" + messages[i].content + "\n</tool_response>";
    if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    return out;
}

void require_messages(const std::vector<ChatMessage>& messages) {
    if (messages.empty()) throw Error("a chat needs at least one message", ER_E_INVALID_ARGUMENT);
}

// Templates that require user/assistant/user/... (after an optional system prompt).
void require_alternation(const std::vector<ChatMessage>& messages, size_t first) {
    for (size_t i = first; i < messages.size(); ++i)
        if ((messages[i].role == "user") != ((i - first) % 2 == 0))
            throw Error("the chat template requires roles to alternate user/assistant/user/assistant/... (message " +
                            std::to_string(i + 1) + " is '" + messages[i].role + "')",
                        ER_E_INVALID_ARGUMENT);
}

}  // namespace

ChatTemplate::ChatTemplate(ChatFamily family, std::string name, std::string bos, std::string eos)
    : family_(family), name_(std::move(name)), bos_(std::move(bos)), eos_(std::move(eos)) {
    if (family == ChatFamily::Mistral) mistral_ = mistral_style(name_);
}

std::vector<std::string> ChatTemplate::names() {
    std::vector<std::string> out;
    for (const auto& f : kFamilies) out.emplace_back(f.name);
    return out;
}

std::string ChatTemplate::name_list() {
    std::string s;
    for (const auto& f : kFamilies) s += (s.empty() ? "" : ", ") + std::string(f.name);
    return s;
}

ChatTemplate ChatTemplate::named(std::string_view name, std::string bos_text, std::string eos_text) {
    for (const auto& f : kFamilies)
        if (name == f.name) return ChatTemplate(f.family, f.name, std::move(bos_text), std::move(eos_text));
    throw Error("unknown chat template '" + std::string(name) + "' (supported: " + ChatTemplate::name_list() + ")",
                ER_E_INVALID_ARGUMENT);
}

ChatTemplate ChatTemplate::detect(std::string_view source, std::string bos_text, std::string eos_text) {
    const std::string src(source);
    for (const auto& f : kFamilies)
        if (src == f.name) return named(src, std::move(bos_text), std::move(eos_text));
    if (src.empty()) unrecognised(": the model file has none");
    auto has = [&](std::string_view s) { return src.find(s) != std::string::npos; };
    auto family = [&](std::string_view name) { return named(name, std::move(bos_text), std::move(eos_text)); };

    if (has("<|im_start|>")) {
        if (has("<|im_sep|>")) unrecognised(" (Phi-4 style <|im_sep|> turns)");
        if (has("<end_of_utterance>")) unrecognised(" (SmolVLM style)");
        if (has("enable_thinking")) return family("qwen3");
        if (has("<think>")) unrecognised(" (a ChatML reasoning variant other than Qwen3's)");
        ChatTemplate t = family("chatml");
        t.default_system_ = default_system_prompt(src);
        t.chatml_tools_ = has("<tool_call>");
        return t;
    }
    if (has("[INST]")) {
        if (has("<<SYS>>")) return family("llama2");
        // Mistral's v7 (Large 2411, Small 3): [SYSTEM_PROMPT] turns, Small 3's a dated default.
        if (has("[SYSTEM_PROMPT]")) unrecognised(" (Mistral's v7 [SYSTEM_PROMPT] format is not supported)");
        if (has(" [/INST]")) {
            ChatTemplate t = family("mistral-v1");
            if (!has("system_message")) t.mistral_ = kMistralPreV1;
            return t;
        }
        return family(has("[INST] ") ? "mistral-v3" : "mistral-v3-tekken");
    }
    if (has("<｜User｜>") && has("<｜Assistant｜>")) {
        ChatTemplate t = family("deepseek-r1");
        t.deepseek_think_prompt_ = has("<｜Assistant｜><think>");
        t.deepseek_reads_thinking_ = has("enable_thinking");
        return t;
    }
    // Zephyr's turns end with EOS; Falcon 3's, which look alike otherwise, do not.
    if (has("'<|user|>\\n' + message['content'] + eos_token")) return family("zephyr");
    if (has("<|assistant|>") && has("<|end|>")) {
        ChatTemplate t = family("phi3");
        t.phi3_skip_empty_system_ = has("'system' and message['content']");
        t.phi3_eos_without_prompt_ = has("eos_token");
        return t;
    }
    if (has("<start_of_turn>")) {
        ChatTemplate t = family("gemma");
        t.gemma_system_in_first_turn_ = has("first_user_prefix");
        return t;
    }
    if (has("<|start_header_id|>") && has("<|end_header_id|>")) {
        ChatTemplate t = family("llama3");
        t.llama3_date_header_ = has("Cutting Knowledge Date");
        t.llama3_date_is_today_ = has("strftime_now");
        t.llama3_tools_ = has("tools_in_user_message");
        return t;
    }
    unrecognised("");
}

std::string ChatTemplate::format(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    require_messages(messages);
    if (!calls_tools()) {
        const bool calls = std::any_of(messages.begin(), messages.end(), [](const ChatMessage& m) { return !m.tool_calls.empty(); });
        if (!options.tools.empty() || calls)
            throw Error("the " + name_ + " chat template in edgerun does not take tools (Qwen3's, Qwen2.5's and "
                        "Llama 3.1's and later do)",
                        ER_E_UNSUPPORTED);
    }
    switch (family_) {
        case ChatFamily::ChatML: return format_chatml(messages, options);
        case ChatFamily::Qwen3: return format_qwen3(messages, options);
        case ChatFamily::Llama3: return format_llama3(messages, options);
        case ChatFamily::Llama2: return format_llama2(messages);
        case ChatFamily::Mistral: return format_mistral(messages);
        case ChatFamily::Phi3: return format_phi3(messages, options);
        case ChatFamily::Gemma: return format_gemma(messages, options);
        case ChatFamily::Zephyr: return format_zephyr(messages, options);
        case ChatFamily::DeepSeekR1: return format_deepseek_r1(messages, options);
    }
    return {};
}

// ChatML; Qwen2.5's adds tools to the system turn, and calls and their results as turns.
std::string ChatTemplate::format_chatml(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    std::string out;
    const bool has_system = messages.front().role == "system";
    if (!options.tools.empty())
        out += "<|im_start|>system\n" + (has_system ? messages.front().content : default_system_) + "\n\n" +
               qwen_tools_block(options.tools);
    else if (!default_system_.empty() && !has_system)
        out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
    for (size_t i = options.tools.empty() || !has_system ? 0 : 1; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if (chatml_tools_ && m.role == "assistant" && !m.tool_calls.empty()) {
            out += "<|im_start|>assistant";
            if (!m.content.empty()) out.append("\n").append(m.content);
            for (const ToolCall& call : m.tool_calls) out.append("\n").append(qwen_tool_call(call));
            out += "<|im_end|>\n";
        } else if (chatml_tools_ && m.role == "tool") {
            out += qwen_tool_response(messages, i);
        } else {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        }
    }
    if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

// Qwen3: ChatML whose assistant turns after the last real user query carry their
// reasoning in a <think> block, and whose tool results go back as user turns.
std::string ChatTemplate::format_qwen3(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    std::string out;
    const bool has_system = messages.front().role == "system";
    if (!options.tools.empty())
        out += "<|im_start|>system\n" + (has_system ? messages.front().content + "\n\n" : "") +
               qwen_tools_block(options.tools);
    else if (has_system)
        out += "<|im_start|>system\n" + messages.front().content + "<|im_end|>\n";

    size_t last_query = messages.size() - 1;
    for (size_t i = messages.size(); i-- > 0;) {
        const auto& m = messages[i];
        if (m.role == "user" && !(starts_with(m.content, "<tool_response>") && ends_with(m.content, "</tool_response>"))) {
            last_query = i;
            break;
        }
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        const bool first = i == 0, last = i + 1 == messages.size();
        if (m.role == "user" || (m.role == "system" && !first)) {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            std::string content = m.content, reasoning;
            const size_t close = m.content.find("</think>");
            if (m.reasoning_content) {
                reasoning = *m.reasoning_content;
            } else if (close != std::string::npos) {
                content = strip_newlines_left(m.content.substr(m.content.rfind("</think>") + 8));
                std::string before = strip_newlines_right(m.content.substr(0, close));
                const size_t open = before.rfind("<think>");
                reasoning = strip_newlines_left(open == std::string::npos ? before : before.substr(open + 7));
            }
            if (i > last_query && (last || !reasoning.empty()))
                out += "<|im_start|>" + m.role + "\n<think>\n" + strip_newlines_right(strip_newlines_left(reasoning)) +
                       "\n</think>\n\n" + strip_newlines_left(content);
            else
                out += "<|im_start|>" + m.role + "\n" + content;
            for (size_t c = 0; c < m.tool_calls.size(); ++c)
                out.append(c > 0 || !content.empty() ? "\n" : "").append(qwen_tool_call(m.tool_calls[c]));
            out += "<|im_end|>\n";
        } else if (m.role == "tool") {
            out += qwen_tool_response(messages, i);
        }
    }
    if (options.add_generation_prompt) {
        out += "<|im_start|>assistant\n";
        if (options.enable_thinking == false) out += "<think>\n\n</think>\n\n";
    }
    return out;
}

std::string ChatTemplate::format_llama3(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    std::string out = bos_;
    size_t first = 0;
    if (llama3_date_header_) {
        std::string system;
        if (messages.front().role == "system") {
            system = trim(messages.front().content);
            first = 1;
        }
        const std::string date =
            !options.date_string.empty() ? options.date_string : llama3_date_is_today_ ? today() : "26 Jul 2024";
        const bool tools = !options.tools.empty();
        out += "<|start_header_id|>system<|end_header_id|>\n\n" + std::string(tools ? "Environment: ipython\n" : "") +
               "Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n" + system + "<|eot_id|>";
        if (tools) {  // in the first message after the system prompt, whoever's it is
            if (first == messages.size())
                throw Error("the llama3 chat template puts tools in the first user message, and this chat has none",
                            ER_E_INVALID_ARGUMENT);
            out += "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a "
                   "JSON for a function call with its proper arguments that best answers the given prompt.\n\n"
                   "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its "
                   "value}.Do not use variables.\n\n";
            for (const std::string& tool : options.tools) out += json_indent(tool, 4) + "\n\n";
            out += trim(messages[first++].content) + "<|eot_id|>";
        }
    }
    for (size_t i = first; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if (!m.tool_calls.empty()) {  // calls_tools(): format() refused them otherwise
            if (m.tool_calls.size() != 1)
                throw Error("the llama3 chat template takes one tool call per message (message " + std::to_string(i + 1) +
                                " has " + std::to_string(m.tool_calls.size()) + ")",
                            ER_E_INVALID_ARGUMENT);
            out += "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"" + m.tool_calls[0].name +
                   "\", \"parameters\": " + m.tool_calls[0].arguments + "}<|eot_id|>";
        } else if (m.role == "ipython" || m.role == "tool") {
            if (!llama3_tools_)
                throw Error("this llama3 chat template does not render tool messages (Llama 3.1's and later do)",
                            ER_E_UNSUPPORTED);
            // A string is iterable to Jinja, so the template writes it through tojson.
            out += "<|start_header_id|>ipython<|end_header_id|>\n\n" + json_quote(m.content) + "<|eot_id|>";
        } else {
            out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
        }
    }
    if (options.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

// Llama 2 chat: every user turn opens with BOS and [INST]; the system prompt goes inside
// the first one between <<SYS>> markers; the generation prompt is implicit.
std::string ChatTemplate::format_llama2(const std::vector<ChatMessage>& messages) const {
    const bool has_system = messages.front().role == "system";
    const size_t first = has_system ? 1 : 0;
    require_alternation(messages, first);
    std::string out;
    for (size_t i = first; i < messages.size(); ++i) {
        const auto& m = messages[i];
        std::string content = m.content;
        if (i == first && has_system)
            content = std::string("<<SYS>>\n").append(messages.front().content).append("\n<</SYS>>\n\n").append(content);
        if (m.role == "user") out.append(bos_).append("[INST] ").append(trim(content)).append(" [/INST]");
        else if (m.role == "assistant") out.append(" ").append(trim(content)).append(" ").append(eos_);
    }
    return out;
}

// Mistral: [INST] turns with no generation prompt (a prompt ends with [/INST]); the
// system prompt is folded into one user turn (the last since v3, as mistral-common does).
std::string ChatTemplate::format_mistral(const std::vector<ChatMessage>& messages) const {
    using System = MistralStyle::System;
    const bool has_system = messages.front().role == "system" && mistral_.system != System::Refused;
    const size_t first = has_system ? 1 : 0;
    require_alternation(messages, first);
    std::string out = bos_;
    for (size_t i = first; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if (m.role == "user") {
            const bool carries_system =
                has_system && (mistral_.system == System::FirstUserTurn ? i == first : i + 1 == messages.size());
            out.append(mistral_.inst_open)
                .append(carries_system ? messages.front().content + "\n\n" : "")
                .append(m.content)
                .append(mistral_.inst_close);
        } else if (m.role == "assistant") {
            out.append(mistral_.assistant_prefix).append(mistral_.trim_assistant ? trim(m.content) : m.content).append(eos_);
        } else {
            throw Error("the " + name_ + " chat template takes user and assistant messages after an optional first "
                            "system message (message " + std::to_string(i + 1) + " is '" + m.role + "')",
                        ER_E_INVALID_ARGUMENT);
        }
    }
    return out;
}

std::string ChatTemplate::format_phi3(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    std::string out;
    for (const auto& m : messages) {
        if (m.role == "system" && (!m.content.empty() || !phi3_skip_empty_system_))
            out += "<|system|>\n" + m.content + "<|end|>\n";
        else if (m.role == "user") out += "<|user|>\n" + m.content + "<|end|>\n";
        else if (m.role == "assistant") out += "<|assistant|>\n" + m.content + "<|end|>\n";
    }
    if (options.add_generation_prompt) out += "<|assistant|>\n";
    else if (phi3_eos_without_prompt_) out += eos_;
    return out;
}

// Gemma: turns of `user` and `model`; Gemma 3 puts the system prompt at the head of the
// first user turn, Gemma 2 has no system prompt at all.
std::string ChatTemplate::format_gemma(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    std::string prefix;
    size_t first = 0;
    if (messages.front().role == "system") {
        if (!gemma_system_in_first_turn_) throw Error("this Gemma chat template does not support a system role", ER_E_INVALID_ARGUMENT);
        prefix = messages.front().content + "\n\n";
        first = 1;
    }
    require_alternation(messages, first);
    std::string out = bos_;
    for (size_t i = first; i < messages.size(); ++i) {
        const auto& m = messages[i];
        out += "<start_of_turn>" + (m.role == "assistant" ? std::string("model") : m.role) + "\n" +
               (i == first ? prefix : std::string()) + trim(m.content) + "<end_of_turn>\n";
    }
    if (options.add_generation_prompt) out += "<start_of_turn>model\n";
    return out;
}

// Zephyr (TinyLlama's chat models): every turn ends with EOS and a newline.
std::string ChatTemplate::format_zephyr(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    std::string out;
    for (const auto& m : messages)
        if (m.role == "system" || m.role == "user" || m.role == "assistant")
            out += "<|" + m.role + "|>\n" + m.content + eos_ + "\n";
    if (options.add_generation_prompt) out += "<|assistant|>\n";
    return out;
}

// DeepSeek-R1 (and its Qwen and Llama distillations): the last system message first,
// untagged; earlier answers lose their reasoning (all before the last </think>).
std::string ChatTemplate::format_deepseek_r1(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    std::string system;
    for (const auto& m : messages)
        if (m.role == "system") system = m.content;
    std::string out = bos_ + system;
    for (const auto& m : messages) {
        if (m.role == "user") {
            out += "<｜User｜>" + m.content;
        } else if (m.role == "assistant") {
            const size_t close = m.content.rfind("</think>");
            out += "<｜Assistant｜>" + (close == std::string::npos ? m.content : m.content.substr(close + 8)) +
                   "<｜end▁of▁sentence｜>";
        } else if (m.role == "tool") {
            throw Error("the deepseek-r1 chat format in edgerun does not render tool messages", ER_E_UNSUPPORTED);
        }
    }
    if (options.add_generation_prompt) {
        out += "<｜Assistant｜>";
        if (deepseek_think_prompt_) out += "<think>\n";
        if (deepseek_reads_thinking_ && !options.enable_thinking.value_or(false)) out += "</think>";
    }
    return out;
}

ChatTemplate chat_template_for(const Tokenizer& tokenizer, std::string_view override_name,
                               std::string_view override_source) {
    const std::string bos = tokenizer.valid(tokenizer.bos()) ? tokenizer.token_text(tokenizer.bos()) : "";
    const std::string eos = tokenizer.valid(tokenizer.eos()) ? tokenizer.token_text(tokenizer.eos()) : "";
    if (!override_name.empty()) return ChatTemplate::named(override_name, bos, eos);
    return ChatTemplate::detect(override_source.empty() ? std::string_view(tokenizer.chat_template()) : override_source,
                                bos, eos);
}

std::vector<TokenId> encode_chat_prompt(const Tokenizer& tokenizer, std::string prompt, bool add_special) {
    if (add_special && tokenizer.add_bos() && tokenizer.valid(tokenizer.bos())) {
        const std::string& bos = tokenizer.token_text(tokenizer.bos());
        if (starts_with(prompt, bos)) prompt.erase(0, bos.size());
    }
    if (add_special && tokenizer.add_eos() && tokenizer.valid(tokenizer.eos())) {
        const std::string& eos = tokenizer.token_text(tokenizer.eos());
        if (ends_with(prompt, eos)) prompt.resize(prompt.size() - eos.size());
    }
    return tokenizer.encode(prompt, add_special, /*parse_special=*/true);
}

}  // namespace edgerun::text
