// A model as the runtime sees it: a file opened by a format plugin, its validated
// hyperparameters, its weight table, and the architecture that turns them into graphs.
#pragma once

#include <edgerun/graph.hpp>
#include <edgerun/host_api.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace edgerun {

class PluginRegistry;

struct HParams {
    std::string arch;
    std::string name;
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim_k = 0;
    int64_t head_dim_v = 0;
    int64_t n_ff = 0;
    int64_t n_rot = 0;
    float rms_eps = 0;
    float rope_freq_base = 0;
    float rope_freq_scale = 1;
    int32_t file_type = -1;
};

struct Architecture {
    const char* name;
    Graph (*build)(const HParams& hp, const WeightTable& weights, int32_t max_tokens);
};

// The architecture of that name, or an Error listing the supported ones.
const Architecture& find_architecture(std::string_view name);
std::string supported_architectures();  // "llama, qwen2, qwen3"

// Checks a format plugin's description for what the runtime needs; errors name the key.
HParams hparams_from_desc(const er_model_desc& desc);

class Model {
public:
    // Opens `path` with the format plugin whose probe is most confident.
    static Model open(const PluginRegistry& registry, const std::string& path);

    const ModelFile& file() const { return file_; }
    const HParams& hparams() const { return hparams_; }
    const WeightTable& weights() const { return weights_; }
    const Architecture& architecture() const { return *arch_; }

    Graph build_graph(int32_t max_tokens) const { return arch_->build(hparams_, weights_, max_tokens); }

private:
    Model(ModelFile file, HParams hparams, WeightTable weights, const Architecture* arch);

    ModelFile file_;
    HParams hparams_;
    WeightTable weights_;
    const Architecture* arch_;
};

// The format plugin that claims `path` most confidently; an Error naming the file and why
// when none does (missing, not a regular file, a probe's error, or no plugin recognises it).
const Plugin& format_plugin_for(const PluginRegistry& registry, const std::string& path);

}  // namespace edgerun
