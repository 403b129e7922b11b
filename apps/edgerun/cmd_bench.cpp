// edgerun bench: prompt processing and generation throughput in the manner of
// llama-bench (random tokens, repetitions, mean and standard deviation), plus time to
// first token, inter-token latency percentiles, and the bandwidth the decode achieves.
// -d D runs each test with D tokens already in the cache, as llama-bench's -d does:
// "decode at context D" is tg with D tokens cached (bench/compare_llamacpp_gpu.py relies on
// both tools meaning the same).
#include "cli.hpp"
#include "commands.hpp"
#include "bench_speculative.hpp"
#include "engine_options.hpp"

#include <edgerun/argmax.hpp>
#include <edgerun/batch_runner.hpp>
#include <edgerun/random.hpp>
#include <edgerun/traffic.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <numeric>

namespace edgerun::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Stats {
    double mean = 0, stddev = 0;
};

Stats stats_of(const std::vector<double>& xs) {
    Stats s;
    if (xs.empty()) return s;
    s.mean = std::accumulate(xs.begin(), xs.end(), 0.0) / double(xs.size());
    double var = 0;
    for (double x : xs) var += (x - s.mean) * (x - s.mean);
    s.stddev = xs.size() > 1 ? std::sqrt(var / double(xs.size() - 1)) : 0.0;
    return s;
}

double percentile(std::vector<double> xs, double p) {
    if (xs.empty()) return 0;
    std::sort(xs.begin(), xs.end());
    const double rank = p / 100.0 * double(xs.size() - 1);
    const size_t lo = size_t(std::floor(rank)), hi = size_t(std::ceil(rank));
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - double(lo));
}

std::vector<int32_t> random_tokens(Pcg64& rng, size_t n, int64_t n_vocab) {
    std::vector<int32_t> tokens(n);
    for (auto& t : tokens) t = int32_t(rng.next() % uint64_t(n_vocab));
    return tokens;
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
            continue;
        }
        out += c;
    }
    return out;
}

// Every repetition's figure, so that a caller can take the minimum or the median.
std::string json_array(const std::vector<double>& xs, double scale) {
    std::string out = "[";
    char buf[32];
    for (size_t i = 0; i < xs.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.4f", i ? ", " : "", xs[i] * scale);
        out += buf;
    }
    return out + "]";
}

std::vector<int32_t> parse_sequence_counts(const std::string& list) {
    std::vector<int32_t> out;
    size_t at = 0;
    while (at <= list.size()) {
        const size_t comma = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, comma - at);
        char* end = nullptr;
        const long n = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || n < 1 || n > kMaxBatchSequences)
            throw Error("--sequences: '" + item + "' is not a count of 1 to " + std::to_string(kMaxBatchSequences) +
                            " (e.g. 1,2,4,8,16)",
                        ER_E_INVALID_ARGUMENT);
        out.push_back(int32_t(n));
        at = comma + 1;
    }
    return out;
}

struct BatchResult {
    int32_t sequences = 0;
    bool batched = false;
    Stats tok_s;  // aggregate: tokens of all sequences per second
};

// `n_seqs` sequences decoded together (each starts from one random token, then takes its
// argmax): the aggregate tokens per second a server decoding that many conversations gets.
class BatchDecode {
public:
    BatchDecode(const Engine& engine, int32_t n_seqs)
        : batch_(engine.new_batch_runner(n_seqs)), tokens_(size_t(n_seqs), 0), feeds_(static_cast<size_t>(n_seqs)) {
        for (int32_t s = 0; s < n_seqs; ++s) feeds_[size_t(s)] = SequenceFeed{s, std::span<const int32_t>(&tokens_[size_t(s)], 1)};
    }

    bool batched() const { return batch_->batched(); }

    // n_gen steps from position 0; returns tokens of all sequences per second.
    double run(int n_gen, Pcg64& rng) {
        const int32_t n_seqs = batch_->n_seqs();
        for (int32_t s = 0; s < n_seqs; ++s) {
            batch_->rewind(s, 0);
            tokens_[size_t(s)] = int32_t(rng.next() % uint64_t(batch_->n_vocab()));
        }
        const auto start = Clock::now();
        for (int i = 0; i < n_gen; ++i) {
            batch_->feed(feeds_);
            for (int32_t s = 0; s < n_seqs; ++s) {
                const auto logits = batch_->logits(s);
                tokens_[size_t(s)] = int32_t(argmax_logits(logits.data(), int64_t(logits.size())).index);
            }
        }
        return double(n_gen) * n_seqs / seconds_since(start);
    }

private:
    std::unique_ptr<BatchRunner> batch_;
    std::vector<int32_t> tokens_;
    std::vector<SequenceFeed> feeds_;
};

