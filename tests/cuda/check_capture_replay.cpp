// cuda_orin's captured steps (CUDA Graphs) on the emulated device, where a replay runs
// the launches with the parameters they were recorded with, as a CUDA Graph does: a
// per-step value the capture key (Plan::step_key) misses gives wrong logits.
//
// Usage: cuda_orin_capture_check [--options O] [--kv f16|q8] BACKEND MODEL PLUGIN_DIR...
// (--options: backend options added to every run, e.g. tiled_attention=2 so the steps of
// several rows take the tiled attention and its per-step tile table; --kv: the cache
// type, F16 unless told.)
//
// Runs the same steps of four sequences in one context with the backend's default
// options (steps captured and replayed), with graphs=0 (every step launched plainly) and
// with the defaults' other side, pdl=0,prefetch=1 (captured),
// greedy tokens from each step's logits feeding the next, and requires:
//   - every logit of every step bit-identical among the three runs (under pdl, on by
//     default, the emulated device also requires every thread of every launch to wait for
//     the prior grids);
//   - the replay line of the plan that ran them: every step replayed (none launched
//     plainly) with graphs on (both captured runs), none replayed with graphs=0.
// The steps cover the shapes the key must tell apart: a verification step of four rows
// of one sequence with every logit, then the decode step of every sequence (4 rows, all
// logits too: the same rows and logit rows, but of four sequences; run twice, so the
// second is a replay of the first's capture), a verification step (two rows of one
// sequence with both logits, plus one row of another) and a step of the same row count
// with other logit rows (no logits for the first row), and one-row steps of two different
// sequences.
#include <edgerun/argmax.hpp>
#include <edgerun/engine.hpp>
#include <edgerun/plugin_registry.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace edgerun;

constexpr int32_t kSequences = 4;
constexpr int kSteps = 7;

struct Run {
    std::vector<float> logits;  // every step's logits, in order
    size_t n_vocab = 0;
    long long replayed = -1, plain = -1;
    std::string log;
};

class Workload {
public:
    explicit Workload(BatchRunner& batch) : batch_(batch), tokens_(size_t(kSequences)) {
        for (int32_t s = 0; s < kSequences; ++s) tokens_[size_t(s)] = 11 + 97 * s;
    }

    // Each sequence in `seqs` fed its next token: one row each, every row's logits.
    void decode(const std::vector<int32_t>& seqs) {
        std::vector<SequenceFeed> feeds;
        for (int32_t s : seqs) feeds.push_back({s, {&tokens_[size_t(s)], 1}, nullptr});
        batch_.feed(feeds);
        for (int32_t s : seqs) take(s);
    }

    // Two rows of `seq` (its next token and a guessed one after it), and one row of
    // `other`: with `all` both of seq's rows give logits (a speculative verification
    // step, logit rows 0, 1, 2), else only its last (rows 1, 2). With `all`, the guessed
    // token is then rejected: seq is rewound to after its first row.
    void pair(int32_t seq, int32_t other, bool all) {
        const std::vector<int32_t> two{tokens_[size_t(seq)], (tokens_[size_t(seq)] + 1) % int32_t(batch_.n_vocab())};
        std::vector<float> both(size_t(2 * batch_.n_vocab()));
        const std::vector<SequenceFeed> feeds{{seq, two, all ? both.data() : nullptr},
                                              {other, {&tokens_[size_t(other)], 1}, nullptr}};
        const int32_t pos = batch_.position(seq);
        batch_.feed(feeds);
        if (all) {
            logits_.insert(logits_.end(), both.begin(), both.end());
            tokens_[size_t(seq)] = choose(both.data());
            batch_.rewind(seq, pos + 1);
        } else {
            take(seq);
        }
        take(other);
    }

    // k rows of `seq` (its next token and k - 1 guessed ones), every row's logits (a
    // speculative verification step); then the guesses are rejected: seq is rewound to
    // after its first row.
    void verify(int32_t seq, int32_t k) {
        std::vector<int32_t> rows(static_cast<size_t>(k));
        for (int32_t i = 0; i < k; ++i) rows[size_t(i)] = (tokens_[size_t(seq)] + i) % int32_t(batch_.n_vocab());
        std::vector<float> all(size_t(k) * batch_.n_vocab());
        const int32_t pos = batch_.position(seq);
        const std::vector<SequenceFeed> feeds{{seq, rows, all.data()}};
        batch_.feed(feeds);
        logits_.insert(logits_.end(), all.begin(), all.end());
        tokens_[size_t(seq)] = choose(all.data());
        batch_.rewind(seq, pos + 1);
    }

    std::vector<float> logits() const { return logits_; }

private:
    void take(int32_t seq) {
        const std::span<const float> row = batch_.logits(seq);
        logits_.insert(logits_.end(), row.begin(), row.end());
        tokens_[size_t(seq)] = choose(row.data());
    }
    int32_t choose(const float* row) const {
        const Argmax a = argmax_logits(row, batch_.n_vocab());
        if (a.non_finite >= 0) throw Error("a non-finite logit at token " + std::to_string(a.non_finite));
        return int32_t(a.index);
    }

    BatchRunner& batch_;
    std::vector<int32_t> tokens_;
    std::vector<float> logits_;
};

