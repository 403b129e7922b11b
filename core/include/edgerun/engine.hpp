// Loading a model onto a backend: choose the backend (the one asked for, or the best
// that runs every op of the model), check coverage, hand it the weights, and make
// contexts (Runners) that share them.
#pragma once

#include <edgerun/batch_runner.hpp>
#include <edgerun/kv_type.hpp>
#include <edgerun/model.hpp>
#include <edgerun/runner.hpp>

#include <memory>
#include <string>

namespace edgerun {

class PluginRegistry;

struct EngineOptions {
    std::string backend;          // empty: the best available
    std::string backend_options;  // backend-specific "key=value,..."
    int32_t n_threads = 0;        // <= 0: the backend's choice
    int32_t n_ctx = 0;            // <= 0: the model's training context, capped at 4096
    int32_t n_batch = 512;        // most tokens per prefill step (llama.cpp's n_ubatch default)
    int32_t kv_type = ER_KV_F16;
};

class Engine {
public:
    Engine(const PluginRegistry& registry, const std::string& model_path, const EngineOptions& options);

    const Model& model() const { return model_; }
    const Backend& backend() const { return backend_; }
    const er_device_info& device() const { return device_; }
    const EngineOptions& options() const { return options_; }
    int32_t n_ctx() const { return n_ctx_; }

    // A new context over the shared weights: its own KV cache and plans.
    std::unique_ptr<Runner> new_runner() const;

    // `n_seqs` sequences over the shared weights, in one context stepped together when
    // the backend holds that many sequences per context (er_device_info.max_seqs), else
    // one context each, stepped one at a time (or so with `one_at_a_time`).
    std::unique_ptr<BatchRunner> new_batch_runner(int32_t n_seqs, bool one_at_a_time = false) const;

private:
    struct Released {
        const er_format_iface* iface;
        er_file* file;
    };

    Model model_;
    EngineOptions options_;
    int32_t n_ctx_;
    Graph prefill_graph_;
    Graph decode_graph_;
    er_device_info device_{};  // before backend_: choosing the backend fills it
    Backend backend_;
    er_context_params context_params() const;  // one sequence

    Released released_;
    BackendModel backend_model_;  // the backend's copy of the weights (er_model); contexts share it
};

}  // namespace edgerun
