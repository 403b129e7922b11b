#include "model_suite.hpp"

#include <edgerun/backend_support.hpp>
#include <edgerun/engine.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

namespace edgerun::conformance {

namespace {

// Plain prose with numbers, punctuation and a line break: every tokenizer splits it into
// ordinary tokens.
constexpr const char* kText =
    "The old lighthouse keeper climbed the spiral stairs every evening at seven, carrying a lamp, a notebook "
    "and a small thermos of tea. From the top he could see the harbour, the fishing boats coming home, and "
    "the long line of the coast fading into the mist.\nHe wrote down the wind, the waves and the number of "
    "ships: twelve on Monday, nine on Tuesday, and on Friday, when the storm came, only three. ";

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
    char text[256];
    std::snprintf(text, sizeof text, fmt, a, b, c, d);
    return text;
}

std::string label(const BackendSpec& spec, int32_t kv_type) { return spec.name() + " kv=" + kv_type_name(kv_type); }

}  // namespace

std::vector<int32_t> sequence_tokens(const Model& model, int32_t n) {
    const text::Tokenizer tokenizer(text::Vocab::from_file(model.file()));
    std::vector<int32_t> tokens = tokenizer.encode(kText, true, false);
    const std::vector<int32_t> more = tokenizer.encode(kText, false, false);
    while (int32_t(tokens.size()) < n) tokens.insert(tokens.end(), more.begin(), more.end());
    tokens.resize(size_t(n));
    return tokens;
}

BackendRun run_model(const PluginRegistry& registry, const BackendSpec& backend, const std::string& model_path,
                     int32_t kv_type, const SequenceSettings& settings, const std::vector<int32_t>& tokens) {
    const Engine engine(registry, model_path,
                        backend.engine_options(kv_type, settings.n_batch, int32_t(tokens.size()) + settings.greedy_tokens + 8));
    BackendRun run;
    run.device = engine.device().name;

    auto teacher = engine.new_runner();
    run.n_vocab = teacher->n_vocab();
    run.logits.resize(tokens.size() * size_t(run.n_vocab));
    teacher->feed(tokens, run.logits.data());

    auto greedy = engine.new_runner();
    greedy->feed(std::span<const int32_t>(tokens.data(), size_t(settings.prompt_tokens)));
    for (int32_t i = 0; i < settings.greedy_tokens; ++i) {
        const Top2 t = top2(greedy->last_logits());
        run.greedy.tokens.push_back(t.first);
        run.greedy.margins.push_back(t.gap);
        if (i + 1 < settings.greedy_tokens) greedy->feed(std::span<const int32_t>(&t.first, 1));
    }
    return run;
}

std::vector<std::string> judge(const SequenceSummary& s, const Divergence& greedy, const ModelThresholds& t) {
    std::vector<std::string> problems;
    if (!s.finite) problems.push_back("non-finite logits (inf or NaN)");
    if (s.decisive_top1() < t.min_top1)
        problems.push_back(format("teacher-forced top-1 agreement %.2f%% < %.1f%%", 100 * s.decisive_top1(), 100 * t.min_top1) +
                           " (first at position " + std::to_string(s.first_disagreement) + ": candidate " +
                           std::to_string(s.first_cand) + ", reference " + std::to_string(s.first_ref) +
                           format(", reference gap %.3f)", s.first_gap));
    if (s.finite && s.mean_kl > t.max_mean_kl) problems.push_back(format("mean KL %.3g > %.0e", s.mean_kl, t.max_mean_kl));
    if (s.finite && s.max_kl > t.max_kl)
        problems.push_back(format("KL %.3g at position %.0f > %.0e", s.max_kl, s.max_kl_position, t.max_kl));
    if (s.finite && s.max_diff_sd > t.max_logit_diff)
        problems.push_back(format("max |logit diff| %.3g sd at position %.0f > %.2f sd", s.max_diff_sd, s.max_diff_position,
                                  t.max_logit_diff));
    if (!greedy.identical && !(greedy.ref_margin < t.tie_gap))
        problems.push_back("greedy diverges at generated token " + std::to_string(greedy.position) + ": candidate " +
                           std::to_string(greedy.cand_token) + format(" (margin %.3f), reference ", greedy.cand_margin) +
                           std::to_string(greedy.ref_token) +
                           format(" (margin %.3f >= near-tie gap %.2f)", greedy.ref_margin, t.tie_gap));
    return problems;
}

