#include "long_suite.hpp"

#include <edgerun/engine.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

namespace edgerun::conformance {

namespace {

// One position's step: where it started, how many tokens, and whether it came after the
// rewind.
struct StepOf {
    int32_t pos0 = 0, n_tokens = 0;
    bool after_rewind = false;
};

// A run's logits per position of the final sequence, and the step that produced each.
struct FedRun {
    std::vector<float> logits;  // positions x n_vocab
    std::vector<StepOf> step_of;
    int32_t steps = 0, max_kv_length = 0;
    std::set<int32_t> step_sizes;
};

// Feeds tokens[begin, end) in steps of the sizes in `chunks`, in turn, writing every
// position's logits into `run`.
void feed_chunks(Runner& runner, const std::vector<int32_t>& tokens, int32_t begin, int32_t end,
                 const std::vector<int32_t>& chunks, int64_t n_vocab, FedRun& run, bool after_rewind = false) {
    size_t next = 0;
    for (int32_t pos = begin; pos < end;) {
        const int32_t n = std::min(chunks[next++ % chunks.size()], end - pos);
        runner.feed(std::span<const int32_t>(tokens.data() + pos, size_t(n)), run.logits.data() + size_t(pos) * n_vocab);
        for (int32_t i = 0; i < n; ++i) run.step_of[size_t(pos + i)] = {pos, n, after_rewind};
        run.steps += 1;
        run.max_kv_length = std::max(run.max_kv_length, pos + n);
        run.step_sizes.insert(n);
        pos += n;
    }
}

FedRun fed_run(const Engine& engine, int32_t positions) {
    FedRun run;
    run.logits.resize(size_t(positions) * size_t(engine.new_runner()->n_vocab()));
    run.step_of.resize(size_t(positions));
    return run;
}

FedRun run_decode(const Engine& engine, const std::vector<int32_t>& tokens) {
    FedRun run = fed_run(engine, int32_t(tokens.size()));
    auto runner = engine.new_runner();
    feed_chunks(*runner, tokens, 0, int32_t(tokens.size()), {1}, runner->n_vocab(), run);
    return run;
}

FedRun run_chunks(const Engine& engine, const std::vector<int32_t>& tokens, const std::vector<int32_t>& chunks) {
    FedRun run = fed_run(engine, int32_t(tokens.size()));
    auto runner = engine.new_runner();
    feed_chunks(*runner, tokens, 0, int32_t(tokens.size()), chunks, runner->n_vocab(), run);
    return run;
}

// Feeds `from` positions whose last from - to tokens differ from the sequence's, steps
// back to `to` and feeds the sequence's own tokens from there: the logits must be those
// of a fresh run of the sequence. After the rewind: a multi-token step, single tokens,
// and a long step, so both plans meet the stale cache rows.
FedRun run_rewind(const Engine& engine, const std::vector<int32_t>& tokens, const LongSettings& s) {
    FedRun run = fed_run(engine, s.rewind_from);
    auto runner = engine.new_runner();
    std::vector<int32_t> first(tokens.begin(), tokens.begin() + s.rewind_from);
    for (size_t i = size_t(s.rewind_to); i < first.size(); ++i) first[i] = int32_t((first[i] + 1) % runner->n_vocab());
    feed_chunks(*runner, first, 0, s.rewind_from, {33, 7, 16}, runner->n_vocab(), run);
    runner->rewind(s.rewind_to);
    std::vector<int32_t> schedule = {7};
    schedule.insert(schedule.end(), 10, 1);
    schedule.push_back(s.rewind_from - s.rewind_to - 17);
    feed_chunks(*runner, tokens, s.rewind_to, s.rewind_from, schedule, runner->n_vocab(), run, true);
    return run;
}

std::string describe(const StepOf& step, int32_t position) {
    char text[160];
    if (step.n_tokens == 1)
        std::snprintf(text, sizeof text, "a single-token step at position %d (KV length %d)%s", position, position + 1,
                      step.after_rewind ? ", after the rewind" : "");
    else
        std::snprintf(text, sizeof text, "row %d of a %d-token step from position %d%s", position - step.pos0,
                      step.n_tokens, step.pos0, step.after_rewind ? ", after the rewind" : "");
    return text;
}

// The first position past any of the thresholds a single position is held to.
int32_t first_failing(const std::vector<PositionStats>& positions, const ModelThresholds& t) {
    for (size_t i = 0; i < positions.size(); ++i) {
        const PositionStats& p = positions[i];
        const bool disagree = p.ref_gap >= t.tie_gap && p.cand_top1 != p.ref_top1;
        if (!p.finite || disagree || p.kl > t.max_kl || p.max_abs_diff > t.max_logit_diff * p.ref_sd) return int32_t(i);
    }
    return -1;
}

LongComparison compare(const FedRun& cand, const FedRun& ref, Comparison kind, int64_t n_vocab) {
    LongComparison c;
    c.kind = kind;
    const ModelThresholds& t = model_thresholds(kind);
    const size_t n = cand.step_of.size();
    std::vector<PositionStats> positions;
    for (size_t i = 0; i < n; ++i)
        positions.push_back(compare_position(std::span<const float>(cand.logits.data() + i * n_vocab, size_t(n_vocab)),
                                              std::span<const float>(ref.logits.data() + i * n_vocab, size_t(n_vocab))));
    c.summary = summarize(positions, t.tie_gap);
    c.positions = int32_t(n);
    c.steps = cand.steps;
    c.max_kv_length = cand.max_kv_length;
    c.step_sizes.assign(cand.step_sizes.begin(), cand.step_sizes.end());
    c.problems = judge(c.summary, Divergence{}, t);
    c.first_failing = first_failing(positions, t);
    if (c.first_failing >= 0) {
        c.first_failing_step = describe(cand.step_of[size_t(c.first_failing)], c.first_failing);
        const PositionStats& p = positions[size_t(c.first_failing)];
        char text[200];
        std::snprintf(text, sizeof text, ": KL %.3g, max |logit diff| %.3g sd, top-1 %d vs %d", p.kl,
                      p.ref_sd > 0 ? p.max_abs_diff / p.ref_sd : 0.0, p.cand_top1, p.ref_top1);
        c.problems.push_back("first failing position " + std::to_string(c.first_failing) + " (" + c.first_failing_step +
                             ")" + text);
    }
    c.status = c.problems.empty() ? "pass" : "FAIL";
    return c;
}

std::string label(const BackendSpec& spec, int32_t kv_type) { return spec.name() + " kv=" + kv_type_name(kv_type); }

std::string list(const std::vector<int32_t>& sizes) {
    std::string out;
    for (int32_t s : sizes) out += (out.empty() ? "" : ", ") + std::to_string(s);
    return out;
}

}  // namespace

std::vector<LongComparison> run_long_level(const PluginRegistry& registry, const BackendSpec& candidate,
                                           const BackendSpec& reference, const std::vector<ModelEntry>& models,
                                           const ModelLevelOptions& options, const LongSettings& settings) {
    if (settings.rewind_from > settings.positions || settings.rewind_from - settings.rewind_to < 18 || settings.rewind_to < 1)
        throw Error("the rewind must step back at least 18 of at most the run's positions", ER_E_INVALID_ARGUMENT);
    std::vector<LongComparison> out;
    const Backend candidate_backend = candidate.create();
    const int32_t n_batch = *std::max_element(settings.chunks.begin(), settings.chunks.end());
    const std::string schedules[] = {
        "one token per step (the decode plan), positions 0.." + std::to_string(settings.positions - 1),
        "steps of " + list(settings.chunks) + " tokens in turn, positions 0.." + std::to_string(settings.positions - 1),
        std::to_string(settings.rewind_from) + " positions (the last " +
            std::to_string(settings.rewind_from - settings.rewind_to) + " other tokens), back to " +
            std::to_string(settings.rewind_to) + ", then steps of 7, 1 (x10) and " +
            std::to_string(settings.rewind_from - settings.rewind_to - 17) + " tokens"};
    for (const ModelEntry& entry : models) {
        const std::string name = std::filesystem::path(entry.path).filename().string();
        try {
            const Model model = Model::open(registry, entry.path);
            const std::vector<int32_t> tokens = sequence_tokens(model, settings.positions);
            std::vector<std::string> missing;
            const std::vector<int32_t> kv_types = supported_kv_types(candidate_backend, model, options, missing);
            if (!missing.empty()) {
                LongComparison c;
                c.model = name;
                c.candidate = candidate.name();
                c.status = "missing";
                c.problems = missing;
                out.push_back(c);
            }
            auto engine_for = [&](const BackendSpec& spec, int32_t kv) {
                return std::make_unique<Engine>(registry, entry.path, spec.engine_options(kv, n_batch, settings.positions));
            };
            std::map<int32_t, FedRun> reference_runs;  // one token per step, by KV cache type
            auto reference_run = [&](int32_t kv) -> const FedRun& {
                auto it = reference_runs.find(kv);
                if (it == reference_runs.end()) it = reference_runs.emplace(kv, run_decode(*engine_for(reference, kv), tokens)).first;
                return it->second;
            };
            auto add = [&](LongComparison c, const std::string& run, const std::string& schedule, const std::string& cand,
                           const std::string& ref) {
                c.model = name, c.run = run, c.schedule = schedule, c.candidate = cand, c.reference = ref;
                out.push_back(std::move(c));
            };
            auto kind_of = [](int32_t a, int32_t b) {
                return (a == ER_KV_Q8) != (b == ER_KV_Q8) ? Comparison::KvQuantized : Comparison::Exact;
            };
            for (int32_t kv : kv_types) {
                const int32_t ref_kv = options.reference_kv >= 0 ? options.reference_kv : kv;
                const std::string ref_label = label(reference, ref_kv) + " one token per step";
                const char* runs[] = {"decode", "chunks", "rewind"};
                try {
                    const auto engine = engine_for(candidate, kv);
                    const FedRun& ref = reference_run(ref_kv);
                    const int64_t n_vocab = engine->new_runner()->n_vocab();
                    for (int i = 0; i < 3; ++i) {
                        const FedRun cand = i == 0   ? run_decode(*engine, tokens)
                                            : i == 1 ? run_chunks(*engine, tokens, settings.chunks)
                                                     : run_rewind(*engine, tokens, settings);
                        add(compare(cand, ref, kind_of(kv, ref_kv), n_vocab), runs[i], schedules[i], label(candidate, kv), ref_label);
                    }
                    if (kv == ER_KV_Q8 && ref_kv == ER_KV_Q8) {  // both INT8 caches against F16, one token per step
                        const FedRun& f16 = reference_run(ER_KV_F16);
                        add(compare(run_decode(*engine, tokens), f16, Comparison::KvQuantized, n_vocab), runs[0],
                            schedules[0], label(candidate, kv), label(reference, ER_KV_F16) + " one token per step");
                        add(compare(ref, f16, Comparison::KvQuantized, n_vocab), runs[0], schedules[0], label(reference, kv),
                            label(reference, ER_KV_F16) + " one token per step");
                    }
                } catch (const std::exception& e) {
                    LongComparison c;
                    c.status = "error";
                    c.problems = {e.what()};
                    add(c, "", "", label(candidate, kv), ref_label);
                }
            }
        } catch (const std::exception& e) {
            LongComparison c;
            c.model = name;
            c.candidate = candidate.name();
            c.status = "error";
            c.problems = {e.what()};
            out.push_back(c);
        }
    }
    return out;
}

std::vector<LongCoverage> long_coverage(const std::vector<LongComparison>& comparisons) {
    std::vector<LongCoverage> out;
    std::map<std::string, std::set<int32_t>> sizes;
    for (const LongComparison& c : comparisons) {
        if (c.status != "pass" && c.status != "FAIL") continue;
        auto it = std::find_if(out.begin(), out.end(), [&](const LongCoverage& m) { return m.model == c.model; });
        if (it == out.end()) {
            LongCoverage m;
            m.model = c.model;
            it = out.insert(out.end(), m);
        }
        it->positions = std::max(it->positions, c.positions);
        it->max_kv_length = std::max(it->max_kv_length, c.max_kv_length);
        it->steps += c.steps;
        sizes[c.model].insert(c.step_sizes.begin(), c.step_sizes.end());
    }
    for (LongCoverage& m : out) m.step_sizes.assign(sizes[m.model].begin(), sizes[m.model].end());
    return out;
}

}  // namespace edgerun::conformance
