#include "matrix.hpp"

#include <edgerun/authoring/synthesize.hpp>
#include <edgerun/authoring/tensor_jobs.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/interrupt.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace edgerun::conformance {

namespace {

const std::vector<std::string> kTypes = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_M", "Q5_K_M", "Q6_K"};
const std::vector<std::string> kStressVariants = {"attention-scale", "small-activations"};

// What `edgerun synth --preset P --type T --layers L --vocab V --stress S --seed 1` makes.
authoring::SynthSpec synth_spec(const MatrixEntry& entry, int32_t layers, int32_t vocab) {
    const authoring::Preset* preset = authoring::find_preset(entry.preset);
    if (!preset)
        throw Error("preset " + entry.preset + ": unknown; one of " + authoring::preset_names(), ER_E_INVALID_ARGUMENT);
    const auto file_type = authoring::file_type_from_name(entry.type);
    if (!file_type)
        throw Error("type " + entry.type + ": unknown; one of " + authoring::file_type_names(), ER_E_INVALID_ARGUMENT);
    const auto stress = entry.stress.empty() ? authoring::Stress::None : authoring::stress_from_name(entry.stress);
    if (!stress) throw Error("stress " + entry.stress + ": unknown; one of " + authoring::stress_names(), ER_E_INVALID_ARGUMENT);
    if (layers < 1 || layers > 1024) throw Error("--layers must be between 1 and 1024", ER_E_INVALID_ARGUMENT);
    if (vocab < 4096 || vocab > preset->n_vocab)
        throw Error("--vocab must be between 4096 and " + entry.preset + "'s " + std::to_string(preset->n_vocab),
                    ER_E_INVALID_ARGUMENT);
    authoring::SynthSpec spec;
    spec.preset = *preset;
    spec.preset.n_vocab = vocab;
    spec.n_layer = layers;
    spec.file_type = *file_type;
    spec.seed = 1;
    spec.stress = *stress;
    spec.threads = authoring::default_thread_count();
    return spec;
}

}  // namespace

const std::vector<std::string>& stress_variants() { return kStressVariants; }

MatrixSpec product_matrix(const std::vector<std::string>& presets, const std::vector<std::string>& types,
                          const std::vector<std::string>& stresses) {
    for (const auto& s : stresses)
        if (std::find(kStressVariants.begin(), kStressVariants.end(), s) == kStressVariants.end())
            throw Error("--stress " + s + ": unknown; one of attention-scale, small-activations", ER_E_INVALID_ARGUMENT);
    MatrixSpec spec;
    for (const auto& p : presets)
        for (const auto& t : types) spec.models.push_back({p, t, 0, ""});
    for (const auto& s : stresses)
        for (const auto& p : presets)
            for (const auto& t : types) spec.models.push_back({p, t, 0, s});
    return spec;
}

MatrixSpec named_matrix(const std::string& name) {
    if (name == "none") return {};
    if (name == "full") {
        const std::vector<std::string> presets = {"qwen3-0.6b", "qwen2.5-0.5b", "llama3.2-1b", "smollm2-135m"};
        MatrixSpec spec = product_matrix(presets, kTypes);
        for (const auto& stress : product_matrix(presets, {"Q4_K_M"}, kStressVariants).models)
            if (!stress.stress.empty()) spec.models.push_back(stress);
        return spec;
    }
    if (name != "ci") throw Error("--matrix " + name + ": one of ci, full, none", ER_E_INVALID_ARGUMENT);
    MatrixSpec spec = product_matrix({"smollm2-135m", "qwen2.5-0.5b", "qwen3-0.6b"}, kTypes);
    // Two layers: with one, its logits span ~127 and KL says nothing about a fault.
    spec.models.push_back({"llama3.2-1b", "Q8_0", 2, ""});
    // Qwen3 because it has both regimes' ingredients: q/k norm gains (real checkpoints
    // reach large attention scores through them) and an RMSNorm epsilon of 1e-6.
    for (const auto& stress : kStressVariants) spec.models.push_back({"qwen3-0.6b", "Q4_K_M", 0, stress});
    return spec;
}

std::vector<ModelEntry> synthesize(const PluginRegistry& registry, const MatrixSpec& spec, const std::string& dir) {
    std::vector<ModelEntry> out;
    if (spec.models.empty()) return out;
    std::filesystem::create_directories(dir);
    for (const MatrixEntry& entry : spec.models) {
        const int32_t layers = entry.layers > 0 ? entry.layers : spec.layers;
        const std::string file = dir + "/" + entry.preset + "-" + entry.type + "-l" + std::to_string(layers) + "-v" +
                                 std::to_string(spec.vocab) + (entry.stress.empty() ? "" : "-" + entry.stress) + ".gguf";
        if (!std::filesystem::exists(file)) {
            const std::string what = entry.preset + " " + entry.type + (entry.stress.empty() ? "" : " (stress " + entry.stress + ")");
            std::fprintf(stderr, "conformance: synthesizing %s\n", what.c_str());
            const InterruptGuard interrupt_guard;  // Ctrl-C leaves no half-written file behind
            try {
                authoring::synthesize(registry, synth_spec(entry, layers, spec.vocab), file);
            } catch (const Error& e) {
                throw Error("could not synthesize " + what + ": " + e.what(), e.code());
            }
        }
        out.push_back({file, true});
    }
    return out;
}

}  // namespace edgerun::conformance
