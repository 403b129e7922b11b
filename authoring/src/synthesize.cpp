#include <edgerun/authoring/model_writer.hpp>
#include <edgerun/authoring/synth_vocab.hpp>
#include <edgerun/authoring/synthesize.hpp>
#include <edgerun/authoring/tensor_jobs.hpp>

#include <edgerun/interrupt.hpp>
#include <edgerun/quant/quantize.hpp>

#include <algorithm>

namespace edgerun::authoring {

namespace {

std::vector<TensorInfo> tensor_infos(const std::vector<SynthTensor>& tensors) {
    std::vector<TensorInfo> out;
    for (const SynthTensor& t : tensors) out.push_back({t.name, t.conversion_type, t.n_dims, {t.ne[0], t.ne[1], 1, 1}});
    return out;
}

void write_metadata(const SynthSpec& spec, int64_t n_layer, const SynthVocab& v, ModelWriter& out) {
    const Preset& p = spec.preset;
    const std::string a = std::string(p.arch) + ".";
    out.set_string("general.architecture", p.arch);
    out.set_string("general.type", "model");
    const std::string variant =
        spec.stress == Stress::None ? "" : "stress " + std::string(stress_name(spec.stress)) + ", ";
    out.set_string("general.name", std::string(p.model_name) + " (synthetic, " + variant + "edgerun synth seed " +
                                       std::to_string(spec.seed) + ")");
    out.set_string("general.basename", p.basename);
    out.set_string("general.size_label", p.size_label);
    out.set_u32(a + "block_count", uint32_t(n_layer));
    out.set_u32(a + "context_length", uint32_t(p.n_ctx_train));
    out.set_u32(a + "embedding_length", uint32_t(p.n_embd));
    out.set_u32(a + "feed_forward_length", uint32_t(p.n_ff));
    out.set_u32(a + "attention.head_count", uint32_t(p.n_head));
    out.set_u32(a + "attention.head_count_kv", uint32_t(p.n_head_kv));
    out.set_f32(a + "rope.freq_base", p.rope_base);
    out.set_f32(a + "attention.layer_norm_rms_epsilon", p.rms_eps);
    if (p.head_dim_keys) {
        out.set_u32(a + "attention.key_length", uint32_t(p.head_dim));
        out.set_u32(a + "attention.value_length", uint32_t(p.head_dim));
    }
    out.set_u32("general.file_type", uint32_t(spec.file_type.id));
    if (p.llama_extras) {
        out.set_u32(a + "vocab_size", uint32_t(p.n_vocab));
        out.set_u32(a + "rope.dimension_count", uint32_t(p.head_dim));
    }
    if (v.write_add_space_prefix) out.set_bool("tokenizer.ggml.add_space_prefix", false);
    out.set_string("tokenizer.ggml.model", v.model);
    out.set_string("tokenizer.ggml.pre", v.pre);
    out.set_strings("tokenizer.ggml.tokens", v.tokens);
    out.set_i32s("tokenizer.ggml.token_type", v.types);
    out.set_strings("tokenizer.ggml.merges", v.merges);
    out.set_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos));
    out.set_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos));
    if (v.unk >= 0) out.set_u32("tokenizer.ggml.unknown_token_id", uint32_t(v.unk));
    if (v.pad >= 0) out.set_u32("tokenizer.ggml.padding_token_id", uint32_t(v.pad));
    out.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
    out.set_string("tokenizer.chat_template", v.chat_template);
    out.set_u32("general.quantization_version", 2);
}

}  // namespace

std::vector<int32_t> synth_tensor_types(const Preset& preset, const std::vector<SynthTensor>& tensors,
                                        int64_t n_layer, FileType file_type) {
    RecipeParams r;
    r.file_type = file_type;
    r.arch = std::string(preset.arch);
    r.n_layer = n_layer;
    r.n_head = preset.n_head;
    r.n_head_kv = preset.n_head_kv;
    return plan_tensor_types(tensor_infos(tensors), r);
}

uint64_t tensor_data_bytes(const std::vector<SynthTensor>& tensors, const std::vector<int32_t>& types) {
    uint64_t total = 0;
    for (size_t i = 0; i < tensors.size(); ++i)
        total += *row_bytes(types[i], tensors[i].ne[0]) * uint64_t(tensors[i].ne[1]);
    return total;
}

SynthSummary synthesize(const PluginRegistry& registry, const SynthSpec& spec, const std::string& path) {
    const int64_t n_layer = spec.n_layer > 0 ? spec.n_layer : spec.preset.n_layer;
    const std::vector<SynthTensor> tensors = preset_tensors(spec.preset, n_layer);
    const std::vector<int32_t> types = synth_tensor_types(spec.preset, tensors, n_layer, spec.file_type.id);
    const SynthVocab vocab = make_vocab(spec.preset);
    const WeightSynth weights(spec.preset, n_layer, spec.seed, vocab, spec.stress);

    ModelWriter out(writer_plugin_for(registry, path), path);
    write_metadata(spec, n_layer, vocab, out);
    SynthSummary summary;
    summary.n_tensors = tensors.size();
    for (size_t i = 0; i < tensors.size(); ++i) {
        out.add_tensor(tensors[i].name, types[i], tensors[i].n_dims, tensors[i].ne);
        summary.n_weights += uint64_t(tensors[i].ne[0] * tensors[i].ne[1]);
    }

    Progress progress(summary.n_weights, "w");
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < tensors.size(); ++i) {
        InterruptGuard::throw_if_requested();
        const SynthTensor& t = tensors[i];
        progress.set_label(t.name);
        const int64_t cols = t.ne[0], rows = t.ne[1];
        const uint64_t row_size = *row_bytes(types[i], cols);
        buffer.resize(row_size * uint64_t(rows));
        parallel_rows(rows, std::max<int64_t>(1, (int64_t(1) << 18) / cols), spec.threads, [&](int64_t first, int64_t end) {
            std::vector<float> values(size_t((end - first) * cols));
            weights.fill_rows(t, first, end, values.data());
            quant::quantize_rows(types[i], values.data(), buffer.data() + uint64_t(first) * row_size, end - first, cols);
            progress.advance(uint64_t((end - first) * cols));
        });
        out.write_tensor(buffer.data(), buffer.size());
    }
    InterruptGuard::throw_if_requested();
    out.finish();
    progress.finish();
    summary.data_bytes = tensor_data_bytes(tensors, types);
    return summary;
}

}  // namespace edgerun::authoring