int print_batch(const Engine& engine, const std::string& model_path, const std::vector<int32_t>& counts, int n_gen,
                int repetitions, bool json) {
    Pcg64 rng = Pcg64::from_seed(1234);
    std::vector<std::unique_ptr<BatchDecode>> decodes;
    for (int32_t n : counts) {
        decodes.push_back(std::make_unique<BatchDecode>(engine, n));
        decodes.back()->run(std::min(n_gen, 4), rng);  // warm-up, not timed
    }
    // Repetitions interleave the counts, so that on a shared machine every count sees
    // the same mix of quiet and busy moments.
    std::vector<std::vector<double>> rates(counts.size());
    for (int r = 0; r < repetitions; ++r)
        for (size_t i = 0; i < counts.size(); ++i) rates[i].push_back(decodes[i]->run(n_gen, rng));
    std::vector<BatchResult> results;
    for (size_t i = 0; i < counts.size(); ++i) results.push_back(BatchResult{counts[i], decodes[i]->batched(), stats_of(rates[i])});
    const std::string backend_name(engine.backend().plugin().name());
    const int32_t threads = engine.options().n_threads;
    // Against the one-sequence row when it was measured.
    double single = 0;
    for (const BatchResult& r : results)
        if (r.sequences == 1) single = r.tok_s.mean;
    if (json) {
        std::printf("{\"model\": \"%s\", \"backend\": \"%s\", \"device\": \"%s\", \"threads\": %d, \"kv_type\": \"%s\", "
                    "\"n_gen\": %d, \"repetitions\": %d, \"batch\": [",
                    json_escape(model_path).c_str(), backend_name.c_str(), json_escape(engine.device().name).c_str(),
                    threads, kv_type_name(engine.options().kv_type), n_gen, repetitions);
        for (size_t i = 0; i < results.size(); ++i)
            std::printf("%s{\"sequences\": %d, \"batched\": %s, \"tok_s\": %.3f, \"tok_s_stddev\": %.3f}", i ? ", " : "",
                        results[i].sequences, results[i].batched ? "true" : "false", results[i].tok_s.mean,
                        results[i].tok_s.stddev);
        std::printf("]}\n");
        return 0;
    }
    std::printf("model: %s\nbackend: %s on %s, threads %d, KV %s; %d decode steps per sequence\n\n",
                engine.model().hparams().name.c_str(), backend_name.c_str(), engine.device().name, threads,
                kv_type_name(engine.options().kv_type), n_gen);
    std::printf("| %9s | %-18s | %16s | %14s | %s\n", "sequences", "steps", "aggregate t/s", "per sequence", "vs 1");
    std::printf("|-----------|--------------------|------------------|----------------|------\n");
    for (const BatchResult& r : results) {
        std::printf("| %9d | %-18s | %7.2f ± %6.2f | %14.2f | ", r.sequences,
                    r.batched ? "shared" : (r.sequences == 1 ? "alone" : "one at a time"), r.tok_s.mean, r.tok_s.stddev,
                    r.tok_s.mean / r.sequences);
        if (single > 0)
            std::printf("%.2fx\n", r.tok_s.mean / single);
        else
            std::printf("-\n");
    }
    return 0;
}

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
    CommonOptions common;
    ModelOptions model_options;
    int n_prompt = 512, n_gen = 128, n_depth = 0, repetitions = 3;
    std::string sequences, text, text_file;
    bool json = false;
    SpeculationOptions speculation;
    po::options_description desc("edgerun bench options");
    add_model_options(desc, model_options);
    desc.add_options()
        ("n-prompt,p", po::value(&n_prompt)->default_value(n_prompt), "prompt tokens to process (0: skip)")
        ("n-gen,n", po::value(&n_gen)->default_value(n_gen), "tokens to generate (0: skip)")
        ("n-depth,d", po::value(&n_depth)->default_value(n_depth), "tokens already in the cache before each test")
        ("repetitions,r", po::value(&repetitions)->default_value(repetitions), "runs of each test")
        ("sequences", po::value(&sequences),
         "instead: decode this many sequences together, -n tokens each (a list: 1,2,4,8,16), aggregate t/s")
        ("json", po::bool_switch(&json), "print one JSON object instead of the table")
        ("text", po::value(&text), "with a drafter: the user message whose reply is decoded")
        ("text-file", po::value(&text_file), "with a drafter: read the user message from this file");
    po::options_description draft_desc("speculative decoding (decode of a real prompt, plain and speculative side by side)");
    add_speculation_options(draft_desc, speculation);
    desc.add(draft_desc);
    if (!parse(with_long_draft_option(args), desc, common,
               "usage: edgerun bench -m MODEL [--backend B] [-p 512] [-n 128] [-d 0] [-r 3] [--sequences 1,2,4,8,16] [--json]"))
        return 0;
    if (n_prompt < 0 || n_gen < 0 || n_depth < 0 || repetitions < 1)
        throw Error("-p, -n and -d must be >= 0 and -r >= 1", ER_E_INVALID_ARGUMENT);
    const bool drafter = !speculation.model_draft.empty() || speculation.lookup > 0;
    if (!drafter && (!text.empty() || !text_file.empty()))
        throw Error("--text and --text-file are for bench with a drafter (-md or --lookup)", ER_E_INVALID_ARGUMENT);
    if (!sequences.empty()) {
        if (n_depth > 0) throw Error("-d measures one sequence; --sequences starts every sequence at position 0", ER_E_INVALID_ARGUMENT);
        const std::vector<int32_t> counts = parse_sequence_counts(sequences);
        if (n_gen < 1) throw Error("--sequences needs -n of at least 1", ER_E_INVALID_ARGUMENT);
        EngineOptions engine_options = resolve(model_options);
        if (engine_options.n_ctx == 0) engine_options.n_ctx = n_gen + 1;
        PluginRegistry registry = load_plugins(common);
        Engine engine(registry, model_options.model, engine_options);
        if (n_gen > engine.n_ctx()) throw Error("-n exceeds the context of " + std::to_string(engine.n_ctx()), ER_E_INVALID_ARGUMENT);
        return print_batch(engine, model_options.model, counts, n_gen, repetitions, json);
    }

    if (drafter) {
        if (!text_file.empty() && !text.empty())
            throw Error("--text and --text-file both give the message: give one", ER_E_INVALID_ARGUMENT);
        if (!text_file.empty()) text = read_text_file(text_file, "--text-file");
        if (text.empty()) throw Error("bench with a drafter needs --text or --text-file (a real prompt)", ER_E_INVALID_ARGUMENT);
        if (n_gen < 1) throw Error("bench with a drafter needs -n of at least 1", ER_E_INVALID_ARGUMENT);
        EngineOptions engine_options = resolve(model_options);
        PluginRegistry registry = load_plugins(common);
        Engine engine(registry, model_options.model, engine_options);
        return bench_speculative(registry, engine, speculation, text, n_gen, repetitions, json);
    }
    EngineOptions engine_options = resolve(model_options);
    const int n_test = std::max(n_prompt, n_gen);
    if (engine_options.n_ctx == 0) engine_options.n_ctx = n_depth + n_test + 1;
    PluginRegistry registry = load_plugins(common);
    Engine engine(registry, model_options.model, engine_options);
    if (int64_t(n_depth) + n_test > engine.n_ctx())
        throw Error("-d plus -p/-n exceed the context of " + std::to_string(engine.n_ctx()), ER_E_INVALID_ARGUMENT);

    auto runner = engine.new_runner();
    const int64_t n_vocab = runner->n_vocab();
    Pcg64 rng = Pcg64::from_seed(1234);

    // Warm-up: page the weights in and let the backend settle; not timed.
    runner->feed(random_tokens(rng, size_t(std::min(n_prompt > 0 ? n_prompt : 1, 32)), n_vocab));
    runner->feed_greedy(0);
    // The depth is filled once, untimed; each test rewinds to it, keeping the cache before it.
    if (n_depth > 0) {
        runner->rewind(0);
        runner->feed(random_tokens(rng, size_t(n_depth), n_vocab));
    }

    std::vector<double> pp_rates, ttft, tg_rates, step_times;
    for (int r = 0; r < repetitions; ++r) {
        if (n_prompt > 0) {
            runner->rewind(n_depth);
            auto prompt = random_tokens(rng, size_t(n_prompt), n_vocab);
            auto start = Clock::now();
            runner->feed(prompt);
            const double t = seconds_since(start);
            pp_rates.push_back(n_prompt / t);
            ttft.push_back(t);
        }
        if (n_gen > 0) {
            runner->rewind(n_depth);
            int32_t token = int32_t(rng.next() % uint64_t(n_vocab));
            auto start = Clock::now();
            for (int i = 0; i < n_gen; ++i) {
                auto step = Clock::now();
                token = runner->feed_greedy(token);
                step_times.push_back(seconds_since(step));
            }
            tg_rates.push_back(n_gen / seconds_since(start));
        }
    }

    const Model& model = engine.model();
    Graph decode = model.build_graph(1);
    // Generation reads a KV cache that grows from n_depth to n_depth + n_gen: on average half of the growth.
    const StepTraffic traffic =
        decode_traffic(decode, model.weights(), int64_t(n_depth) + std::max(n_gen, 1) / 2, engine_options.kv_type);
    uint64_t model_bytes = 0;
    for (const auto& t : model.weights().tensors()) model_bytes += t.nbytes;
    const Stats pp = stats_of(pp_rates), tg = stats_of(tg_rates), first = stats_of(ttft);
    const double gbps = double(traffic.total()) * tg.mean / 1e9;
    const std::string backend_name(engine.backend().plugin().name());

    if (json) {
        std::printf(
            "{\"model\": \"%s\", \"model_bytes\": %llu, \"backend\": \"%s\", \"device\": \"%s\", \"threads\": %d, "
            "\"kv_type\": \"%s\", \"n_prompt\": %d, \"n_gen\": %d, \"n_depth\": %d, \"repetitions\": %d, "
            "\"pp_tok_s\": %.3f, \"pp_tok_s_stddev\": %.3f, \"ttft_ms\": %.3f, "
            "\"tg_tok_s\": %.3f, \"tg_tok_s_stddev\": %.3f, \"itl_p50_ms\": %.4f, \"itl_p99_ms\": %.4f, "
            "\"bytes_per_token\": %llu, \"achieved_gb_s\": %.3f, "
            "\"pp_tok_s_samples\": %s, \"ttft_ms_samples\": %s, \"tg_tok_s_samples\": %s}\n",
            json_escape(model_options.model).c_str(), (unsigned long long)model_bytes, backend_name.c_str(),
            json_escape(engine.device().name).c_str(), engine_options.n_threads, kv_type_name(engine_options.kv_type),
            n_prompt, n_gen, n_depth, repetitions, pp.mean, pp.stddev, first.mean * 1e3, tg.mean, tg.stddev,
            percentile(step_times, 50) * 1e3, percentile(step_times, 99) * 1e3, (unsigned long long)traffic.total(),
            gbps, json_array(pp_rates, 1).c_str(), json_array(ttft, 1e3).c_str(), json_array(tg_rates, 1).c_str());
        return 0;
    }
    std::printf("model: %s (%s, %.1f MiB)\nbackend: %s on %s, threads %d, KV %s\n\n", model.hparams().name.c_str(),
                model.hparams().arch.c_str(), double(model_bytes) / (1 << 20), backend_name.c_str(),
                engine.device().name, engine_options.n_threads, kv_type_name(engine_options.kv_type));
    const std::string at = n_depth > 0 ? " @ d" + std::to_string(n_depth) : "";
    std::printf("| %-16s | %14s | %s\n", "test", "t/s", "details");
    std::printf("|------------------|----------------|--------\n");
    if (n_prompt > 0)
        std::printf("| %-16s | %7.2f ± %5.2f | time to first token %.1f ms\n", ("pp" + std::to_string(n_prompt) + at).c_str(),
                    pp.mean, pp.stddev, first.mean * 1e3);
    if (n_gen > 0)
        std::printf("| %-16s | %7.2f ± %5.2f | inter-token p50 %.2f ms, p99 %.2f ms; %.1f MiB/token, %.2f GB/s\n",
                    ("tg" + std::to_string(n_gen) + at).c_str(), tg.mean, tg.stddev, percentile(step_times, 50) * 1e3, percentile(step_times, 99) * 1e3,
                    double(traffic.total()) / (1 << 20), gbps);
    return 0;
}

}  // namespace edgerun::cli
