#include "speculation_options.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

namespace edgerun::cli {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::vector<double> time_steps(Runner& runner, int32_t max_rows, int32_t depth, int repetitions) {
    std::vector<int32_t> tokens(size_t(depth + max_rows));
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7919 + 13) % size_t(runner.n_vocab()));
    std::vector<float> rows(size_t(max_rows) * size_t(runner.n_vocab()));
    runner.rewind(0);
    runner.feed(std::span<const int32_t>(tokens.data(), size_t(depth)));
    std::vector<double> best(size_t(max_rows), std::numeric_limits<double>::infinity());
    for (int r = 0; r < repetitions; ++r)
        for (int32_t n = 1; n <= max_rows; ++n) {
            runner.rewind(depth);
            const auto start = Clock::now();
            if (n == 1)
                runner.feed_greedy(tokens[size_t(depth)]);
            else
                runner.feed(std::span<const int32_t>(tokens.data() + depth, size_t(n)), rows.data());
            best[size_t(n - 1)] =
                std::min(best[size_t(n - 1)], std::chrono::duration<double>(Clock::now() - start).count());
        }
    runner.rewind(0);
    return best;
}

void add_speculation_options(po::options_description& desc, SpeculationOptions& o) {
    desc.add_options()
        ("model-draft", po::value(&o.model_draft), "speculative decoding with this draft model (-md; the target's vocabulary)")
        ("draft", po::value(&o.draft)->default_value(o.draft), "most tokens the draft proposes per step")
        ("draft-fixed", po::bool_switch(&o.draft_fixed), "always propose --draft tokens (default: adapt the length to the acceptance, and decode plainly while drafting does not pay)")
        ("backend-draft", po::value(&o.backend_draft), "backend for the draft model (default: the best that runs it)")
        ("lookup", po::value(&o.lookup)->default_value(0), "speculative decoding without a draft model: propose up to N tokens that followed the last tokens' latest earlier occurrence (prompt lookup)")
        ("draft-verify-cost", po::value(&o.verify_row_cost)->default_value(o.verify_row_cost), "cost of one more token in a verify step, relative to a decode step (< 0: measured at start)")
        ("draft-cost", po::value(&o.draft_cost)->default_value(o.draft_cost), "cost of a draft model's decode step relative to the target's (< 0: measured at start). The adaptive length weighs both; given, a seed's tokens do not depend on the machine's speed");
}

std::vector<std::string> with_long_draft_option(const std::vector<std::string>& args) {
    std::vector<std::string> out;
    out.reserve(args.size());
    for (const std::string& arg : args) {
        if (arg == "-md")
            out.push_back("--model-draft");
        else if (arg.rfind("-md=", 0) == 0)
            out.push_back("--model-draft=" + arg.substr(4));
        else
            out.push_back(arg);
    }
    return out;
}

