// The model matrix: synthesized presets (every architecture, every weight type the
// synthesizer writes, a few layers, a reduced vocabulary) made by the authoring library
// (the same files `edgerun synth` writes) and cached by name, plus any real model files
// given.
#pragma once

#include "model_suite.hpp"

#include <string>
#include <vector>

namespace edgerun {
class PluginRegistry;
}

namespace edgerun::conformance {

struct MatrixEntry {
    std::string preset, type;
    int32_t layers = 0;  // 0: the spec's
    std::string stress;  // `edgerun synth --stress` variant; empty: the plain model
};

struct MatrixSpec {
    std::vector<MatrixEntry> models;
    int32_t layers = 2;
    int32_t vocab = 4096;  // a test-only deviation from the real models' vocabularies
};

// "ci": every architecture (llama as SmolLM2, qwen2, qwen3) x every synthesizable type,
// plus Llama 3.2's rope scaling (one layer of Q8_0: its layers are 4x SmolLM2's), plus the
// stress variants of Qwen3 Q4_K_M; "full": every preset x every type, and every stress
// variant of every preset in Q4_K_M; "none": no synthesized model.
MatrixSpec named_matrix(const std::string& name);
// The product of presets and file types, and of each stress variant named (also a product).
MatrixSpec product_matrix(const std::vector<std::string>& presets, const std::vector<std::string>& types,
                          const std::vector<std::string>& stresses = {});
// The stress variants `edgerun synth --stress` makes (see authoring/include/edgerun/authoring/synth_weights.hpp):
// "attention-scale" (attention scores past where exp overflows), "small-activations"
// (a residual stream whose mean square is comparable to RMSNorm's epsilon).
const std::vector<std::string>& stress_variants();

// Makes whatever is not in `dir` yet (file names say preset, type, layers and vocabulary;
// seed 1), writing through the format plugins of `registry`; returns the files in matrix
// order.
std::vector<ModelEntry> synthesize(const PluginRegistry& registry, const MatrixSpec& spec, const std::string& dir);

}  // namespace edgerun::conformance
