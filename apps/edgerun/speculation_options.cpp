#include "speculation_options.hpp"

#include <cstdio>

namespace edgerun::cli {

namespace {

uint64_t weight_bytes(const Model& model) {
    uint64_t bytes = 0;
    for (const auto& t : model.weights().tensors()) bytes += t.nbytes;
    return bytes;
}

}  // namespace

void add_speculation_options(po::options_description& desc, SpeculationOptions& o) {
    desc.add_options()
        ("model-draft", po::value(&o.model_draft), "speculative decoding with this draft model (-md; the target's vocabulary)")
        ("draft", po::value(&o.draft)->default_value(o.draft), "most tokens the draft proposes per step")
        ("draft-fixed", po::bool_switch(&o.draft_fixed), "always propose --draft tokens (default: adapt the length to the acceptance, and decode plainly while drafting does not pay)")
        ("backend-draft", po::value(&o.backend_draft), "backend for the draft model (default: the best that runs it)")
        ("lookup", po::value(&o.lookup)->default_value(0), "speculative decoding without a draft model: propose up to N tokens that followed the last tokens' latest earlier occurrence (prompt lookup)")
        ("draft-verify-cost", po::value(&o.verify_row_cost)->default_value(o.verify_row_cost), "cost of one more token in a verify step relative to a decode step (edgerun bench --draft measures it); the adaptive length weighs it");
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
    if (!(options.verify_row_cost >= 0)) throw Error("--draft-verify-cost must be >= 0", ER_E_INVALID_ARGUMENT);
    if (!options.backend_draft.empty() && options.model_draft.empty())
        throw Error("--backend-draft needs a draft model (--model-draft)", ER_E_INVALID_ARGUMENT);
    out.settings.adaptive = !options.draft_fixed;
    out.settings.verify_row_cost = options.verify_row_cost;
    if (options.lookup > 0) {
        out.drafter = std::make_unique<LookupDrafter>();
        out.settings.max_draft = options.lookup;
        return out;
    }
    if (options.model_draft.empty()) return out;
    if (options.draft < 1 || options.draft > 64)
        throw Error("--draft must be 1 to 64 (got " + std::to_string(options.draft) + ")", ER_E_INVALID_ARGUMENT);
    EngineOptions draft_options = target.options();
    draft_options.backend = options.backend_draft;
    draft_options.backend_options.clear();
    draft_options.n_ctx = target.n_ctx();
    out.draft_engine = std::make_unique<Engine>(registry, options.model_draft, draft_options);
    require_same_vocabulary(target_vocab, text::Vocab::from_file(out.draft_engine->model().file()));
    out.draft_runner = out.draft_engine->new_runner();
    const double cost = double(weight_bytes(out.draft_engine->model())) / double(weight_bytes(target.model()));
    out.drafter = std::make_unique<ModelDrafter>(*out.draft_runner, cost);
    out.settings.max_draft = options.draft;
    return out;
}

void Speculation::attach(Generator& generator) const {
    if (drafter) generator.speculate(drafter.get(), settings);
}

std::string Speculation::describe() const {
    if (!drafter) return {};
    const std::string up_to = (settings.adaptive ? "up to " : "") + std::to_string(settings.max_draft) + " tokens";
    if (!draft_engine) return "draft: prompt lookup, " + up_to;
    return "draft: " + draft_engine->model().hparams().name + " on " + std::string(draft_engine->backend().plugin().name()) +
           ", " + up_to;
}

void print_speculation_summary(const GenerationStats& stats) {
    if (stats.target_steps == 0 || (stats.draft_steps == 0 && stats.drafted_tokens == 0)) return;
    std::fprintf(stderr, "speculative: %d of %d target steps verified a draft; acceptance %.1f%% (%d of %d drafted); "
                         "%.2f tokens per target step\n",
                 stats.draft_steps, stats.target_steps,
                 stats.drafted_tokens > 0 ? 100.0 * stats.accepted_tokens / stats.drafted_tokens : 0.0,
                 stats.accepted_tokens, stats.drafted_tokens, double(stats.generated_tokens) / stats.target_steps);
}

}  // namespace edgerun::cli
