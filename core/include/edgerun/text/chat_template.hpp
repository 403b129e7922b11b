// Chat templates: turning a conversation into the prompt text a model was trained on.
//
// A model file carries its template as Jinja source (tokenizer.chat_template). edgerun
// does not run Jinja: it recognises the template's family by distinctive substrings (as
// llama.cpp's llm_chat_detect_template does) and formats conversations exactly as that
// family's published templates render them, including the variations a family's
// templates differ by (a default system prompt, Llama 3.1's date header, ...), which
// are read from the source too.
#pragma once

#include <edgerun/text/vocab.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::text {

// A function call an assistant message made: the function's name and its arguments as
// the template's `tojson` writes them (JSON text, Python's json.dumps spacing).
struct ToolCall {
    std::string name;
    std::string arguments;
};

struct ChatMessage {
    ChatMessage() = default;
    ChatMessage(std::string role, std::string content) : role(std::move(role)), content(std::move(content)) {}

    std::string role;  // "system", "user", "assistant", "tool" (Qwen templates)
    std::string content;
    std::vector<ToolCall> tool_calls;               // assistant
    std::optional<std::string> reasoning_content;   // assistant; Qwen3 renders it in place of a <think> block
};

enum class ChatFamily { ChatML, Qwen3, Llama3, Llama2, Mistral, Phi3, Gemma, Zephyr, DeepSeekR1 };

// How a Mistral [INST] template spells its turns: the releases differ in spaces, in
// trimming, and in which user turn carries the system prompt.
struct MistralStyle {
    enum class System { Refused, FirstUserTurn, LastUserTurn };
    const char* inst_open = "[INST] ";
    const char* inst_close = "[/INST]";
    const char* assistant_prefix = " ";
    bool trim_assistant = true;
    System system = System::LastUserTurn;
};

struct ChatOptions {
    bool add_generation_prompt = true;
    // Qwen3's enable_thinking: false puts an empty <think></think> block in the
    // generation prompt; unset or true leaves thinking to the model. DeepSeek-R1
    // templates that read it close the think block unless it is true.
    std::optional<bool> enable_thinking;
    // Llama 3.1+'s "Today Date"; empty: today's date where the template asks for the
    // current date (strftime_now), else the date the template defaults to.
    std::string date_string;
    // The functions the model may call, each as the template's `tojson` writes it
    // (json_text.hpp). Templates that take them: ChatTemplate::calls_tools(); the others
    // refuse them.
    std::vector<std::string> tools;
};

class ChatTemplate {
public:
    // The family of a template's Jinja source. Throws Error("unrecognised chat template
    // ...") naming the families (and the --chat-template override) when none matches.
    // bos/eos are the texts of the vocabulary's BOS/EOS tokens, for templates that
    // write them.
    static ChatTemplate detect(std::string_view source, std::string bos_text, std::string eos_text);
    // A family by name (the --chat-template override); throws Error listing the names.
    static ChatTemplate named(std::string_view name, std::string bos_text, std::string eos_text);
    static std::vector<std::string> names();
    static std::string name_list();  // the names, comma separated, for help and error texts

    ChatFamily family() const { return family_; }
    // Answers may open with a <think> block of reasoning (Qwen3, DeepSeek-R1).
    bool thinks() const { return family_ == ChatFamily::Qwen3 || family_ == ChatFamily::DeepSeekR1; }
    // Takes ChatOptions::tools: Qwen3's and Qwen2.5's (answering with <tool_call> blocks),
    // Llama 3.1's and later (answering with a JSON object).
    bool calls_tools() const { return family_ == ChatFamily::Qwen3 || chatml_tools_ || llama3_tools_; }
    const std::string& name() const { return name_; }
    // ChatML: the system prompt the template supplies when the conversation has none.
    const std::string& default_system() const { return default_system_; }

    // The prompt text, as the family's template renders it. Throws Error for a
    // conversation the template refuses (no messages, roles out of order, a system
    // message where the template has none).
    std::string format(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;
    std::string format(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
        ChatOptions options;
        options.add_generation_prompt = add_generation_prompt;
        return format(messages, options);
    }

private:
    ChatTemplate(ChatFamily family, std::string name, std::string bos, std::string eos);

    std::string format_chatml(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;
    std::string format_qwen3(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;
    std::string format_llama3(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;
    std::string format_llama2(const std::vector<ChatMessage>& messages) const;
    std::string format_mistral(const std::vector<ChatMessage>& messages) const;
    std::string format_phi3(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;
    std::string format_gemma(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;
    std::string format_zephyr(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;
    std::string format_deepseek_r1(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;

    ChatFamily family_;
    std::string name_;
    std::string bos_, eos_;
    // Variations read from the template source.
    std::string default_system_;          // ChatML
    bool chatml_tools_ = false;           // ChatML: Qwen2.5's tools block and <tool_call> turns
    bool llama3_date_header_ = false;     // Llama 3.1+: system header with dates
    bool llama3_date_is_today_ = false;   // Llama 3.2: strftime_now for the date
    bool llama3_tools_ = false;           // Llama 3.1+: tools in the first user message, ipython results
    bool phi3_skip_empty_system_ = true;  // Phi-3.5: `system and message['content']`
    bool phi3_eos_without_prompt_ = true; // Phi-3.5: eos_token when no generation prompt
    bool gemma_system_in_first_turn_ = true;  // Gemma 3 folds the system prompt; Gemma 2 refuses it
    MistralStyle mistral_;
    bool deepseek_think_prompt_ = true;     // R1 since 2025-02: the generation prompt opens <think>
    bool deepseek_reads_thinking_ = false;  // templates that close it unless enable_thinking
};

class Tokenizer;

// The chat template for a tokenizer's model: the named family when `override_name` is
// not empty (the --chat-template option), else the family of `override_source` (a Jinja
// template given instead of the model's) or of the model's own template.
ChatTemplate chat_template_for(const Tokenizer& tokenizer, std::string_view override_name = {},
                               std::string_view override_source = {});

// The tokens of a formatted prompt: the special tokens it spells become tokens, and
// BOS/EOS are added as the model asks (add_special) but not doubled when the template
// already wrote them, as llama.cpp does.
std::vector<TokenId> encode_chat_prompt(const Tokenizer& tokenizer, std::string prompt, bool add_special);

}  // namespace edgerun::text