namespace {

ModelComparison compare_runs(const BackendRun& cand, const BackendRun& ref, Comparison kind) {
    ModelComparison c;
    c.kind = kind;
    const ModelThresholds& t = model_thresholds(kind);
    std::vector<PositionStats> positions;
    const size_t n = ref.logits.size() / size_t(ref.n_vocab);
    for (size_t i = 0; i < n; ++i) {
        const std::span<const float> r(ref.logits.data() + i * ref.n_vocab, size_t(ref.n_vocab));
        const std::span<const float> k(cand.logits.data() + i * cand.n_vocab, size_t(cand.n_vocab));
        positions.push_back(compare_position(k, r));
    }
    c.teacher = summarize(positions, t.tie_gap);
    c.greedy = first_divergence(cand.greedy, ref.greedy);
    c.greedy_tokens = int32_t(ref.greedy.tokens.size());
    c.problems = judge(c.teacher, c.greedy, t);
    c.status = c.problems.empty() ? "pass" : "FAIL";
    return c;
}

}  // namespace

std::vector<int32_t> supported_kv_types(const Backend& backend, const Model& model, const ModelLevelOptions& options,
                                        std::vector<std::string>& missing) {
    const Graph decode = model.build_graph(1);
    std::vector<int32_t> wanted = options.kv_types;
    if (wanted.empty()) wanted = {ER_KV_F32, ER_KV_F16, ER_KV_Q8};
    std::vector<int32_t> out;
    for (int32_t kv : wanted) {
        const auto lacks = unsupported_ops(backend, decode, model.weights(), kv);
        if (lacks.empty()) out.push_back(kv);
        for (const auto& what : lacks)
            if (std::find(missing.begin(), missing.end(), what) == missing.end()) missing.push_back(what);
    }
    return out;
}

std::vector<ModelComparison> run_model_level(const PluginRegistry& registry, const BackendSpec& candidate,
                                             const BackendSpec& reference, const std::vector<ModelEntry>& models,
                                             const ModelLevelOptions& options) {
    std::vector<ModelComparison> out;
    const Backend candidate_backend = candidate.create();
    for (const ModelEntry& entry : models) {
        const std::string name = std::filesystem::path(entry.path).filename().string();
        auto add = [&](ModelComparison c) {
            c.model = name;
            c.synthesized = entry.synthesized;
            out.push_back(std::move(c));
        };
        try {
            const Model model = Model::open(registry, entry.path);
            const std::vector<int32_t> tokens = sequence_tokens(model, options.sequence.teacher_tokens);
            std::vector<std::string> missing;
            const std::vector<int32_t> kv_types = supported_kv_types(candidate_backend, model, options, missing);
            if (!missing.empty()) {
                ModelComparison c;
                c.candidate = candidate.name();
                c.status = "missing";
                c.partial = !kv_types.empty();
                c.problems = missing;
                add(c);
            }
            std::map<std::pair<bool, int32_t>, BackendRun> runs;  // (is candidate, kv type)
            auto run_of = [&](bool is_candidate, int32_t kv) -> const BackendRun& {
                auto key = std::make_pair(is_candidate, kv);
                auto it = runs.find(key);
                if (it == runs.end())
                    it = runs.emplace(key, run_model(registry, is_candidate ? candidate : reference, entry.path, kv,
                                                     options.sequence, tokens)).first;
                return it->second;
            };
            auto compare = [&](bool cand_is_candidate, int32_t cand_kv, int32_t ref_kv) {
                const BackendSpec& c_spec = cand_is_candidate ? candidate : reference;
                ModelComparison c;
                try {
                    const Comparison kind = (cand_kv == ER_KV_Q8) != (ref_kv == ER_KV_Q8) ? Comparison::KvQuantized
                                                                                         : Comparison::Exact;
                    const BackendRun& ref_run = run_of(false, ref_kv);
                    c = compare_runs(run_of(cand_is_candidate, cand_kv), ref_run, kind);
                } catch (const std::exception& e) {
                    c.status = "error";
                    c.problems = {e.what()};
                }
                c.candidate = label(c_spec, cand_kv);
                c.reference = label(reference, ref_kv);
                add(c);
            };
            for (int32_t kv : kv_types) {
                const int32_t ref_kv = options.reference_kv >= 0 ? options.reference_kv : kv;
                compare(true, kv, ref_kv);
                if (kv == ER_KV_Q8 && ref_kv == ER_KV_Q8) {  // both INT8 caches against F16
                    compare(true, ER_KV_Q8, ER_KV_F16);
                    compare(false, ER_KV_Q8, ER_KV_F16);
                }
            }
        } catch (const std::exception& e) {
            ModelComparison c;
            c.candidate = candidate.name();
            c.status = "error";
            c.problems = {e.what()};
            add(c);
        }
    }
    return out;
}

}  // namespace edgerun::conformance
