// edgerun chat: a conversation through the model's chat template. Interactive on a
// terminal (replies on stdout, everything else on stderr); with stdin piped, each line
// is a user turn. The KV cache is kept across turns: each turn feeds only the tokens
// the cache does not already hold, and the per-turn timing shows it.
#include "cli.hpp"
#include "commands.hpp"
#include "engine_options.hpp"
#include "generation_options.hpp"
#include "speculation_options.hpp"

#include <edgerun/interrupt.hpp>
#include <edgerun/text/chat_template.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace edgerun::cli {

int cmd_chat(const std::vector<std::string>& args) {
    CommonOptions common;
    ModelOptions model_options;
    GenerationOptions generation;
    SpeculationOptions speculation_options;
    std::string system_prompt, think;
    ChatTemplateOptions template_options;
    po::options_description desc("edgerun chat options");
    add_model_options(desc, model_options);
    desc.add_options()
        ("system", po::value(&system_prompt), "system prompt")
        ("think", po::value(&think), "on or off: the template's thinking switch (enable_thinking: Qwen3, DeepSeek-R1)");
    template_options.add_to(desc);
    add_generation_options(desc, generation);
    add_speculation_options(desc, speculation_options);
    if (!parse(with_long_draft_option(args), desc, common, "usage: edgerun chat [-m MODEL] [--system TEXT] [--think on|off] [options]\n"
                                   "Interactive on a terminal (/reset starts over, /exit or Ctrl-D ends); with stdin\n"
                                   "piped, each line is a user turn."))
        return 0;
    resolve_constraints(generation);
    if (!think.empty() && think != "on" && think != "off")
        throw Error("--think: '" + think + "' is not on or off", ER_E_INVALID_ARGUMENT);
    template_options.read();

    EngineOptions engine_options = resolve(model_options);
    PluginRegistry registry = load_plugins(common);
    Engine engine(registry, model_options.model, engine_options);
    const text::Vocab vocab = text::Vocab::from_file(engine.model().file());
    text::Tokenizer tokenizer(vocab);
    const text::ChatTemplate chat_template = template_options.resolve(tokenizer);
    Sampler sampler = make_sampler(registry, generation, int32_t(engine.model().hparams().n_vocab));
    auto runner = engine.new_runner();
    Generator generator(*runner, sampler, tokenizer);
    const Speculation speculation = make_speculation(registry, speculation_options, engine, vocab);
    speculation.attach(generator);

    text::ChatOptions chat_options;
    if (!think.empty()) chat_options.enable_thinking = think == "on";
    // A grammar's sentence starts at the reply's first byte: no room for a <think> block.
    else if (generation.settings.grammar) chat_options.enable_thinking = false;

    std::vector<text::ChatMessage> messages;
    if (!system_prompt.empty()) messages.push_back({"system", system_prompt});
    const bool interactive = ::isatty(STDIN_FILENO) == 1;
    InterruptGuard interrupt_guard;
    std::atomic<bool>* interrupted = InterruptGuard::flag();
    std::fprintf(stderr, "chat: %s on %s, template %s%s\n", engine.model().hparams().name.c_str(),
                 std::string(engine.backend().plugin().name()).c_str(), chat_template.name().c_str(),
                 interactive ? " (/reset starts over, /exit or Ctrl-D ends)" : "");
    if (const std::string draft = speculation.describe(); !draft.empty()) std::fprintf(stderr, "%s\n", draft.c_str());

    int turn = 0;
    std::string line;
    while (true) {
        if (interactive) std::fputs("\n> ", stderr);
        if (!std::getline(std::cin, line)) break;
        if (line == "/exit") break;
        if (line == "/reset") {
            messages.resize(system_prompt.empty() ? 0 : 1);
            continue;
        }
        if (line.empty()) continue;
        messages.push_back({"user", line});
        const std::vector<int32_t> tokens =
            text::encode_chat_prompt(tokenizer, chat_template.format(messages, chat_options), true);

        std::string reply;
        GenerationStats stats;
        try {
            stats = generator.generate(tokens, generation.settings, [&](std::string_view text) {
                reply += text;
                std::fwrite(text.data(), 1, text.size(), stdout);
                std::fflush(stdout);
            }, interrupted);
        } catch (const Error& e) {
            std::fprintf(stderr, "\nchat: %s\n", e.what());
            return 1;
        }
        std::fputs("\n", stdout);
        std::fflush(stdout);
        messages.push_back({"assistant", reply});
        ++turn;
        std::fprintf(stderr, "[turn %d: %d new prompt tokens (%d reused from the cache) in %.1f ms; %d tokens at %.2f tok/s; %s]\n",
                     turn, stats.prompt_tokens, stats.reused_tokens, stats.prompt_seconds * 1e3,
                     stats.generated_tokens,
                     stats.generate_seconds > 0 ? stats.generated_tokens / stats.generate_seconds : 0.0,
                     stats.stop_reason.c_str());
        print_speculation_summary(stats);
        if (stats.stop_reason == "cancelled") {
            print_summary(stats, engine, *runner);
            if (!interactive) return 130;
            interrupted->store(false);  // Ctrl-C ends a reply, not the chat
        }
    }
    return 0;
}

}  // namespace edgerun::cli
