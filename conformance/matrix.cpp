#include "matrix.hpp"

#include <edgerun/host_api.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

namespace edgerun::conformance {

namespace {

const std::vector<std::string> kTypes = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_M", "Q5_K_M", "Q6_K"};
const std::vector<std::string> kStressVariants = {"attention-scale", "small-activations"};

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
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

std::string default_edgerun_binary() {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto next = self.parent_path() / "edgerun";
        if (std::filesystem::exists(next, ec)) return next.string();
    }
    return "edgerun";
}

std::vector<ModelEntry> synthesize(const MatrixSpec& spec, const std::string& edgerun, const std::string& dir) {
    std::vector<ModelEntry> out;
    if (spec.models.empty()) return out;
    std::filesystem::create_directories(dir);
    for (const auto& [preset, type, entry_layers, stress] : spec.models) {
        const int32_t layers = entry_layers > 0 ? entry_layers : spec.layers;
        const std::string file = dir + "/" + preset + "-" + type + "-l" + std::to_string(layers) + "-v" +
                                 std::to_string(spec.vocab) + (stress.empty() ? "" : "-" + stress) + ".gguf";
        if (!std::filesystem::exists(file)) {
            const std::string command = shell_quote(edgerun) + " synth --preset " + shell_quote(preset) + " --type " +
                                        shell_quote(type) + " --layers " + std::to_string(layers) + " --vocab " +
                                        std::to_string(spec.vocab) +
                                        (stress.empty() ? "" : " --stress " + shell_quote(stress)) + " --seed 1 -o " +
                                        shell_quote(file) + " 2>&1";
            const std::string what = preset + " " + type + (stress.empty() ? "" : " (stress " + stress + ")");
            std::fprintf(stderr, "conformance: synthesizing %s\n", what.c_str());
            const int status = std::system(command.c_str());
            if (status != 0 || !std::filesystem::exists(file))
                throw Error("could not synthesize " + what + " (" + command + " exited with " +
                            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
        }
        out.push_back({file, true});
    }
    return out;
}

}  // namespace edgerun::conformance
