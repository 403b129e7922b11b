#include <edgerun/authoring/synth_presets.hpp>

#include <edgerun/dtype.hpp>

#include <algorithm>
#include <cmath>

namespace edgerun::authoring {

namespace {

// From the models' published configs (config.json on the Hugging Face hub: hidden size,
// layers, heads, KV heads, head_dim, FFN width, vocabulary, context, RoPE base, RMS epsilon).
const std::vector<Preset> kPresets = {
    {"qwen3-0.6b", "qwen3", "Qwen3 0.6B", "Qwen3", "0.6B", 1024, 28, 16, 8, 128, 3072, 151936, 40960, 1e6f, 1e-6f,
     true, true, false, 0.f, VocabStyle::Qwen2},
    {"qwen3-1.7b", "qwen3", "Qwen3 1.7B", "Qwen3", "1.7B", 2048, 28, 16, 8, 128, 6144, 151936, 40960, 1e6f, 1e-6f,
     true, true, false, 0.f, VocabStyle::Qwen2},
    {"qwen3-4b", "qwen3", "Qwen3 4B", "Qwen3", "4B", 2560, 36, 32, 8, 128, 9728, 151936, 40960, 1e6f, 1e-6f,
     true, true, false, 0.f, VocabStyle::Qwen2},
    {"llama3.2-1b", "llama", "Llama 3.2 1B", "Llama-3.2", "1B", 2048, 16, 32, 8, 64, 8192, 128256, 131072, 5e5f,
     1e-5f, false, true, true, 32.f, VocabStyle::Llama3},
    {"llama3.2-3b", "llama", "Llama 3.2 3B", "Llama-3.2", "3B", 3072, 28, 24, 8, 128, 8192, 128256, 131072, 5e5f,
     1e-5f, false, true, true, 32.f, VocabStyle::Llama3},
    {"qwen2.5-0.5b", "qwen2", "Qwen2.5 0.5B", "Qwen2.5", "0.5B", 896, 24, 14, 2, 64, 4864, 151936, 32768, 1e6f, 1e-6f,
     false, false, false, 0.f, VocabStyle::Qwen2, true},
    {"smollm2-135m", "llama", "SmolLM2 135M", "SmolLM2", "135M", 576, 30, 9, 3, 64, 1536, 49152, 8192, 1e5f, 1e-5f,
     false, false, true, 0.f, VocabStyle::SmolLM},
};

struct HfTensor {
    std::string hf_name;  // sort key: the checkpoint's name
    SynthTensor tensor;
};

}  // namespace

const std::vector<Preset>& presets() { return kPresets; }

const Preset* find_preset(std::string_view name) {
    for (const Preset& p : kPresets)
        if (p.name == name) return &p;
    return nullptr;
}

std::string preset_names() {
    std::string out;
    for (const Preset& p : kPresets) out += (out.empty() ? "" : ", ") + std::string(p.name);
    return out;
}

std::vector<SynthTensor> preset_tensors(const Preset& p, int64_t n_layer) {
    const int32_t f16 = int32_t(DType::F16), f32 = int32_t(DType::F32);
    const int64_t q_width = p.n_head * p.head_dim, kv_width = p.n_head_kv * p.head_dim;
    std::vector<HfTensor> hf;
    auto add_matrix = [&](std::string hf_name, std::string name, TensorRole role, int layer, int64_t cols, int64_t rows) {
        hf.push_back({std::move(hf_name), {std::move(name), role, layer, 2, {cols, rows}, f16}});
    };
    auto add_vector = [&](std::string hf_name, std::string name, TensorRole role, int layer, int64_t n) {
        hf.push_back({std::move(hf_name), {std::move(name), role, layer, 1, {n, 1}, f32}});
    };
    add_matrix("model.embed_tokens.weight", "token_embd.weight", TensorRole::TokenEmbd, -1, p.n_embd, p.n_vocab);
    add_vector("model.norm.weight", "output_norm.weight", TensorRole::OutputNorm, -1, p.n_embd);
    for (int l = 0; l < int(n_layer); ++l) {
        const std::string hf_prefix = "model.layers." + std::to_string(l) + ".";
        const std::string prefix = "blk." + std::to_string(l) + ".";
        add_vector(hf_prefix + "input_layernorm.weight", prefix + "attn_norm.weight", TensorRole::AttnNorm, l, p.n_embd);
        add_matrix(hf_prefix + "mlp.down_proj.weight", prefix + "ffn_down.weight", TensorRole::FfnDown, l, p.n_ff, p.n_embd);
        add_matrix(hf_prefix + "mlp.gate_proj.weight", prefix + "ffn_gate.weight", TensorRole::FfnGate, l, p.n_embd, p.n_ff);
        add_matrix(hf_prefix + "mlp.up_proj.weight", prefix + "ffn_up.weight", TensorRole::FfnUp, l, p.n_embd, p.n_ff);
        add_vector(hf_prefix + "post_attention_layernorm.weight", prefix + "ffn_norm.weight", TensorRole::FfnNorm, l, p.n_embd);
        if (p.qk_norm) {
            add_vector(hf_prefix + "self_attn.k_norm.weight", prefix + "attn_k_norm.weight", TensorRole::AttnKNorm, l, p.head_dim);
            add_vector(hf_prefix + "self_attn.q_norm.weight", prefix + "attn_q_norm.weight", TensorRole::AttnQNorm, l, p.head_dim);
        }
        if (p.qkv_bias) {
            add_vector(hf_prefix + "self_attn.k_proj.bias", prefix + "attn_k.bias", TensorRole::AttnKBias, l, kv_width);
            add_vector(hf_prefix + "self_attn.q_proj.bias", prefix + "attn_q.bias", TensorRole::AttnQBias, l, q_width);
            add_vector(hf_prefix + "self_attn.v_proj.bias", prefix + "attn_v.bias", TensorRole::AttnVBias, l, kv_width);
        }
        add_matrix(hf_prefix + "self_attn.k_proj.weight", prefix + "attn_k.weight", TensorRole::AttnK, l, p.n_embd, kv_width);
        add_matrix(hf_prefix + "self_attn.o_proj.weight", prefix + "attn_output.weight", TensorRole::AttnOutput, l, q_width, p.n_embd);
        add_matrix(hf_prefix + "self_attn.q_proj.weight", prefix + "attn_q.weight", TensorRole::AttnQ, l, p.n_embd, q_width);
        add_matrix(hf_prefix + "self_attn.v_proj.weight", prefix + "attn_v.weight", TensorRole::AttnV, l, p.n_embd, kv_width);
    }
    // Safetensors checkpoints list their tensors by name (so layer 10 comes before 2).
    std::stable_sort(hf.begin(), hf.end(), [](const HfTensor& a, const HfTensor& b) { return a.hf_name < b.hf_name; });

    std::vector<SynthTensor> out;
    if (p.llama3_rope_factor > 0)  // generated by the converter, written before the rest
        out.push_back({"rope_freqs.weight", TensorRole::RopeFreqs, -1, 1, {p.head_dim / 2, 1}, f32});
    for (HfTensor& t : hf) out.push_back(std::move(t.tensor));
    return out;
}

std::vector<float> llama3_rope_factors(const Preset& p) {
    // Llama 3.x rope_scaling: factor, low_freq_factor 1, high_freq_factor 4, original
    // context 8192; wavelengths above the old context are slowed by `factor`, those
    // below a quarter of it kept, and the band between blended.
    const double factor = p.llama3_rope_factor, low_freq_factor = 1.0, high_freq_factor = 4.0, old_context = 8192.0;
    const double low_freq_wavelen = old_context / low_freq_factor, high_freq_wavelen = old_context / high_freq_factor;
    std::vector<float> factors;
    for (int64_t i = 0; i < p.head_dim; i += 2) {
        // float32 as torch computes the frequencies in the converter
        const float freq = 1.0f / std::pow(p.rope_base, float(i) / float(p.head_dim));
        const double wavelen = 2 * M_PI / double(freq);
        if (wavelen < high_freq_wavelen) {
            factors.push_back(1.f);
        } else if (wavelen > low_freq_wavelen) {
            factors.push_back(float(factor));
        } else {
            const double smooth = (old_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
            factors.push_back(float(1.0 / ((1 - smooth) / factor + smooth)));
        }
    }
    return factors;
}

}  // namespace edgerun::authoring
