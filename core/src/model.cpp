#include <edgerun/model.hpp>
#include <edgerun/plugin_registry.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

namespace edgerun {

namespace {

void require_positive(int64_t value, const er_model_desc& desc, const char* what) {
    if (value > 0) return;
    std::string message = std::string("model has no ") + what;
    if (desc.missing_key[0]) message += " (missing metadata key '" + std::string(desc.missing_key) + "')";
    throw Error(message, ER_E_FORMAT);
}

// Graphs and backends hold sizes as int32: a larger one would wrap to a negative number.
void require_int32(int64_t value, const char* what) {
    if (value > std::numeric_limits<int32_t>::max())
        throw Error(std::string("model's ") + what + " " + std::to_string(value) + " is more than the " +
                        std::to_string(std::numeric_limits<int32_t>::max()) + " supported",
                    ER_E_FORMAT);
}

}  // namespace

HParams hparams_from_desc(const er_model_desc& desc) {
    HParams hp;
    hp.arch = desc.arch;
    hp.name = desc.name;
    if (hp.arch.empty()) throw Error("model file names no architecture (general.architecture)", ER_E_FORMAT);
    find_architecture(hp.arch);  // refuse unknown ones before checking their keys
    hp.n_vocab = desc.n_vocab;
    hp.n_ctx_train = desc.n_ctx_train;
    hp.n_embd = desc.n_embd;
    hp.n_layer = desc.n_layer;
    hp.n_head = desc.n_head;
    hp.n_head_kv = desc.n_head_kv > 0 ? desc.n_head_kv : desc.n_head;
    hp.n_ff = desc.n_ff;
    require_positive(hp.n_embd, desc, "embedding length");
    require_positive(hp.n_layer, desc, "layer count");
    require_positive(hp.n_head, desc, "attention head count");
    require_positive(hp.n_ff, desc, "feed-forward length");
    require_positive(hp.n_vocab, desc, "vocabulary size");
    hp.head_dim_k = desc.head_dim_k > 0 ? desc.head_dim_k : hp.n_embd / hp.n_head;
    hp.head_dim_v = desc.head_dim_v > 0 ? desc.head_dim_v : hp.head_dim_k;
    hp.n_rot = desc.n_rot > 0 ? desc.n_rot : hp.head_dim_k;
    hp.rms_eps = desc.rms_eps > 0 ? desc.rms_eps : 1e-5f;
    hp.rope_freq_base = desc.rope_freq_base > 0 ? desc.rope_freq_base : 10000.0f;
    hp.rope_freq_scale = desc.rope_freq_scale > 0 ? desc.rope_freq_scale : 1.0f;
    hp.file_type = desc.file_type;
    hp.n_ctx_train = desc.n_ctx_train > 0 ? desc.n_ctx_train : 4096;
    for (const auto& [value, what] : {std::pair{hp.n_vocab, "vocabulary size"}, {hp.n_ctx_train, "training context length"},
                                      {hp.n_embd, "embedding length"}, {hp.n_layer, "layer count"},
                                      {hp.n_head, "attention head count"}, {hp.n_head_kv, "KV head count"},
                                      {hp.head_dim_k, "key head size"}, {hp.head_dim_v, "value head size"},
                                      {hp.n_ff, "feed-forward length"}, {hp.n_rot, "rotary dimension count"}})
        require_int32(value, what);

    if (hp.n_head % hp.n_head_kv != 0)
        throw Error("attention head count " + std::to_string(hp.n_head) + " is not a multiple of the KV head count " +
                        std::to_string(hp.n_head_kv),
                    ER_E_FORMAT);
    if (hp.n_rot > hp.head_dim_k || hp.n_rot % 2 != 0)
        throw Error("rotary dimension count " + std::to_string(hp.n_rot) + " does not fit head size " +
                        std::to_string(hp.head_dim_k),
                    ER_E_FORMAT);
    if (!std::isfinite(hp.rms_eps) || !std::isfinite(hp.rope_freq_base))
        throw Error("model hyperparameters are not finite numbers", ER_E_FORMAT);
    return hp;
}

const Plugin& format_plugin_for(const PluginRegistry& registry, const std::string& path) {
    // The OS's words too ("No such file or directory"), as a probe that fails to open the
    // file would say.
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status))
        throw Error(path + ": no such file (" +
                        (ec ? ec : std::make_error_code(std::errc::no_such_file_or_directory)).message() + ")",
                    ER_E_IO);
    if (std::filesystem::is_directory(status))
        throw Error(path + ": " + std::make_error_code(std::errc::is_a_directory).message() + ", not a model file",
                    ER_E_IO);
    // A FIFO, socket or device: probing would open it, and opening a FIFO blocks until a
    // writer comes.
    if (!std::filesystem::is_regular_file(status)) throw Error(path + ": not a regular file", ER_E_IO);
    const Plugin* best = nullptr;
    int32_t best_score = 0;
    std::string first_error, tried;
    for (const Plugin* plugin : registry.of_kind(ER_PLUGIN_FORMAT)) {
        tried += (tried.empty() ? "" : ", ") + std::string(plugin->name());
        int32_t score = 0;
        er_error err{};
        if (plugin->iface<er_format_iface>()->probe(path.c_str(), &score, &err) != ER_OK) {
            if (first_error.empty()) first_error = std::string(plugin->name()) + ": " + err.message;
            continue;
        }
        if (score > best_score) best = plugin, best_score = score;
    }
    if (best) return *best;
    if (tried.empty()) throw Error("no model format plugin was found (see `edgerun plugins`)", ER_E_UNSUPPORTED);
    if (!first_error.empty()) throw Error(path + ": " + first_error, ER_E_IO);
    throw Error(path + ": no format plugin recognises this file (tried " + tried + ")", ER_E_FORMAT);
}

Model::Model(ModelFile file, HParams hparams, WeightTable weights, const Architecture* arch)
    : file_(std::move(file)), hparams_(std::move(hparams)), weights_(std::move(weights)), arch_(arch) {}

Model Model::open(const PluginRegistry& registry, const std::string& path) {
    ModelFile file(format_plugin_for(registry, path), path);
    HParams hp = hparams_from_desc(file.model_desc());
    const Architecture& arch = find_architecture(hp.arch);
    WeightTable weights(file.tensors());
    Model model(std::move(file), std::move(hp), std::move(weights), &arch);
    model.build_graph(1);  // a missing or misshapen tensor is reported now, by name
    return model;
}

}  // namespace edgerun
