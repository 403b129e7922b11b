// A whole synthesized model file: a preset's tensor table (synth_presets.hpp) typed by a
// file type's recipe (model_recipe.hpp), its vocabulary (synth_vocab.hpp) and weights that
// behave (synth_weights.hpp), written through a format plugin's writer (model_writer.hpp).
// `edgerun synth` and the conformance suite's model matrix both make their files here, so
// a seed gives the same bytes whichever of them asks.
#pragma once

#include <edgerun/authoring/model_recipe.hpp>
#include <edgerun/authoring/synth_presets.hpp>
#include <edgerun/authoring/synth_weights.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace edgerun {
class PluginRegistry;
}

namespace edgerun::authoring {

struct SynthSpec {
    Preset preset;         // n_vocab may be cut below the real model's (a test-only deviation)
    int64_t n_layer = 0;   // 0: the preset's
    FileTypeInfo file_type{FileType::MOSTLY_Q4_K_M, "Q4_K_M", DType::Q4_K};
    uint64_t seed = 1;
    Stress stress = Stress::None;
    int threads = 1;
};

struct SynthSummary {
    size_t n_tensors = 0;
    uint64_t n_weights = 0;
    uint64_t data_bytes = 0;  // tensor data, without metadata
};

// The type the recipe gives each of `tensors` (a preset cut to `n_layer` layers).
std::vector<int32_t> synth_tensor_types(const Preset& preset, const std::vector<SynthTensor>& tensors,
                                        int64_t n_layer, FileType file_type);
// Tensor data bytes of `tensors` stored as `types`.
uint64_t tensor_data_bytes(const std::vector<SynthTensor>& tensors, const std::vector<int32_t>& types);

// Writes the model to `path` through the format plugin that writes such files; the file
// appears only once complete. Throws Error, also when an InterruptGuard saw Ctrl-C.
SynthSummary synthesize(const PluginRegistry& registry, const SynthSpec& spec, const std::string& path);

}  // namespace edgerun::authoring
