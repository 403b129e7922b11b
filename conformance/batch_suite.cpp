#include "batch_suite.hpp"

#include <edgerun/batch_runner.hpp>
#include <edgerun/engine.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ostream>

namespace edgerun::conformance {
namespace {

constexpr int32_t kSequences = 4;

// The calls a server might make: prompts of different lengths together (one sequence
// with none yet), a step mixing a decode with longer additions, decode steps of all,
// then a sequence rewound and fed again. No call has more than 16 rows, so on cpu_ref
// every one runs the multi-row kernel whose rows are bit-identical to one-row steps.
// A call with all_logits false asks only for its last row's logits (what a server's prompt
// does): the step's LOGITS then computes rows that are not the step's first ones.
struct Call {
    int32_t seq;
    int32_t n_tokens;
    int32_t rewind_to = -1;  // rewind the sequence to this position first
    bool all_logits = true;
};
const std::vector<std::vector<Call>> kScript = {
    {{0, 5}, {1, 2}, {3, 9}},
    {{0, 1}, {1, 4, -1, false}, {2, 3, -1, false}, {3, 2}},
    {{0, 1}, {1, 1}, {2, 1}, {3, 1}},
    {{2, 1}, {0, 1}, {3, 1}, {1, 1}},
    {{1, 3, 4}, {3, 1}},
    {{0, 1}, {1, 1}, {2, 1}, {3, 1}},
};
constexpr int32_t kMostPositions = 16;  // the longest any sequence gets

// Every row's logits, per sequence in feed order.
using SequenceLogits = std::vector<std::vector<float>>;

SequenceLogits run_script(const Engine& engine, bool one_at_a_time, const std::vector<int32_t>& text, bool* shared) {
    auto batch = engine.new_batch_runner(kSequences, one_at_a_time);
    if (shared) *shared = batch->batched();
    const size_t n_vocab = size_t(batch->n_vocab());
    SequenceLogits out(kSequences);
    std::vector<size_t> used(kSequences, 0);  // tokens of each sequence's text consumed
    for (const auto& call : kScript) {
        std::vector<std::vector<float>> rows(call.size());
        std::vector<SequenceFeed> feeds;
        for (size_t i = 0; i < call.size(); ++i) {
            const Call& c = call[i];
            if (c.rewind_to >= 0) batch->rewind(c.seq, c.rewind_to);
            // Sequence s reads the text from offset 11 * s, so the sequences differ.
            const size_t from = size_t(11 * c.seq) + used[size_t(c.seq)];
            used[size_t(c.seq)] += size_t(c.n_tokens);
            rows[i].assign(size_t(c.all_logits ? c.n_tokens : 1) * n_vocab, 0.0f);
            feeds.push_back({c.seq, std::span<const int32_t>(text.data() + from, size_t(c.n_tokens)),
                             c.all_logits ? rows[i].data() : nullptr});
        }
        batch->feed(feeds);
        for (size_t i = 0; i < call.size(); ++i) {
            if (!call[i].all_logits) {
                const std::span<const float> last = batch->logits(call[i].seq);
                std::copy(last.begin(), last.end(), rows[i].begin());
            }
            out[size_t(call[i].seq)].insert(out[size_t(call[i].seq)].end(), rows[i].begin(), rows[i].end());
        }
    }
    return out;
}

double nmse(std::span<const float> cand, std::span<const float> ref) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        err += (double(cand[i]) - ref[i]) * (double(cand[i]) - ref[i]);
        norm += double(ref[i]) * ref[i];
    }
    return norm > 0 ? err / norm : err;
}

std::string format(const char* fmt, double value) {
    char text[128];
    std::snprintf(text, sizeof text, fmt, value);
    return text;
}

