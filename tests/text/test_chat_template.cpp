// Chat template detection and the API's error paths. The formatting itself is checked
// against jinja2 renderings of the real templates (run_reference.py chat).
#include <doctest/doctest.h>

#include "../check_throws.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/text/chat_template.hpp>

using namespace edgerun;
using namespace edgerun::text;

namespace {

ChatFamily family_of(const std::string& source) { return ChatTemplate::detect(source, "<s>", "</s>").family(); }

}  // namespace

TEST_CASE("families are recognised by distinctive substrings, not by equality") {
    CHECK(family_of("{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n'}}{% endfor %}") == ChatFamily::ChatML);
    CHECK(family_of("... <|im_start|> ... enable_thinking ...") == ChatFamily::Qwen3);
    CHECK(family_of("{{ '<|start_header_id|>' + role + '<|end_header_id|>' }}") == ChatFamily::Llama3);
    CHECK(family_of("{{ bos_token + '[INST] ' }} <<SYS>>") == ChatFamily::Llama2);
    CHECK(family_of("{{'<|user|>\\n'}} {{'<|assistant|>\\n'}} <|end|>") == ChatFamily::Phi3);
    CHECK(family_of("{{ '<start_of_turn>' + role }}") == ChatFamily::Gemma);
    CHECK(family_of("gemma") == ChatFamily::Gemma);  // a family name works as a template too
    CHECK(family_of("{{ '[INST] ' + message['content'] + ' [/INST]' }}") == ChatFamily::Mistral);
    CHECK(family_of("{{'<｜User｜>' + message['content']}}{{'<｜Assistant｜>'}}") == ChatFamily::DeepSeekR1);
    CHECK(family_of("{{ '<|user|>\\n' + message['content'] + eos_token }}{{ '<|assistant|>' }}") == ChatFamily::Zephyr);
}

TEST_CASE("a Mistral template's release is read from how it spells [INST]") {
    const auto name_of = [](const std::string& source) { return ChatTemplate::detect(source, "<s>", "</s>").name(); };
    CHECK(name_of("{{ ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}") == "mistral-v1");
    CHECK(name_of("{{ \"[INST] \" + message[\"content\"] + \"[/INST]\" }}") == "mistral-v3");
    CHECK(name_of("{{ \"[INST]\" + message[\"content\"] + \"[/INST]\" }}") == "mistral-v3-tekken");
    // Mistral 7B's first template has no system prompt: a system message is refused.
    const ChatTemplate pre_v1 = ChatTemplate::detect("{{ '[INST] ' + message['content'] + ' [/INST]' }}", "<s>", "</s>");
    CHECK(pre_v1.format({{"user", "a"}, {"assistant", "b"}, {"user", "c"}}, true) == "<s>[INST] a [/INST]b</s>[INST] c [/INST]");
    CHECK_THROWS_CONTAINING_AS(pre_v1.format({{"system", "s"}, {"user", "u"}}, true), "alternate", Error);
    // By name: the release's own spelling, the system prompt where that release puts it.
    const std::vector<ChatMessage> chat = {{"system", "S"}, {"user", "a"}, {"assistant", " b "}, {"user", "c"}};
    CHECK(ChatTemplate::named("mistral-v1", "<s>", "</s>").format(chat, true) ==
          "<s> [INST] S\n\na [/INST]  b </s> [INST] c [/INST]");
    CHECK(ChatTemplate::named("mistral-v3", "<s>", "</s>").format(chat, true) == "<s>[INST] a[/INST] b</s>[INST] S\n\nc[/INST]");
    CHECK(ChatTemplate::named("mistral-v3-tekken", "<s>", "</s>").format(chat, true) ==
          "<s>[INST]a[/INST] b </s>[INST]S\n\nc[/INST]");
    CHECK_THROWS_CONTAINING_AS(ChatTemplate::named("mistral-v3", "<s>", "</s>").format({{"user", "a"}, {"system", "s"}}, true),
                               "message 2 is 'system'", Error);
}

TEST_CASE("DeepSeek-R1: the generation prompt as the template's revision writes it") {
    const std::string first_revision = "{{bos_token}}{{'<｜User｜>' + message['content']}}{{'<｜Assistant｜>'}}";
    const std::string since_february = "{{'<｜User｜>' + message['content']}}{{'<｜Assistant｜><think>\\n'}}";
    const std::vector<ChatMessage> chat = {{"user", "q"}, {"assistant", "<think>\nr\n</think>\n\na"}, {"user", "q2"}};
    CHECK(ChatTemplate::detect(first_revision, "<B>", "<E>").format(chat, true) ==
          "<B><｜User｜>q<｜Assistant｜>\n\na<｜end▁of▁sentence｜><｜User｜>q2<｜Assistant｜>");
    CHECK(ChatTemplate::detect(since_february, "<B>", "<E>").format(chat, true) ==
          "<B><｜User｜>q<｜Assistant｜>\n\na<｜end▁of▁sentence｜><｜User｜>q2<｜Assistant｜><think>\n");
    CHECK(ChatTemplate::detect(since_february, "<B>", "<E>").format(chat, false) ==
          "<B><｜User｜>q<｜Assistant｜>\n\na<｜end▁of▁sentence｜><｜User｜>q2");
}