Speculation make_speculation(const PluginRegistry& registry, const SpeculationOptions& options, const Engine& target,
                             const text::Vocab& target_vocab) {
    Speculation out;
    if (!options.model_draft.empty() && options.lookup > 0)
        throw Error("--model-draft and --lookup are two drafters: give one", ER_E_INVALID_ARGUMENT);
    if (options.lookup < 0) throw Error("--lookup must be >= 0", ER_E_INVALID_ARGUMENT);
    if (!options.backend_draft.empty() && options.model_draft.empty())
        throw Error("--backend-draft needs a draft model (--model-draft)", ER_E_INVALID_ARGUMENT);
    if (options.draft < 1 || options.draft > 64)
        throw Error("--draft must be 1 to 64 (got " + std::to_string(options.draft) + ")", ER_E_INVALID_ARGUMENT);
    // A cost is a ratio of times, or negative for "measure it": NaN or infinity is neither.
    if (!std::isfinite(options.verify_row_cost))
        throw Error("--draft-verify-cost must be a finite number", ER_E_INVALID_ARGUMENT);
    if (!std::isfinite(options.draft_cost)) throw Error("--draft-cost must be a finite number", ER_E_INVALID_ARGUMENT);
    out.settings.adaptive = !options.draft_fixed;
    if (options.lookup == 0 && options.model_draft.empty()) return out;
    // The adaptive length weighs what a verify row and a draft step cost here: measured
    // once on a context of their own, unless given.
    constexpr int32_t kRows = 5, kDepth = 32, kRepetitions = 3;
    std::vector<double> target_steps;
    auto target_times = [&]() -> const std::vector<double>& {
        if (target_steps.empty()) {
            auto scratch = target.new_runner();
            target_steps = time_steps(*scratch, kRows, std::min(kDepth, target.n_ctx() - kRows), kRepetitions);
        }
        return target_steps;
    };
    out.settings.verify_row_cost = std::max(0.0, options.verify_row_cost);
    if (out.settings.adaptive && options.verify_row_cost < 0) {
        const auto& t = target_times();
        out.settings.verify_row_cost = std::max(0.0, (t[kRows - 1] / t[0] - 1.0) / (kRows - 1));
    }
    if (options.lookup > 0) {
        out.drafter = std::make_unique<LookupDrafter>();
        out.settings.max_draft = options.lookup;
        return out;
    }
    EngineOptions draft_options = target.options();
    draft_options.backend = options.backend_draft;
    draft_options.backend_options.clear();
    draft_options.n_ctx = target.n_ctx();
    out.draft_engine = std::make_unique<Engine>(registry, options.model_draft, draft_options);
    require_same_vocabulary(target_vocab, text::Vocab::from_file(out.draft_engine->model().file()));
    out.draft_runner = out.draft_engine->new_runner();
    double cost = options.draft_cost;
    if (out.settings.adaptive && cost < 0) {
        const auto draft_times = time_steps(*out.draft_runner, 1, std::min(kDepth, target.n_ctx() - 1), kRepetitions);
        cost = draft_times[0] / target_times()[0];
    }
    out.draft_cost = std::max(0.0, cost);
    out.drafter = std::make_unique<ModelDrafter>(*out.draft_runner, out.draft_cost);
    out.settings.max_draft = options.draft;
    return out;
}

namespace {

// A ModelDrafter that owns its context.
class OwningModelDrafter final : public Drafter {
public:
    OwningModelDrafter(std::unique_ptr<Runner> runner, double relative_cost)
        : runner_(std::move(runner)), drafter_(*runner_, relative_cost) {}
    void propose(std::span<const int32_t> context, int32_t max_tokens, RequestSampler& target, Draft& out) override {
        drafter_.propose(context, max_tokens, target, out);
    }
    double relative_cost() const override { return drafter_.relative_cost(); }

private:
    std::unique_ptr<Runner> runner_;
    ModelDrafter drafter_;
};

}  // namespace

std::unique_ptr<Drafter> Speculation::new_drafter() const {
    if (settings.max_draft <= 0) return nullptr;
    if (!draft_engine) return std::make_unique<LookupDrafter>();
    return std::make_unique<OwningModelDrafter>(draft_engine->new_runner(), draft_cost);
}

void Speculation::attach(Generator& generator) const {
    if (drafter) generator.speculate(drafter.get(), settings);
}

std::string Speculation::describe() const {
    if (!drafter) return {};
    const std::string up_to = (settings.adaptive ? "up to " : "") + std::to_string(settings.max_draft) + " tokens";
    char costs[96] = "";
    if (settings.adaptive)
        std::snprintf(costs, sizeof costs, "; a verify row costs %.2f decode steps, a draft step %.2f",
                      settings.verify_row_cost, drafter->relative_cost());
    if (!draft_engine) return "draft: prompt lookup, " + up_to + costs;
    return "draft: " + draft_engine->model().hparams().name + " on " + std::string(draft_engine->backend().plugin().name()) +
           ", " + up_to + costs;
}

void print_speculation_summary(const GenerationStats& stats) {
    if (!stats.speculative || stats.target_steps == 0) return;
    std::fprintf(stderr, "speculative: %d of %d target steps verified a draft; acceptance %.1f%% (%d of %d drafted); "
                         "%.2f tokens per target step\n",
                 stats.draft_steps, stats.target_steps,
                 stats.drafted_tokens > 0 ? 100.0 * stats.accepted_tokens / stats.drafted_tokens : 0.0,
                 stats.accepted_tokens, stats.drafted_tokens, double(stats.generated_tokens) / stats.target_steps);
}

}  // namespace edgerun::cli