BatchComparison compare(const Engine& engine, const std::vector<int32_t>& text, bool exact) {
    BatchComparison c;
    c.sequences = kSequences;
    c.exact = exact;
    bool shared = false;
    const SequenceLogits alone = run_script(engine, true, text, nullptr);
    const SequenceLogits together = run_script(engine, false, text, &shared);
    c.steps = shared ? "shared" : "one at a time";
    const size_t n_vocab = size_t(engine.model().hparams().n_vocab);
    std::vector<PositionStats> positions;
    for (int32_t s = 0; s < kSequences; ++s) {
        const auto& a = alone[size_t(s)];
        const auto& t = together[size_t(s)];
        for (size_t row = 0; row * n_vocab < a.size(); ++row) {
            const std::span<const float> ref(a.data() + row * n_vocab, n_vocab), cand(t.data() + row * n_vocab, n_vocab);
            // Logits that are not finite even alone are the model level's finding, not this
            // level's: such a row only has to come out the same (bit for bit) together.
            if (!std::all_of(ref.begin(), ref.end(), [](float v) { return std::isfinite(v); })) {
                ++c.rows;
                ++c.non_finite_rows;
                if (std::memcmp(ref.data(), cand.data(), n_vocab * sizeof(float)) != 0 && ++c.differing_rows == 1)
                    c.problems.push_back("sequence " + std::to_string(s) + ", row " + std::to_string(row) +
                                         ": non-finite logits alone, other logits together");
                continue;
            }
            positions.push_back(compare_position(cand, ref));
            const double row_nmse = nmse(cand, ref);
            c.worst_nmse = std::max(c.worst_nmse, row_nmse);
            ++c.rows;
            if (std::memcmp(ref.data(), cand.data(), n_vocab * sizeof(float)) == 0) continue;
            if (++c.differing_rows == 1 && exact)
                c.problems.push_back("sequence " + std::to_string(s) + ", row " + std::to_string(row) +
                                     ": stepped together its logits differ from stepped alone (" +
                                     format("NMSE %.3g", row_nmse) + "; this backend promises identical bits)");
        }
    }
    const ModelThresholds& t = model_thresholds(Comparison::Exact);
    c.summary = summarize(positions, t.tie_gap);
    if (!exact) {
        Divergence none;
        none.identical = true;
        if (!positions.empty())
            for (const std::string& p : judge(c.summary, none, t)) c.problems.push_back("together vs alone: " + p);
    } else if (c.differing_rows > 1) {  // the first is named above
        c.problems.push_back(std::to_string(c.differing_rows) + " of " + std::to_string(c.rows) + " rows differ");
    }
    c.status = c.problems.empty() ? "pass" : "FAIL";
    return c;
}

}  // namespace

std::vector<BatchComparison> run_batch_level(const PluginRegistry& registry, const BackendSpec& candidate,
                                             const std::vector<ModelEntry>& models, const BatchLevelOptions& options) {
    std::vector<BatchComparison> out;
    for (const ModelEntry& entry : models) {
        const std::string file = std::filesystem::path(entry.path).filename().string();
        std::vector<int32_t> kv_types = options.kv_types;
        if (kv_types.empty()) kv_types = {ER_KV_F32, ER_KV_F16, ER_KV_Q8};
        bool ran = false;
        std::string missing;
        for (int32_t kv : kv_types) {
            BatchComparison c;
            c.model = file;
            c.candidate = candidate.name() + " kv=" + kv_type_name(kv);
            try {
                const Engine engine(registry, entry.path,
                                    candidate.engine_options(kv, options.n_batch, kMostPositions + 11 * kSequences));
                const std::vector<int32_t> text = sequence_tokens(engine.model(), 11 * kSequences + kMostPositions);
                c = compare(engine, text, options.exact);
                c.model = file;
                c.candidate = candidate.name() + " kv=" + kv_type_name(kv);
                out.push_back(c);
                ran = true;
            } catch (const Error& e) {
                if (e.code() == ER_E_UNSUPPORTED) {  // this cache type (or model) is not run: try the next
                    missing = e.what();
                    continue;
                }
                c.status = "error";
                c.problems.push_back(e.what());
                out.push_back(c);
                ran = true;
            }
            if (options.kv_types.empty() && ran) break;  // one cache type is enough by default
        }
        if (!ran) {
            BatchComparison c;
            c.model = file;
            c.candidate = candidate.name();
            c.status = "missing";
            c.problems.push_back(missing);
            out.push_back(c);
        }
    }
    return out;
}

void print_batch_report(const std::vector<BatchComparison>& comparisons, std::ostream& out) {
    out << "== batch: " << kSequences
        << " sequences of different lengths and positions stepped together, each row against the sequence alone ==\n";
    // Columns as wide as their longest entry (stress models and plugin files have long names).
    int model_w = 34, cand_w = 18;
    for (const BatchComparison& c : comparisons) {
        model_w = std::max(model_w, int(c.model.size()));
        cand_w = std::max(cand_w, int(c.candidate.size()));
    }
    char line[1024];
    std::snprintf(line, sizeof line, "%-*s %-*s %-14s %6s %9s %11s  %s\n", model_w, "model", cand_w, "candidate", "steps",
                  "rows", "differing", "worst NMSE", "status");
    out << line;
    for (const BatchComparison& c : comparisons) {
        std::snprintf(line, sizeof line, "%-*s %-*s %-14s %6d %9d %11.2e  %s%s\n", model_w, c.model.c_str(), cand_w,
                      c.candidate.c_str(), c.steps.c_str(), c.rows, c.differing_rows, c.worst_nmse, c.status.c_str(),
                      c.exact && c.status == "pass" ? " (bit-identical)" : "");
        out << line;
        if (c.non_finite_rows > 0)
            out << "    " << c.non_finite_rows << " rows not finite alone (the model level's finding): compared bit for bit only\n";
        for (const std::string& p : c.problems) out << "    " << p << "\n";
    }
}

}  // namespace edgerun::conformance