Run run(const PluginRegistry& registry, const std::string& backend, const std::string& model,
        const std::string& options, int32_t kv_type, std::ostringstream& log) {
    log.str("");
    Run r;
    {
        EngineOptions o;
        o.backend = backend;
        o.backend_options = options;
        o.n_ctx = 64;
        o.n_batch = 8;
        o.kv_type = kv_type;
        Engine engine(registry, model, o);
        const std::unique_ptr<BatchRunner> batch = engine.new_batch_runner(kSequences);
        if (!batch->batched()) throw Error(backend + " did not take " + std::to_string(kSequences) + " sequences in one context");
        Workload w(*batch);
        w.verify(0, 4);          // 4 rows of sequence 0, logit rows 0-3
        w.decode({0, 1, 2, 3});  // 4 rows of four sequences, logit rows 0-3
        w.decode({0, 1, 2, 3});  // the same shape again
        w.pair(0, 1, true);      // 3 rows, logit rows 0, 1, 2
        w.pair(2, 3, false);     // 3 rows, logit rows 1, 2
        w.decode({1});           // one row of sequence 1
        w.decode({3});           // one row of sequence 3
        r.logits = w.logits();
        r.n_vocab = size_t(batch->n_vocab());
    }  // the plans end here and log how their steps ran
    r.log = log.str();
    static const std::regex replay_line(R"(cuda_orin: (\d+) steps replayed from a CUDA Graph, (\d+) launched plainly)");
    for (std::sregex_iterator it(r.log.begin(), r.log.end(), replay_line), end; it != end; ++it) {
        if (r.replayed >= 0) throw Error("more than one plan ran steps:\n" + r.log);
        r.replayed = std::stoll((*it)[1]);
        r.plain = std::stoll((*it)[2]);
    }
    if (r.replayed < 0) throw Error("no replay line logged:\n" + r.log);
    return r;
}

int fail(const std::string& message, const std::string& log = "") {
    std::cout << log << "FAIL: " << message << "\n";
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    std::string extra;
    int32_t kv_type = ER_KV_F16;
    for (; argc > 2 && std::strncmp(argv[1], "--", 2) == 0; argv += 2, argc -= 2) {
        if (std::strcmp(argv[1], "--options") == 0) {
            extra = argv[2];
        } else if (std::strcmp(argv[1], "--kv") == 0 && std::strcmp(argv[2], "f16") == 0) {
            kv_type = ER_KV_F16;
        } else if (std::strcmp(argv[1], "--kv") == 0 && std::strcmp(argv[2], "q8") == 0) {
            kv_type = ER_KV_Q8;
        } else {
            std::cerr << "cuda_orin_capture_check: unknown flag " << argv[1] << " " << argv[2] << "\n";
            return 2;
        }
    }
    if (argc < 4) {
        std::cerr << "usage: cuda_orin_capture_check [--options O] [--kv f16|q8] BACKEND MODEL PLUGIN_DIR...\n";
        return 2;
    }
    auto with = [&](const std::string& options) {
        return extra.empty() ? options : options.empty() ? extra : extra + "," + options;
    };
    const std::string backend = argv[1], model = argv[2];
    // The plugins' log lines (the replay line among them, at info) go to this stream.
    std::ostringstream log;
    auto logger = std::make_shared<spdlog::logger>("edgerun", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
    logger->set_pattern("%l: %v");
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::info);
    try {
        const PluginRegistry registry = PluginRegistry::discover(std::vector<std::string>(argv + 3, argv + argc));
        const Run graphs = run(registry, backend, model, with(""), kv_type, log);
        const Run plain = run(registry, backend, model, with("graphs=0"), kv_type, log);
        // Programmatic dependent launch off and the GEMV's prefetch on: the defaults'
        // other side. On the emulated device pdl (the defaults' runs) makes every launch,
        // replays included, check that each of its threads waited for the prior grids
        // (tests/cuda/emu/cuda_emulation.hpp).
        const Run swapped = run(registry, backend, model, with("pdl=0,prefetch=1"), kv_type, log);
        if (graphs.replayed != kSteps || graphs.plain != 0)
            return fail("with graphs on, " + std::to_string(graphs.replayed) + " of " + std::to_string(kSteps) +
                            " steps replayed and " + std::to_string(graphs.plain) + " launched plainly",
                        graphs.log);
        if (plain.replayed != 0 || plain.plain != kSteps)
            return fail("with graphs=0, " + std::to_string(plain.replayed) + " steps replayed", plain.log);
        if (graphs.logits.size() != plain.logits.size() || graphs.logits.empty())
            return fail("the runs gave " + std::to_string(graphs.logits.size()) + " and " +
                        std::to_string(plain.logits.size()) + " logits");
        if (swapped.replayed != kSteps || swapped.plain != 0)
            return fail("with pdl=0,prefetch=1, " + std::to_string(swapped.replayed) + " of " + std::to_string(kSteps) +
                            " steps replayed and " + std::to_string(swapped.plain) + " launched plainly",
                        swapped.log);
        const size_t n_vocab = graphs.n_vocab;
        for (const Run* other : {&graphs, &swapped}) {
            const char* how = other == &graphs ? " replayed, " : " replayed with pdl=0,prefetch=1, ";
            if (other->logits.size() != plain.logits.size())
                return fail(std::string("the runs gave different numbers of logits:") + how);
            for (size_t i = 0; i < plain.logits.size(); ++i)
                if (std::memcmp(&other->logits[i], &plain.logits[i], sizeof(float)) != 0)
                    return fail("logit row " + std::to_string(i / n_vocab) + ", token " + std::to_string(i % n_vocab) +
                                ": " + std::to_string(other->logits[i]) + how + std::to_string(plain.logits[i]) +
                                " launched plainly");
        }
        std::cout << "ok: " << kSteps << " steps of 4, 4, 4, 3, 3, 1 and 1 rows replayed from captures, "
                  << graphs.logits.size() / n_vocab
                  << " logit rows bit-identical to graphs=0, with the defaults and with pdl=0,prefetch=1\n";
    } catch (const std::exception& e) {
        return fail(e.what(), log.str());
    }
    return 0;
}
