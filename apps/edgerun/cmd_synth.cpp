// edgerun synth: a model file with the exact tensor names, shapes, types and metadata of
// a llama.cpp conversion of a real model (Qwen3, Llama 3.2, SmolLM2), filled with random
// weights that behave (see synth_weights.hpp). For performance work on models this
// machine cannot download, and for checking the architecture graphs against llama.cpp.
#include "cli.hpp"
#include "commands.hpp"

#include <edgerun/authoring/model_recipe.hpp>
#include <edgerun/authoring/model_writer.hpp>
#include <edgerun/authoring/synth_presets.hpp>
#include <edgerun/authoring/synth_vocab.hpp>
#include <edgerun/authoring/synth_weights.hpp>
#include <edgerun/authoring/tensor_jobs.hpp>

#include <edgerun/quant/quantize.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

namespace edgerun::cli {

namespace {

using authoring::Preset;
using authoring::SynthTensor;

std::vector<authoring::TensorInfo> tensor_infos(const std::vector<SynthTensor>& tensors) {
    std::vector<authoring::TensorInfo> out;
    for (const SynthTensor& t : tensors) out.push_back({t.name, t.conversion_type, t.n_dims, {t.ne[0], t.ne[1], 1, 1}});
    return out;
}

authoring::RecipeParams recipe_for(const Preset& p, int64_t n_layer, authoring::FileType file_type) {
    authoring::RecipeParams r;
    r.file_type = file_type;
    r.arch = std::string(p.arch);
    r.n_layer = n_layer;
    r.n_head = p.n_head;
    r.n_head_kv = p.n_head_kv;
    return r;
}

uint64_t file_bytes(const std::vector<SynthTensor>& tensors, const std::vector<int32_t>& types) {
    uint64_t total = 0;
    for (size_t i = 0; i < tensors.size(); ++i) total += *row_bytes(types[i], tensors[i].ne[0]) * uint64_t(tensors[i].ne[1]);
    return total;
}

void list_presets() {
    std::printf("%-13s %-6s %6s %6s %5s %5s %5s %6s %7s %8s %9s  %s\n", "PRESET", "ARCH", "EMBD", "LAYERS", "HEADS",
                "KV", "HDIM", "FF", "VOCAB", "ROPE", "Q4_K_M", "NOTES");
    for (const Preset& p : authoring::presets()) {
        const auto tensors = authoring::preset_tensors(p, p.n_layer);
        const auto types = authoring::plan_tensor_types(tensor_infos(tensors), recipe_for(p, p.n_layer, authoring::FileType::MOSTLY_Q4_K_M));
        std::string notes = "tied embeddings";
        if (p.qk_norm) notes += ", q/k norm";
        if (p.llama3_rope_factor > 0) notes += ", llama3 rope scaling x" + std::to_string(int(p.llama3_rope_factor));
        std::printf("%-13s %-6s %6lld %6lld %5lld %5lld %5lld %6lld %7lld %8.0e %7.2f GB  %s\n", std::string(p.name).c_str(),
                    std::string(p.arch).c_str(), (long long)p.n_embd, (long long)p.n_layer, (long long)p.n_head,
                    (long long)p.n_head_kv, (long long)p.head_dim, (long long)p.n_ff, (long long)p.n_vocab,
                    double(p.rope_base), double(file_bytes(tensors, types)) / 1e9, notes.c_str());
    }
}

void write_metadata(const Preset& p, int64_t n_layer, const authoring::FileTypeInfo& file_type, const authoring::SynthVocab& v,
                    uint64_t seed, authoring::Stress stress, authoring::ModelWriter& out) {
    const std::string a = std::string(p.arch) + ".";
    out.set_string("general.architecture", p.arch);
    out.set_string("general.type", "model");
    const std::string variant = stress == authoring::Stress::None ? "" : "stress " + std::string(authoring::stress_name(stress)) + ", ";
    out.set_string("general.name",
                   std::string(p.model_name) + " (synthetic, " + variant + "edgerun synth seed " + std::to_string(seed) + ")");
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
    out.set_u32("general.file_type", uint32_t(file_type.id));
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

int cmd_synth(const std::vector<std::string>& args) {
    CommonOptions common;
    std::string preset_name, type_name = "Q4_K_M", output, stress_name = "none";
    int64_t layers = 0, vocab_size = 0;
    uint64_t seed = 1;
    int threads = authoring::default_thread_count();
    bool list = false;
    po::options_description desc("edgerun synth options");
    desc.add_options()
        ("preset", po::value(&preset_name), ("model to imitate: " + authoring::preset_names()).c_str())
        ("type", po::value(&type_name)->default_value(type_name), ("file type: " + authoring::file_type_names()).c_str())
        ("output,o", po::value(&output), "model file to write (GGUF v3)")
        ("layers", po::value(&layers), "number of layers (default: the real model's)")
        ("vocab", po::value(&vocab_size), "vocabulary size (default: the real model's). A test-only deviation from the real "
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
    if (layers == 0) layers = preset->n_layer;
    if (layers < 1 || layers > 1024) throw Error("--layers must be between 1 and 1024", ER_E_INVALID_ARGUMENT);
    if (threads < 1) throw Error("--threads must be at least 1", ER_E_INVALID_ARGUMENT);
    Preset reduced = *preset;
    if (vocab_size != 0) {
        if (vocab_size < 4096 || vocab_size > preset->n_vocab)
            throw Error("--vocab must be between 4096 and the real " + std::to_string(preset->n_vocab), ER_E_INVALID_ARGUMENT);
        reduced.n_vocab = vocab_size;
        preset = &reduced;
    }

    const auto start = std::chrono::steady_clock::now();
    const std::vector<SynthTensor> tensors = authoring::preset_tensors(*preset, layers);
    const std::vector<int32_t> types =
        authoring::plan_tensor_types(tensor_infos(tensors), recipe_for(*preset, layers, file_type->id));
    const authoring::SynthVocab vocab = authoring::make_vocab(*preset);
    const authoring::WeightSynth weights(*preset, layers, seed, vocab, *stress);

    PluginRegistry registry = load_plugins(common);
    authoring::InterruptGuard interrupt_guard;
    authoring::ModelWriter out(authoring::writer_plugin_for(registry, output), output);
    write_metadata(*preset, layers, *file_type, vocab, seed, *stress, out);
    uint64_t total = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        out.add_tensor(tensors[i].name, types[i], tensors[i].n_dims, tensors[i].ne);
        total += uint64_t(tensors[i].ne[0] * tensors[i].ne[1]);
    }

    authoring::Progress progress(total, "w");
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < tensors.size(); ++i) {
        authoring::InterruptGuard::throw_if_interrupted();
        const SynthTensor& t = tensors[i];
        progress.set_label(t.name);
        const int64_t cols = t.ne[0], rows = t.ne[1];
        const uint64_t row_size = *row_bytes(types[i], cols);
        buffer.resize(row_size * uint64_t(rows));
        authoring::parallel_rows(rows, std::max<int64_t>(1, (int64_t(1) << 18) / cols), threads, [&](int64_t first, int64_t end) {
            std::vector<float> values(size_t((end - first) * cols));
            weights.fill_rows(t, first, end, values.data());
            quant::quantize_rows(types[i], values.data(), buffer.data() + uint64_t(first) * row_size, end - first, cols);
            progress.advance(uint64_t((end - first) * cols));
        });
        out.write_tensor(buffer.data(), buffer.size());
    }
    authoring::InterruptGuard::throw_if_interrupted();
    out.finish();
    progress.finish();

    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const uint64_t bytes = file_bytes(tensors, types);
    std::fprintf(stderr, "synth: %s%s %s, %lld layers, seed %llu -> %s: %zu tensors, %.1f M weights, %.2f MiB, %.1f s\n",
                 std::string(preset->name).c_str(),
                 *stress == authoring::Stress::None ? "" : (" (stress " + std::string(authoring::stress_name(*stress)) + ")").c_str(),
                 std::string(file_type->name).c_str(), (long long)layers,
                 (unsigned long long)seed, output.c_str(), tensors.size(), double(total) / 1e6,
                 double(bytes) / (1 << 20), seconds);
    return 0;
}

}  // namespace edgerun::cli
