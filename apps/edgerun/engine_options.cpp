#include "engine_options.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

namespace edgerun::cli {
namespace {
// Past this a thread pool only adds contention; llama.cpp caps at the same figure.
constexpr int kMaxThreads = 512;
}  // namespace

void add_model_options(po::options_description& desc, ModelOptions& options) {
    desc.add_options()
        ("model,m", po::value(&options.model), "GGUF model file (default: SmolLM2-135M-Instruct, see scripts/fetch-model.sh)")
        ("backend", po::value(&options.engine.backend), "backend plugin name (default: the best that runs the model)")
        ("backend-options", po::value(&options.engine.backend_options), "backend-specific key=value,...")
        ("threads,t", po::value(&options.engine.n_threads)->default_value(0), "host threads (0: all cores)")
        ("ctx-size,c", po::value(&options.engine.n_ctx)->default_value(0), "context size in tokens (0: the model's, at most 4096)")
        ("batch-size,b", po::value(&options.engine.n_batch)->default_value(options.engine.n_batch), "most prompt tokens per prefill step")
        ("kv-type", po::value(&options.kv_type)->default_value(options.kv_type), "KV cache type: f32, f16 or q8");
}

std::string default_model_path() {
    std::filesystem::path cache;
    if (const char* dir = std::getenv("EDGERUN_CACHE"); dir && *dir)
        cache = dir;
    else if (const char* home = std::getenv("HOME"); home && *home)
        cache = std::filesystem::path(home) / ".cache" / "edgerun";
    std::filesystem::path model = cache / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";
    std::error_code ec;
    if (cache.empty() || !std::filesystem::is_regular_file(model, ec))
        throw Error("no model given (-m) and the default model is not in the cache (" + model.string() +
                        "): run scripts/fetch-model.sh",
                    ER_E_INVALID_ARGUMENT);
    return model.string();
}

EngineOptions resolve(ModelOptions& options) {
    if (options.model.empty()) options.model = default_model_path();
    if (options.engine.n_threads < 0) throw Error("--threads must be >= 0", ER_E_INVALID_ARGUMENT);
    if (options.engine.n_threads > kMaxThreads)
        throw Error("--threads " + std::to_string(options.engine.n_threads) + " is more than edgerun starts (at most " +
                        std::to_string(kMaxThreads) + "; this machine has " +
                        std::to_string(std::thread::hardware_concurrency()) + " hardware threads)",
                    ER_E_INVALID_ARGUMENT);
    if (const unsigned cores = std::thread::hardware_concurrency(); cores > 0 && unsigned(options.engine.n_threads) > cores)
        spdlog::warn("--threads {} is more than the {} hardware threads here: expect it to run slower, not faster",
                     options.engine.n_threads, cores);
    if (options.engine.n_ctx < 0) throw Error("--ctx-size must be >= 0", ER_E_INVALID_ARGUMENT);
    if (options.engine.n_batch < 1) throw Error("--batch-size must be at least 1", ER_E_INVALID_ARGUMENT);
    options.engine.kv_type = parse_kv_type(options.kv_type);
    return options.engine;
}

}  // namespace edgerun::cli
