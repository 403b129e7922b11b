// The small synthesized models (cpu_ref) and samplers the speculative tests share.
#pragma once

#include "../build_plugins.hpp"

#include <edgerun/authoring/synthesize.hpp>
#include <edgerun/engine.hpp>
#include <edgerun/generate.hpp>
#include <edgerun/plugin_registry.hpp>
#include <edgerun/random.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace edgerun::test {

constexpr int64_t kVocab = 4096;

// A small SmolLM2-shaped model; the same seed gives the same weights whatever the type,
// so a Q4_0 file of the F32 target's seed is a draft close to it, as a real one is.
inline std::string synth_model(const char* type, uint64_t seed, int64_t vocab = kVocab) {
    const std::string dir = EDGERUN_TEST_TMP "/speculative";
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/smollm2-2layers-" + type + "-s" + std::to_string(seed) + "-v" + std::to_string(vocab) + ".gguf";
    if (std::filesystem::exists(path)) return path;
    authoring::SynthSpec spec;
    spec.preset = *authoring::find_preset("smollm2-135m");
    spec.preset.n_vocab = vocab;
    spec.n_layer = 2;
    spec.file_type = *authoring::file_type_from_name(type);
    spec.seed = seed;
    // Tests may run in parallel: each writes its own file and renames it into place.
    const std::string part = path.substr(0, path.size() - 5) + ".part" + std::to_string(::getpid()) + ".gguf";
    authoring::synthesize(build_plugins(), spec, part);
    std::filesystem::rename(part, path);
    return path;
}

struct Loaded {
    std::unique_ptr<Engine> engine;
    text::Vocab vocab;
    std::unique_ptr<text::Tokenizer> tokenizer;
};

inline Loaded load(const std::string& path) {
    EngineOptions options;
    options.backend = "cpu_ref";
    options.n_threads = 1;
    options.n_ctx = 96;
    options.n_batch = 16;
    Loaded out;
    out.engine = std::make_unique<Engine>(build_plugins(), path, options);
    out.vocab = text::Vocab::from_file(out.engine->model().file());
    out.tokenizer = std::make_unique<text::Tokenizer>(out.vocab);
    return out;
}

inline Sampler make_sampler(float temperature, int32_t top_k, uint64_t seed) {
    er_sampler_params p{};
    p.struct_size = sizeof p;
    p.temperature = temperature;
    p.top_k = top_k;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.penalty_last_n = 0;
    p.seed = seed;
    return Sampler(*build_plugins().find(ER_PLUGIN_SAMPLER, "sampler"), p, int32_t(kVocab));
}

inline std::vector<int32_t> some_prompt(uint64_t seed, size_t n) {
    Pcg64 rng = Pcg64::from_seed(seed);
    std::vector<int32_t> out(n);
    // Past the first ids, where a synthesized vocabulary keeps its special tokens.
    for (auto& t : out) t = int32_t(16 + rng.next() % uint64_t(kVocab - 16));
    return out;
}

// A prompt that repeats itself, so that the lookup drafter finds matches.
inline std::vector<int32_t> copy_heavy_prompt() {
    std::vector<int32_t> part = some_prompt(5, 12);
    std::vector<int32_t> out;
    for (int i = 0; i < 3; ++i) out.insert(out.end(), part.begin(), part.end());
    return out;
}

// The distribution tests: two sampled tokens over kRuns seeds, at a temperature and top-k
// that spread the outcomes. The significance of their chi-squared tests: a correct
// implementation fails one once in a thousand seed sets; the runs use fixed seeds, so the
// outcome is the same every time.
constexpr float kTemperature = 2.0f;
constexpr int32_t kTopK = 4;
constexpr int kRuns = 2000;
constexpr double kSignificance = 1e-3;
using Pair = std::pair<int32_t, int32_t>;

inline GenerationSettings settings_for(int32_t n) {
    GenerationSettings s;
    s.n_predict = n;
    s.ignore_eos = true;
    return s;
}

}  // namespace edgerun::test
