// cpu_ref_bench: prefill and decode speed of the cpu_ref plugin on a real GGUF model,
// for comparison with llama.cpp (llama_cpp_bench.py, same threads and token counts).
// Like `edgerun bench`, plus tokens per CPU-second, which say more than wall time on a
// machine shared with other jobs.
//
//   cpu_ref_bench MODEL.gguf [--threads 2] [--prompt 512] [--gen 128] [--repeat 3]
//                 [--kv f32|f16|q8] [--options isa=generic]
//
// The model is opened by the formats_gguf plugin, the graphs come from the core's
// architecture builders, the steps from edgerun::Runner.
#include <edgerun/kv_type.hpp>
#include <edgerun/model.hpp>
#include <edgerun/plugin_registry.hpp>
#include <edgerun/runner.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace edgerun;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// CPU seconds used by the whole process (all threads): on a machine shared with other
// jobs, tokens per CPU second says more about the code than wall time does.
double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) try {
    if (argc < 2) {
        std::fprintf(stderr, "usage: cpu_ref_bench MODEL.gguf [--threads N] [--prompt N] [--gen N] [--repeat N] "
                             "[--kv f32|f16|q8] [--options key=value,...]\n");
        return 2;
    }
    const std::string path = argv[1];
    int threads = 2, n_prompt = 512, n_gen = 128, repeat = 3;
    int32_t kv_type = ER_KV_F16;
    std::string options;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--threads") threads = std::stoi(value);
        else if (flag == "--prompt") n_prompt = std::stoi(value);
        else if (flag == "--gen") n_gen = std::stoi(value);
        else if (flag == "--repeat") repeat = std::stoi(value);
        else if (flag == "--kv") kv_type = edgerun::kv_type_from_name(value).value_or(ER_KV_F16);
        else if (flag == "--options") options = value;
        else throw std::runtime_error("unknown flag " + flag);
    }

    PluginRegistry registry;
    registry.scan_directory(EDGERUN_BUILD_PLUGIN_DIR);
    const Model file = Model::open(registry, path);
    const HParams& hp = file.hparams();
    const WeightTable& weights = file.weights();
    const Plugin* plugin = registry.find(ER_PLUGIN_BACKEND, "cpu_ref");
    if (!plugin) throw std::runtime_error("cpu_ref plugin not found");
    auto bp = sized<er_backend_params>();
    bp.n_threads = threads;
    bp.options = options.empty() ? nullptr : options.c_str();
    Backend backend(*plugin, bp);
    auto mp = sized<er_model_params>();
    mp.weights = weights.tensors().data();
    mp.n_weights = weights.size();
    BackendModel model(backend, mp);

    const int32_t n_batch = std::max(1, n_prompt);
    auto cp = sized<er_context_params>();
    cp.n_ctx = n_prompt + n_gen + 16;
    cp.n_batch = n_batch;
    cp.kv_type = kv_type;
    cp.n_layer = int32_t(hp.n_layer);
    cp.n_head_kv = int32_t(hp.n_head_kv);
    cp.head_dim_k = int32_t(hp.head_dim_k);
    cp.head_dim_v = int32_t(hp.head_dim_v);
    const Graph prefill = file.build_graph(n_batch), decode = file.build_graph(1);

    Runner runner(model, cp, prefill, decode);
    std::vector<int32_t> prompt(n_prompt);
    for (int i = 0; i < n_prompt; ++i) prompt[i] = int32_t((uint64_t(i) * 7919 + 13) % uint64_t(hp.n_vocab));
    double best_prefill = 0, best_decode = 0, best_prefill_cpu = 0, best_decode_cpu = 0;
    for (int rep = 0; rep < repeat; ++rep) {
        runner.rewind(0);
        const double t0 = now(), c0 = cpu_now();
        runner.feed(prompt);
        const double t1 = now(), c1 = cpu_now();
        int32_t token = 1;
        for (int i = 0; i < n_gen; ++i) token = runner.feed_greedy(token);
        const double t2 = now(), c2 = cpu_now();
        if (n_prompt > 0) {
            best_prefill = std::max(best_prefill, n_prompt / (t1 - t0));
            best_prefill_cpu = std::max(best_prefill_cpu, n_prompt / (c1 - c0));
        }
        if (n_gen > 0) {
            best_decode = std::max(best_decode, n_gen / (t2 - t1));
            best_decode_cpu = std::max(best_decode_cpu, n_gen / (c2 - c1));
        }
    }
    std::printf("cpu_ref threads=%d kv=%s prefill %d tok: %.1f tok/s, decode %d tok: %.1f tok/s (best of %d; "
                "per CPU-second: prefill %.1f, decode %.1f)\n",
                threads, edgerun::kv_type_name(kv_type), n_prompt, best_prefill,
                n_gen, best_decode, repeat, best_prefill_cpu, best_decode_cpu);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "cpu_ref_bench: %s\n", e.what());
    return 1;
}
