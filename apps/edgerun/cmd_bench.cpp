// edgerun bench: prompt processing and generation throughput in the manner of
// llama-bench (random tokens, repetitions, mean and standard deviation), plus time to
// first token, inter-token latency percentiles, and the bandwidth the decode achieves.
// -d D runs each test with D tokens already in the cache, as llama-bench's -d does:
// "decode at context D" is tg with D tokens cached (bench/compare_llamacpp_gpu.py relies on
// both tools meaning the same).
#include "cli.hpp"
#include "commands.hpp"
#include "engine_options.hpp"

#include <edgerun/random.hpp>
#include <edgerun/traffic.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
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

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
    CommonOptions common;
    ModelOptions model_options;
    int n_prompt = 512, n_gen = 128, n_depth = 0, repetitions = 3;
    bool json = false;
    po::options_description desc("edgerun bench options");
    add_model_options(desc, model_options);
    desc.add_options()
        ("n-prompt,p", po::value(&n_prompt)->default_value(n_prompt), "prompt tokens to process (0: skip)")
        ("n-gen,n", po::value(&n_gen)->default_value(n_gen), "tokens to generate (0: skip)")
        ("n-depth,d", po::value(&n_depth)->default_value(n_depth), "tokens already in the cache before each test")
        ("repetitions,r", po::value(&repetitions)->default_value(repetitions), "runs of each test")
        ("json", po::bool_switch(&json), "print one JSON object instead of the table");
    if (!parse(args, desc, common, "usage: edgerun bench -m MODEL [--backend B] [-p 512] [-n 128] [-d 0] [-r 3] [--json]"))
        return 0;
    if (n_prompt < 0 || n_gen < 0 || n_depth < 0 || repetitions < 1)
        throw Error("-p, -n and -d must be >= 0 and -r >= 1", ER_E_INVALID_ARGUMENT);

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
