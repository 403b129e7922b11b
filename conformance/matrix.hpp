// The model matrix: synthesized presets (every architecture, every weight type the
// synthesizer writes, a few layers, a reduced vocabulary) made with `edgerun synth` and
// cached by name, plus any real model files given.
#pragma once

#include "model_suite.hpp"

#include <string>
#include <vector>

namespace edgerun::conformance {

struct MatrixEntry {
    std::string preset, type;
    int32_t layers = 0;  // 0: the spec's
};

struct MatrixSpec {
    std::vector<MatrixEntry> models;
    int32_t layers = 2;
    int32_t vocab = 4096;  // a test-only deviation from the real models' vocabularies
};

// "ci": every architecture (llama as SmolLM2, qwen2, qwen3) x every synthesizable type,
// plus Llama 3.2's rope scaling (one layer of Q8_0: its layers are 4x SmolLM2's); "full": every preset x every type;
// "none": no synthesized model.
MatrixSpec named_matrix(const std::string& name);
// The product of presets and file types.
MatrixSpec product_matrix(const std::vector<std::string>& presets, const std::vector<std::string>& types);

// Makes whatever is not in `dir` yet (file names say preset, type, layers and vocabulary)
// by running `edgerun synth` at `edgerun`; returns the files in matrix order.
std::vector<ModelEntry> synthesize(const MatrixSpec& spec, const std::string& edgerun, const std::string& dir);

// The edgerun binary next to this program, else "edgerun" from PATH.
std::string default_edgerun_binary();

}  // namespace edgerun::conformance
