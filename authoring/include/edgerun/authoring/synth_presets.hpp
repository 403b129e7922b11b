// The models `edgerun synth` imitates: the shapes, metadata keys and tensor names a
// llama.cpp conversion (convert_hf_to_gguf.py) of the real checkpoint has, so a
// synthesized file exercises exactly the code paths and byte counts the real one would.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::authoring {

enum class VocabStyle { Qwen2, Llama3, SmolLM };

struct Preset {
    std::string_view name;        // what users type: "qwen3-4b"
    std::string_view arch;        // general.architecture
    std::string_view model_name;  // "Qwen3 4B"
    std::string_view basename;    // general.basename
    std::string_view size_label;  // general.size_label
    int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx_train;
    float rope_base, rms_eps;
    bool qk_norm;          // per-head q/k RMSNorm (qwen3)
    bool head_dim_keys;    // attention.key_length / value_length (config has head_dim)
    bool llama_extras;     // <arch>.vocab_size and rope.dimension_count (LlamaModel writes them)
    float llama3_rope_factor;  // > 0: llama3 RoPE scaling, baked into rope_freqs.weight
    VocabStyle vocab;
    bool qkv_bias = false;     // q/k/v projection biases (qwen2)
};

const std::vector<Preset>& presets();
// nullptr when unknown.
const Preset* find_preset(std::string_view name);
std::string preset_names();  // "qwen3-0.6b, qwen3-1.7b, ..."

// One tensor of the synthesized model, in a conversion's order.
enum class TensorRole {
    TokenEmbd, OutputNorm, RopeFreqs, AttnNorm, AttnQ, AttnK, AttnV, AttnOutput, AttnQNorm, AttnKNorm,
    FfnNorm, FfnGate, FfnUp, FfnDown, AttnQBias, AttnKBias, AttnVBias,
};

struct SynthTensor {
    std::string name;
    TensorRole role;
    int layer;  // -1 for the global tensors
    int32_t n_dims;
    int64_t ne[2];
    int32_t conversion_type;  // what an F16 conversion stores: F16 for matrices, F32 for vectors
};

// The tensor table of `preset` cut to `n_layer` layers, ordered as convert_hf_to_gguf.py
// writes it (generated tensors first, then the checkpoint's tensors by their HF names).
std::vector<SynthTensor> preset_tensors(const Preset& preset, int64_t n_layer);

// llama3-style rope frequency factors (what convert_hf_to_gguf.py stores in
// rope_freqs.weight): one per rotated pair.
std::vector<float> llama3_rope_factors(const Preset& preset);

}  // namespace edgerun::authoring
