#include <edgerun/backend_support.hpp>
#include <edgerun/engine.hpp>
#include <edgerun/plugin_registry.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace edgerun {
namespace {

struct Candidate {
    const Plugin* plugin;
    er_device_info device;
};

er_device_info device_info_of(const Plugin& plugin, int32_t device) {
    auto info = sized<er_device_info>();
    er_error err{};
    check(plugin.iface<er_backend_iface>()->device_info(device, &info, &err), err, std::string(plugin.name()));
    return info;
}

Backend create_backend(const Plugin& plugin, const EngineOptions& options) {
    auto params = sized<er_backend_params>();
    params.device = 0;
    params.n_threads = options.n_threads;
    params.options = options.backend_options.c_str();
    return Backend(plugin, params);
}

std::string join(const std::vector<std::string>& items, const char* separator) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
    return out;
}

// The backend asked for, or the highest-scoring one that has a device and runs every op.
Backend choose_backend(const PluginRegistry& registry, const EngineOptions& options, const Model& model,
                       const Graph& graph, er_device_info& device) {
    if (!options.backend.empty()) {
        const Plugin* plugin = registry.find(ER_PLUGIN_BACKEND, options.backend);
        if (!plugin) {
            std::vector<std::string> names;
            for (const Plugin* p : registry.of_kind(ER_PLUGIN_BACKEND)) names.emplace_back(p->name());
            throw Error("no backend plugin named '" + options.backend + "' (found: " +
                            (names.empty() ? std::string("none") : join(names, ", ")) + ")",
                        ER_E_INVALID_ARGUMENT);
        }
        if (plugin->iface<er_backend_iface>()->device_count() < 1)
            throw Error("backend '" + options.backend + "' has no usable device on this machine", ER_E_UNSUPPORTED);
        Backend backend = create_backend(*plugin, options);
        auto missing = unsupported_ops(backend, graph, model.weights(), options.kv_type);
        if (!missing.empty())
            throw Error("backend '" + options.backend + "' cannot run this model; it lacks: " + join(missing, "; "),
                        ER_E_UNSUPPORTED);
        device = device_info_of(*plugin, 0);
        return backend;
    }

    // Backends with a device that were not chosen, and why: a device the plugin cannot use
    // (its device_info refuses, e.g. a GPU this build carries no code for), or a model it
    // cannot run while ranked above the one chosen. Said in one line when another is used.
    std::vector<std::string> passed_over;
    std::vector<Candidate> candidates;
    for (const Plugin* plugin : registry.of_kind(ER_PLUGIN_BACKEND)) {
        if (plugin->iface<er_backend_iface>()->device_count() < 1) continue;
        try {
            candidates.push_back({plugin, device_info_of(*plugin, 0)});
        } catch (const Error& e) {
            passed_over.push_back(e.what());
        }
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.device.score > b.device.score; });
    std::vector<std::string> rejected;
    for (const Candidate& c : candidates) {
        Backend backend = create_backend(*c.plugin, options);
        auto missing = unsupported_ops(backend, graph, model.weights(), options.kv_type);
        if (missing.empty()) {
            device = c.device;
            if (!passed_over.empty()) spdlog::warn("using backend {}: {}", c.plugin->name(), join(passed_over, "; "));
            return backend;
        }
        rejected.push_back(std::string(c.plugin->name()) + " lacks " + join(missing, ", "));
        passed_over.push_back(rejected.back());
        spdlog::info("backend {} skipped: lacks {}", c.plugin->name(), join(missing, ", "));
    }
    throw Error("no backend can run this model" + (rejected.empty() ? std::string(" (no backend found)")
                                                                   : ": " + join(rejected, "; ")),
                ER_E_UNSUPPORTED);
}

int32_t context_size(const EngineOptions& options, const Model& model) {
    if (options.n_ctx > 0) return options.n_ctx;
    return int32_t(std::min<int64_t>(model.hparams().n_ctx_train, 4096));
}

}  // namespace

Engine::Engine(const PluginRegistry& registry, const std::string& model_path, const EngineOptions& options)
    : model_(Model::open(registry, model_path)),
      options_(options),
      n_ctx_(context_size(options, model_)),
      prefill_graph_(model_.build_graph(std::max(1, std::min(options.n_batch, n_ctx_)))),
      decode_graph_(model_.build_graph(1)),
      backend_(choose_backend(registry, options, model_, decode_graph_, device_)),
      released_{&model_.file().iface(), model_.file().raw()},
      backend_model_([&] {
          std::vector<uint32_t> usage = weight_usage(model_.weights(), {&prefill_graph_, &decode_graph_});
          auto params = sized<er_model_params>();
          params.weights = model_.weights().tensors().data();
          params.usage = usage.data();
          params.n_weights = model_.weights().size();
          if (released_.iface->release_range) {
              params.release = [](void* user, const void* data, uint64_t nbytes) {
                  auto* r = static_cast<Released*>(user);
                  r->iface->release_range(r->file, data, nbytes);
              };
              params.release_user_data = &released_;
          }
          return BackendModel(backend_, params);
      }()) {
    if (options.n_batch < 1) throw Error("--batch-size must be at least 1", ER_E_INVALID_ARGUMENT);
}

er_context_params Engine::context_params() const {
    const HParams& hp = model_.hparams();
    auto params = sized<er_context_params>();
    params.n_ctx = n_ctx_;
    params.n_batch = prefill_graph_.max_tokens;
    params.kv_type = options_.kv_type;
    params.n_layer = int32_t(hp.n_layer);
    params.n_head_kv = int32_t(hp.n_head_kv);
    params.head_dim_k = int32_t(hp.head_dim_k);
    params.head_dim_v = int32_t(hp.head_dim_v);
    params.n_seqs = 1;
    return params;
}

std::unique_ptr<Runner> Engine::new_runner() const {
    return std::make_unique<Runner>(backend_model_, context_params(), prefill_graph_, decode_graph_);
}

std::unique_ptr<BatchRunner> Engine::new_batch_runner(int32_t n_seqs, bool one_at_a_time) const {
    if (n_seqs < 1) throw Error("a batch needs at least one sequence", ER_E_INVALID_ARGUMENT);
    er_context_params params = context_params();
    if (one_at_a_time || n_seqs == 1 || device_.max_seqs < n_seqs)
        return std::make_unique<BatchRunner>(backend_model_, params, n_seqs, prefill_graph_, decode_graph_);
    params.n_seqs = n_seqs;
    // The decode step of every sequence at once; prefill keeps its n_batch rows (more
    // when the sequences outnumber them).
    const Graph batch = model_.build_graph(n_seqs);
    if (n_seqs > params.n_batch) {
        params.n_batch = n_seqs;
        return std::make_unique<BatchRunner>(backend_model_, params, batch, batch);
    }
    return std::make_unique<BatchRunner>(backend_model_, params, prefill_graph_, batch);
}

}  // namespace edgerun
