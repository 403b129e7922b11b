// edgerun bench with a drafter (-md DRAFT or --lookup N): decode of one real prompt, put
// through the model's chat template, with and without speculation at temperature 0, the
// two interleaved in every repetition so that both see the same machine (on a shared one,
// the same mix of quiet and busy moments); the acceptance rate, tokens per target step,
// and the cost of a verify step of 2 to 9 tokens relative to one decode step. Rates are
// the best repetition's of each.
#include "bench_speculative.hpp"

#include "generation_options.hpp"

#include <edgerun/text/chat_template.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <algorithm>
#include <cstdio>

namespace edgerun::cli {

namespace {

// The best repetition: on a shared machine the others are slowed by what else runs.
double best(const std::vector<double>& xs) { return xs.empty() ? 0 : *std::max_element(xs.begin(), xs.end()); }

}  // namespace

int bench_speculative(const PluginRegistry& registry, const Engine& engine, const SpeculationOptions& options,
                      const std::string& prompt_text, int n_gen, int repetitions, bool json) {
    const text::Vocab vocab = text::Vocab::from_file(engine.model().file());
    text::Tokenizer tokenizer(vocab);
    const text::ChatTemplate chat_template = text::chat_template_for(tokenizer);
    const std::vector<int32_t> prompt = text::encode_chat_prompt(
        tokenizer, chat_template.format({text::ChatMessage{"user", prompt_text}}, text::ChatOptions{}), true);
    if (int64_t(prompt.size()) + n_gen > engine.n_ctx())
        throw Error("the prompt (" + std::to_string(prompt.size()) + " tokens) and -n " + std::to_string(n_gen) +
                        " exceed the context of " + std::to_string(engine.n_ctx()),
                    ER_E_INVALID_ARGUMENT);

    Speculation speculation = make_speculation(registry, options, engine, vocab);
    if (!speculation.drafter) throw Error("bench: no drafter (give -md DRAFT or --lookup N)", ER_E_INVALID_ARGUMENT);

    GenerationOptions greedy;
    er_sampler_params params{};
    params.struct_size = sizeof params;
    params.temperature = 0.0f;
    params.top_p = 1.0f;
    params.repeat_penalty = 1.0f;
    greedy.sampler = params;
    Sampler sampler = make_sampler(registry, greedy, int32_t(engine.model().hparams().n_vocab));
    auto plain_runner = engine.new_runner();
    auto spec_runner = engine.new_runner();
    GenerationSettings settings;
    settings.n_predict = n_gen;

    // Each repetition starts from an empty cache in both, so that both feed the whole prompt.
    auto run = [&](Runner& runner, bool speculate) {
        runner.rewind(0);
        Generator generator(runner, sampler, tokenizer);
        if (speculate) speculation.attach(generator);
        return generator.generate(prompt, settings, [](std::string_view) {});
    };
    run(*plain_runner, false);  // warm-up, not timed
    std::vector<double> plain_rates, spec_rates;
    GenerationStats plain_stats, spec_stats;
    for (int r = 0; r < repetitions; ++r) {
        plain_stats = run(*plain_runner, false);
        spec_stats = run(*spec_runner, true);
        if (spec_stats.tokens != plain_stats.tokens)
            throw Error("bench: speculative output differs from plain decoding at temperature 0", ER_E_INTERNAL);
        const double plain = plain_stats.generated_tokens / plain_stats.generate_seconds;
        const double spec = spec_stats.generated_tokens / spec_stats.generate_seconds;
        plain_rates.push_back(plain);
        spec_rates.push_back(spec);
    }
    const double acceptance =
        spec_stats.drafted_tokens > 0 ? double(spec_stats.accepted_tokens) / spec_stats.drafted_tokens : 0.0;
    const double per_step = spec_stats.target_steps > 0 ? double(spec_stats.generated_tokens) / spec_stats.target_steps : 0.0;
    const double accepted_per_draft_step =
        spec_stats.draft_steps > 0 ? double(spec_stats.accepted_tokens) / spec_stats.draft_steps : 0.0;

    // The verify step's cost: steps of 2..9 tokens against a one-token decode step.
    auto scratch = engine.new_runner();
    const std::vector<double> steps = time_steps(*scratch, 9, std::min<int32_t>(int32_t(prompt.size()), engine.n_ctx() - 9),
                                                 std::max(3, repetitions));

    if (json) {
        std::printf("{\"prompt_tokens\": %zu, \"generated\": %d, \"drafter\": \"%s\", \"target_steps\": %d, "
                    "\"draft_steps\": %d, \"drafted\": %d, \"accepted\": %d, \"acceptance\": %.4f, "
                    "\"tokens_per_target_step\": %.4f, \"accepted_per_draft_step\": %.4f, \"plain_tok_s\": %.3f, \"speculative_tok_s\": %.3f, "
                    "\"speedup\": %.4f, \"verify_cost\": [",
                    prompt.size(), spec_stats.generated_tokens, speculation.describe().c_str(), spec_stats.target_steps,
                    spec_stats.draft_steps, spec_stats.drafted_tokens, spec_stats.accepted_tokens, acceptance, per_step,
                    accepted_per_draft_step, best(plain_rates), best(spec_rates), best(spec_rates) / best(plain_rates));
        for (size_t n = 1; n < steps.size(); ++n) std::printf("%s%.4f", n > 1 ? ", " : "", steps[n] / steps[0]);
        std::printf("]}\n");
        return 0;
    }
    std::printf("model: %s on %s, threads %d\n%s\nprompt: %zu tokens (chat template %s); %d generated at temperature 0, "
                "best of %d repetitions, plain and speculative interleaved\n\n",
                engine.model().hparams().name.c_str(), std::string(engine.backend().plugin().name()).c_str(),
                engine.options().n_threads, speculation.describe().c_str(), prompt.size(), chat_template.name().c_str(),
                spec_stats.generated_tokens, repetitions);
    std::printf("| %-12s | %10s | %10s | %10s | %14s | %s\n", "", "plain t/s", "spec t/s", "speedup", "acceptance",
                "tokens per target step");
    std::printf("|--------------|------------|------------|------------|----------------|-----------------------\n");
    char counts[48];
    std::snprintf(counts, sizeof counts, "(%d/%d)", spec_stats.accepted_tokens, spec_stats.drafted_tokens);
    std::printf("| %-12s | %10.2f | %10.2f | %9.2fx | %5.1f%% %8s | %.2f (%d steps; %d with a draft, %.2f accepted in each)\n",
                "decode", best(plain_rates), best(spec_rates), best(spec_rates) / best(plain_rates), 100 * acceptance, counts,
                per_step, spec_stats.target_steps, spec_stats.draft_steps, accepted_per_draft_step);
    std::printf("\nverify step of n tokens / one decode step (%.2f ms):", steps[0] * 1e3);
    for (size_t n = 1; n < steps.size(); ++n) std::printf(" %zu: %.2f", n + 1, steps[n] / steps[0]);
    std::printf("\n");
    return 0;
}

}  // namespace edgerun::cli
