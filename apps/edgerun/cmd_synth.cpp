// edgerun synth: a model file with the exact tensor names, shapes, types and metadata of
// a llama.cpp conversion of a real model (Qwen3, Llama 3.2, SmolLM2), filled with random
// weights that behave (authoring/synth_weights.hpp). For performance work on models this
// machine cannot download, and for checking the architecture graphs against llama.cpp.
#include "cli.hpp"
#include "commands.hpp"

#include <edgerun/authoring/synthesize.hpp>
#include <edgerun/authoring/tensor_jobs.hpp>
#include <edgerun/interrupt.hpp>

#include <chrono>
#include <cstdio>
#include <functional>

namespace edgerun::cli {

namespace {

using authoring::Preset;

void list_presets() {
    std::printf("%-13s %-6s %6s %6s %5s %5s %5s %6s %7s %8s %9s  %s\n", "PRESET", "ARCH", "EMBD", "LAYERS", "HEADS",
                "KV", "HDIM", "FF", "VOCAB", "ROPE", "Q4_K_M", "NOTES");
    for (const Preset& p : authoring::presets()) {
        const auto tensors = authoring::preset_tensors(p, p.n_layer);
        const auto types = authoring::synth_tensor_types(p, tensors, p.n_layer, authoring::FileType::MOSTLY_Q4_K_M);
        std::string notes = "tied embeddings";
        if (p.qk_norm) notes += ", q/k norm";
        if (p.llama3_rope_factor > 0) notes += ", llama3 rope scaling x" + std::to_string(int(p.llama3_rope_factor));
        std::printf("%-13s %-6s %6lld %6lld %5lld %5lld %5lld %6lld %7lld %8.0e %7.2f GB  %s\n", std::string(p.name).c_str(),
                    std::string(p.arch).c_str(), (long long)p.n_embd, (long long)p.n_layer, (long long)p.n_head,
                    (long long)p.n_head_kv, (long long)p.head_dim, (long long)p.n_ff, (long long)p.n_vocab,
                    double(p.rope_base), double(authoring::tensor_data_bytes(tensors, types)) / 1e9, notes.c_str());
    }
}

// A notifier for a count given on the command line: 0 or less is refused by name, where
// it used to mean "the real model's" silently (not given, the count stays -1: that).
std::function<void(int64_t)> at_least_one(const char* option) {
    return [option](int64_t n) {
        if (n < 1) throw Error(std::string(option) + " must be at least 1 (got " + std::to_string(n) + ")", ER_E_INVALID_ARGUMENT);
    };
}

}  // namespace

int cmd_synth(const std::vector<std::string>& args) {
    CommonOptions common;
    std::string preset_name, type_name = "Q4_K_M", output, stress_name = "none";
    int64_t layers = -1, vocab_size = -1;  // -1: not given, the real model's
    uint64_t seed = 1;
    int threads = authoring::default_thread_count();
    bool list = false;
    po::options_description desc("edgerun synth options");
    desc.add_options()
        ("preset", po::value(&preset_name), ("model to imitate: " + authoring::preset_names()).c_str())
        ("type", po::value(&type_name)->default_value(type_name), ("file type: " + authoring::file_type_names()).c_str())
        ("output,o", po::value(&output), "model file to write (GGUF v3)")
        ("layers", po::value(&layers)->notifier(at_least_one("--layers")), "number of layers (default: the real model's)")
        ("vocab", po::value(&vocab_size)->notifier(at_least_one("--vocab")), "vocabulary size (default: the real model's). A test-only deviation from the real "
                                     "shape: a small vocabulary keeps token_embd small for quick conformance runs")
        ("seed", po::value(&seed)->default_value(seed), "random seed: the same seed gives the same file")
        ("stress", po::value(&stress_name)->default_value(stress_name),
         ("a numerically demanding variant for conformance tests (see synth_weights.hpp): none, " + authoring::stress_names()).c_str())
        ("threads,t", po::value(&threads)->default_value(threads), "worker threads")
        ("list", po::bool_switch(&list), "print the presets and their shapes");
    if (!parse(args, desc, common,
               "usage: edgerun synth --preset NAME --type Q4_K_M|Q6_K|Q8_0|F16|... -o OUT.gguf [--layers N] [--seed S]\n"
               "                     [--vocab N] [--stress attention-scale|small-activations]\n"
               "       edgerun synth --list"))
        return 0;
    if (list) {
        list_presets();
        return 0;
    }
    if (preset_name.empty()) throw Error("--preset is required; one of " + authoring::preset_names(), ER_E_INVALID_ARGUMENT);
    const Preset* preset = authoring::find_preset(preset_name);
    if (!preset) throw Error("--preset " + preset_name + ": unknown; one of " + authoring::preset_names(), ER_E_INVALID_ARGUMENT);
    const auto file_type = authoring::file_type_from_name(type_name);
    if (!file_type) throw Error("--type " + type_name + ": unknown; one of " + authoring::file_type_names(), ER_E_INVALID_ARGUMENT);
    if (output.empty()) throw Error("-o OUT is required", ER_E_INVALID_ARGUMENT);
    const auto stress = authoring::stress_from_name(stress_name);
    if (!stress) throw Error("--stress " + stress_name + ": unknown; one of none, " + authoring::stress_names(), ER_E_INVALID_ARGUMENT);
    if (layers < 0) layers = preset->n_layer;
    if (layers < 1 || layers > 1024) throw Error("--layers must be between 1 and 1024", ER_E_INVALID_ARGUMENT);
    if (threads < 1) throw Error("--threads must be at least 1", ER_E_INVALID_ARGUMENT);
    Preset reduced = *preset;
    if (vocab_size >= 0) {
        if (vocab_size < 4096 || vocab_size > preset->n_vocab)
            throw Error("--vocab must be between 4096 and the real " + std::to_string(preset->n_vocab), ER_E_INVALID_ARGUMENT);
        reduced.n_vocab = vocab_size;
        preset = &reduced;
    }

    authoring::SynthSpec spec;
    spec.preset = *preset;
    spec.n_layer = layers;
    spec.file_type = *file_type;
    spec.seed = seed;
    spec.stress = *stress;
    spec.threads = threads;

    const auto start = std::chrono::steady_clock::now();
    PluginRegistry registry = load_plugins(common);
    InterruptGuard interrupt_guard;
    const authoring::SynthSummary made = authoring::synthesize(registry, spec, output);

    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "synth: %s%s %s, %lld layers, seed %llu -> %s: %zu tensors, %.1f M weights, %.2f MiB, %.1f s\n",
                 std::string(preset->name).c_str(),
                 *stress == authoring::Stress::None ? "" : (" (stress " + std::string(authoring::stress_name(*stress)) + ")").c_str(),
                 std::string(file_type->name).c_str(), (long long)layers,
                 (unsigned long long)seed, output.c_str(), made.n_tensors, double(made.n_weights) / 1e6,
                 double(made.data_bytes) / (1 << 20), seconds);
    return 0;
}

}  // namespace edgerun::cli
