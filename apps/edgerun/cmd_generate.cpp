// edgerun [--backend NAME] -m MODEL -p PROMPT: raw completion. Generated text goes to
// stdout as it is produced, and nothing else does; the summary goes to stderr.
#include "cli.hpp"
#include "commands.hpp"
#include "engine_options.hpp"
#include "generation_options.hpp"
#include "speculation_options.hpp"
#include "output_file.hpp"
#include "trace.hpp"

#include <edgerun/interrupt.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <cstdio>

namespace edgerun::cli {

int cmd_generate(const std::vector<std::string>& args) {
    CommonOptions common;
    ModelOptions model_options;
    GenerationOptions generation;
    SpeculationOptions speculation_options;
    std::string prompt, prompt_file, tokens_out;
    po::options_description desc("edgerun options");
    add_model_options(desc, model_options);
    desc.add_options()
        ("prompt,p", po::value(&prompt), "text to continue")
        ("file,f", po::value(&prompt_file), "read the prompt from this file")
        ("tokens-out", po::value(&tokens_out), "also write the prompt's and the generated token ids here (JSON)");
    add_generation_options(desc, generation);
    add_speculation_options(desc, speculation_options);
    if (!parse(with_long_draft_option(args), desc, common, "usage: edgerun [--backend NAME] [-m MODEL] -p PROMPT [options]")) return 0;
    resolve_constraints(generation);
    if (!prompt_file.empty() && !prompt.empty())
        throw Error("-p and -f both give the prompt: give one", ER_E_INVALID_ARGUMENT);
    if (!prompt_file.empty()) prompt = read_text_file(prompt_file, "--file");
    if (prompt.empty()) throw Error("no prompt: give -p TEXT or -f FILE", ER_E_INVALID_ARGUMENT);

    EngineOptions engine_options = resolve(model_options);
    PluginRegistry registry = load_plugins(common);
    Engine engine(registry, model_options.model, engine_options);
    const text::Vocab vocab = text::Vocab::from_file(engine.model().file());
    text::Tokenizer tokenizer(vocab);
    // As llama.cpp does for a raw prompt: BOS/EOS as the model's flags say, special
    // token texts in the prompt become those tokens.
    const std::vector<int32_t> tokens = tokenizer.encode(prompt, true, true);
    Sampler sampler = make_sampler(registry, generation, int32_t(engine.model().hparams().n_vocab));
    auto runner = engine.new_runner();
    Generator generator(*runner, sampler, tokenizer);
    const Speculation speculation = make_speculation(registry, speculation_options, engine, vocab);
    speculation.attach(generator);

    if (generation.trace)
        print_decode_trace(stderr, engine.model().build_graph(1), engine.model().weights(),
                           int64_t(tokens.size()), engine_options.kv_type);

    InterruptGuard interrupt_guard;
    GenerationStats stats = generator.generate(tokens, generation.settings, [](std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
    }, InterruptGuard::flag());
    print_summary(stats, engine, *runner);
    if (const std::string draft = speculation.describe(); !draft.empty()) std::fprintf(stderr, "%s\n", draft.c_str());
    if (!tokens_out.empty()) {
        auto list = [](const std::vector<int32_t>& ids) {
            std::string out;
            for (int32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
            return "[" + out + "]";
        };
        OutputFile file(tokens_out);
        file.stream() << "{\"prompt\": " << list(tokens) << ", \"generated\": " << list(stats.tokens) << "}\n";
        file.commit();
    }
    return stats.stop_reason == "cancelled" ? 130 : 0;
}

}  // namespace edgerun::cli