TEST_CASE("an unrecognised template is an error that says so and lists the names") {
    CHECK_THROWS_CONTAINING_AS(family_of("{{ messages }}"), "unrecognised chat template", Error);
    CHECK_THROWS_CONTAINING_AS(family_of(""), "has none", Error);
    CHECK_THROWS_CONTAINING_AS(family_of("<|im_start|><|im_sep|>"), "--chat-template", Error);
    CHECK_THROWS_CONTAINING_AS(family_of("[SYSTEM_PROMPT]{{ system }}[/SYSTEM_PROMPT][INST]"), "Mistral's v7", Error);
    // Falcon 3's turns look like Zephyr's but do not end with EOS.
    CHECK_THROWS_CONTAINING_AS(family_of("{{ '<|user|>\\n' + message['content'] + '\\n' }}{{ '<|assistant|>\\n' }}"),
                               "unrecognised", Error);
    const std::vector<std::string> names = {"chatml", "qwen3", "llama3", "llama2", "mistral-v1", "mistral-v3",
                                            "mistral-v3-tekken", "phi3", "gemma", "zephyr", "deepseek-r1"};
    CHECK_THROWS_CONTAINING_AS(ChatTemplate::named("vicuna", "", ""),
                               "unknown chat template 'vicuna' (supported: chatml, qwen3, llama3, llama2, mistral-v1, "
                               "mistral-v3, mistral-v3-tekken, phi3, gemma, zephyr, deepseek-r1)",
                               Error);
    CHECK(ChatTemplate::names() == names);
}

TEST_CASE("a ChatML template's own default system prompt is used when the chat has none") {
    const std::string smollm =
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
        "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}";
    const ChatTemplate t = ChatTemplate::detect(smollm, "", "");
    CHECK(t.default_system() == "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    CHECK(t.format({{"user", "Hi"}}, true) ==
          "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    CHECK(t.format({{"system", "S"}, {"user", "Hi"}}, false) == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    // A named family has no template text to take a default from.
    CHECK(ChatTemplate::named("chatml", "", "").format({{"user", "Hi"}}, false) == "<|im_start|>user\nHi<|im_end|>\n");
}

TEST_CASE("Qwen3 thinking off puts an empty think block in the generation prompt") {
    const ChatTemplate t = ChatTemplate::named("qwen3", "", "<|im_end|>");
    ChatOptions options;
    options.enable_thinking = false;
    CHECK(t.format({{"user", "Hi"}}, options) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    options.enable_thinking = true;
    CHECK(t.format({{"user", "Hi"}}, options) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("conversations a template refuses are errors") {
    CHECK_THROWS_CONTAINING_AS(ChatTemplate::named("chatml", "", "").format({}, true), "at least one message",
                               Error);
    CHECK_THROWS_CONTAINING_AS(ChatTemplate::named("llama2", "<s>", "</s>").format({{"user", "a"}, {"user", "b"}}, true),
                               "alternate user/assistant", Error);
    CHECK_THROWS_CONTAINING_AS(ChatTemplate::named("gemma", "<bos>", "").format({{"assistant", "a"}}, true),
                               "alternate", Error);
    const ChatTemplate gemma2 = ChatTemplate::detect("{{ bos_token }}<start_of_turn>", "<bos>", "<eos>");
    CHECK_THROWS_CONTAINING_AS(gemma2.format({{"system", "s"}, {"user", "u"}}, true), "system role", Error);
}

TEST_CASE("tools and calls go only to templates that render them") {
    ChatOptions options;
    options.tools = {R"({"type": "function", "function": {"name": "f"}})"};
    CHECK_THROWS_CONTAINING_AS(ChatTemplate::named("llama3", "<s>", "</s>").format({{"user", "x"}}, options),
                               "does not take tools", Error);
    ChatMessage call("assistant", "");
    call.tool_calls = {{"f", "{}"}};
    CHECK_THROWS_CONTAINING_AS(ChatTemplate::named("chatml", "", "").format({{"user", "x"}, call}, true),
                               "does not take tools", Error);
    CHECK(ChatTemplate::named("qwen3", "", "").calls_tools());
    CHECK_FALSE(ChatTemplate::named("chatml", "", "").calls_tools());  // ChatML by name: no Qwen2.5 tools block
    CHECK(ChatTemplate::detect("<|im_start|>{{ tools }}<tool_call>", "", "").calls_tools());
    CHECK(ChatTemplate::named("qwen3", "", "").format({{"user", "x"}, call}, false) ==
          "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"f\", "
          "\"arguments\": {}}\n"
          "</tool_call><|im_end|>\n");
}
