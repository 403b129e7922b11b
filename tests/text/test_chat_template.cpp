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
}

TEST_CASE("an unrecognised template is an error that says so and lists the names") {
    CHECK_THROWS_CONTAINING_AS(family_of("{{ messages }}"), "unrecognised chat template", Error);
    CHECK_THROWS_CONTAINING_AS(family_of(""), "has none", Error);
    CHECK_THROWS_CONTAINING_AS(family_of("<|im_start|><|im_sep|>"), "--chat-template", Error);
    CHECK_THROWS_CONTAINING_AS(family_of("[INST] {{ m }} [/INST]"), "Mistral", Error);
    CHECK_THROWS_CONTAINING_AS(ChatTemplate::named("vicuna", "", ""),
                               "unknown chat template 'vicuna' (supported: chatml, qwen3, llama3, llama2, phi3, gemma)",
                               Error);
    CHECK(ChatTemplate::names() == std::vector<std::string>{"chatml", "qwen3", "llama3", "llama2", "phi3", "gemma"});
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
