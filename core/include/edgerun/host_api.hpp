// Host-side C++ wrappers over the plugin ABI (abi.h): RAII handles that turn status codes
// into exceptions on the host's side of the boundary, and keep each plugin's library
// loaded for as long as any object it made is alive (every handle holds the library,
// and every child handle holds its parent). Header-only: the conformance runner and
// third-party hosts use it as the edgerun app does.
#pragma once

#include <edgerun/abi.h>
#include <edgerun/argmax.hpp>

#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgerun {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, er_status code = ER_E_INTERNAL)
        : std::runtime_error(message), code_(code) {}
    er_status code() const noexcept { return code_; }

private:
    er_status code_;
};

inline std::string_view to_view(er_str s) { return {s.data ? s.data : "", s.size}; }
inline std::string to_string(er_str s) { return std::string(to_view(s)); }

// Throws Error("<context>: <plugin message>") when a call failed.
inline void check(er_status status, const er_error& err, std::string_view context) {
    if (status == ER_OK) return;
    std::string message(context);
    if (err.message[0]) {
        message += ": ";
        message += err.message;
    }
    throw Error(message, status);
}

template <typename T>
T sized() {
    T value;
    std::memset(&value, 0, sizeof value);
    value.struct_size = sizeof(T);
    return value;
}

// A loaded plugin: its descriptor and the library that must outlive everything it made.
struct Plugin {
    const er_plugin* desc = nullptr;
    std::shared_ptr<const void> library;
    std::string path;

    std::string_view name() const { return desc->name; }
    int32_t kind() const { return desc->kind; }
    template <typename Iface>
    const Iface* iface() const { return static_cast<const Iface*>(desc->iface); }
};

// ------------------------------------------------------------------ files --

class ModelFile {
public:
    ModelFile(const Plugin& plugin, const std::string& path) : plugin_(plugin) {
        iface_ = plugin.iface<er_format_iface>();
        er_error err{};
        er_file* raw = nullptr;
        check(iface_->open(path.c_str(), &raw, &err), err, path);
        auto close = iface_->close;
        auto library = plugin.library;
        file_ = std::shared_ptr<er_file>(raw, [close, library](er_file* f) { close(f); });
    }

    const Plugin& plugin() const { return plugin_; }
    const er_format_iface& iface() const { return *iface_; }
    er_file* raw() const { return file_.get(); }

    std::string describe() const { return iface_->describe ? to_string(iface_->describe(raw())) : ""; }
    uint64_t meta_count() const { return iface_->meta_count(raw()); }

    std::pair<std::string, er_meta_value> meta_at(uint64_t index) const {
        er_error err{};
        er_str key{};
        er_meta_value value{};
        check(iface_->meta_at(raw(), index, &key, &value, &err), err, "metadata");
        return {to_string(key), value};
    }

    std::optional<er_meta_value> meta_find(const char* key) const {
        er_error err{};
        er_meta_value value{};
        er_status status = iface_->meta_find(raw(), key, &value, &err);
        if (status == ER_E_NOT_FOUND) return std::nullopt;
        check(status, err, key);
        return value;
    }

    er_meta_value meta_array_at(const er_meta_value& array, uint64_t index) const {
        er_error err{};
        er_meta_value out{};
        check(iface_->meta_array_at(raw(), &array, index, &out, &err), err, "metadata array");
        return out;
    }

    std::vector<er_tensor_desc> tensors() const {
        std::vector<er_tensor_desc> out(iface_->tensor_count(raw()));
        for (uint64_t i = 0; i < out.size(); ++i) {
            er_error err{};
            check(iface_->tensor_at(raw(), i, &out[i], &err), err, "tensor table");
        }
        return out;
    }

    er_model_desc model_desc() const {
        auto desc = sized<er_model_desc>();
        er_error err{};
        check(iface_->model_desc(raw(), &desc, &err), err, "model description");
        return desc;
    }

    er_vocab_desc vocab_desc() const {
        auto desc = sized<er_vocab_desc>();
        er_error err{};
        check(iface_->vocab_desc(raw(), &desc, &err), err, "vocabulary");
        return desc;
    }

private:
    Plugin plugin_;
    const er_format_iface* iface_ = nullptr;
    std::shared_ptr<er_file> file_;
};

// ---------------------------------------------------------------- backend --

class Backend {
public:
    Backend(const Plugin& plugin, const er_backend_params& params) : plugin_(plugin) {
        iface_ = plugin.iface<er_backend_iface>();
        er_error err{};
        er_backend* raw = nullptr;
        check(iface_->create(&params, &raw, &err), err, std::string(plugin.name()));
        auto destroy = iface_->destroy;
        auto library = plugin.library;
        handle_ = std::shared_ptr<er_backend>(raw, [destroy, library](er_backend* b) { destroy(b); });
    }

    const Plugin& plugin() const { return plugin_; }
    const er_backend_iface& iface() const { return *iface_; }
    er_backend* raw() const { return handle_.get(); }
    const std::shared_ptr<er_backend>& handle() const { return handle_; }

    bool supports(const er_op_query& query) const { return iface_->supports(raw(), &query) == 1; }

private:
    Plugin plugin_;
    const er_backend_iface* iface_ = nullptr;
    std::shared_ptr<er_backend> handle_;
};

class BackendModel {
public:
    BackendModel(const Backend& backend, const er_model_params& params) : backend_(backend) {
        er_error err{};
        er_model* raw = nullptr;
        check(backend.iface().model_load(backend.raw(), &params, &raw, &err), err, "loading weights");
        auto free_fn = backend.iface().model_free;
        auto parent = backend.handle();
        handle_ = std::shared_ptr<er_model>(raw, [free_fn, parent](er_model* m) { free_fn(m); });
    }

    const Backend& backend() const { return backend_; }
    er_model* raw() const { return handle_.get(); }
    const std::shared_ptr<er_model>& handle() const { return handle_; }

private:
    Backend backend_;
    std::shared_ptr<er_model> handle_;
};

class BackendContext {
public:
    BackendContext(const BackendModel& model, const er_context_params& params)
        : backend_(model.backend()), params_(params) {
        er_error err{};
        er_context* raw = nullptr;
        check(backend_.iface().context_create(model.raw(), &params, &raw, &err), err, "creating context");
        auto free_fn = backend_.iface().context_free;
        auto parent = model.handle();
        handle_ = std::shared_ptr<er_context>(raw, [free_fn, parent](er_context* c) { free_fn(c); });
    }

    const Backend& backend() const { return backend_; }
    const er_context_params& params() const { return params_; }
    er_context* raw() const { return handle_.get(); }
    const std::shared_ptr<er_context>& handle() const { return handle_; }

    std::optional<er_memory_stats> memory_stats() const {
        if (!backend_.iface().memory_stats) return std::nullopt;
        auto stats = sized<er_memory_stats>();
        er_error err{};
        check(backend_.iface().memory_stats(raw(), &stats, &err), err, "memory stats");
        return stats;
    }

private:
    Backend backend_;
    er_context_params params_;
    std::shared_ptr<er_context> handle_;
};

class Plan {
public:
    Plan(const BackendContext& ctx, const er_graph& graph) : iface_(&ctx.backend().iface()) {
        er_error err{};
        er_plan* raw = nullptr;
        check(iface_->plan_create(ctx.raw(), &graph, &raw, &err), err, "compiling graph");
        auto free_fn = iface_->plan_free;
        auto parent = ctx.handle();
        handle_ = std::shared_ptr<er_plan>(raw, [free_fn, parent](er_plan* p) { free_fn(p); });
    }

    void set_input(int32_t value, const void* data, int64_t n_rows) {
        er_error err{};
        check(iface_->plan_set_input(raw(), value, data, n_rows, &err), err, "setting input");
    }

    // A step of sequence 0 alone: positions pos0 .. pos0 + n_tokens - 1.
    void execute(int32_t n_tokens, int32_t pos0, bool logits_all) {
        auto step = sized<er_step>();
        step.n_tokens = n_tokens;
        step.pos0 = pos0;
        step.logits_all = logits_all ? 1 : 0;
        er_error err{};
        check(iface_->plan_execute(raw(), &step, &err), err, "executing step");
    }

    // A step of rows from several sequences (abi.h er_step_row).
    void execute(std::span<const er_step_row> rows) {
        auto step = sized<er_step>();
        step.n_tokens = static_cast<int32_t>(rows.size());
        step.rows = rows.data();
        er_error err{};
        check(iface_->plan_execute(raw(), &step, &err), err, "executing step");
    }

    void get_output(int32_t value, float* dst, int64_t n_rows) {
        er_error err{};
        check(iface_->plan_get_output(raw(), value, dst, n_rows, &err), err, "reading output");
    }

    bool has_argmax() const { return iface_->plan_argmax != nullptr; }

    // The argmax of the first row of an output (the only one after a decode step).
    int32_t argmax(int32_t value) {
        int32_t token = -1;
        argmax_rows(value, std::span<int32_t>(&token, 1));
        return token;
    }

    void argmax_rows(int32_t value, std::span<int32_t> tokens) {
        er_error err{};
        check(iface_->plan_argmax(raw(), value, tokens.data(), static_cast<int64_t>(tokens.size()), &err), err,
              "device argmax");
    }

    er_plan* raw() const { return handle_.get(); }

private:
    const er_backend_iface* iface_;
    std::shared_ptr<er_plan> handle_;
};

// ---------------------------------------------------------------- sampler --

class Sampler {
public:
    Sampler(const Plugin& plugin, const er_sampler_params& params, int32_t n_vocab) {
        iface_ = plugin.iface<er_sampler_iface>();
        er_error err{};
        er_sampler* raw = nullptr;
        check(iface_->create(&params, n_vocab, &raw, &err), err, "creating sampler");
        auto destroy = iface_->destroy;
        auto library = plugin.library;
        handle_ = std::shared_ptr<er_sampler>(raw, [destroy, library](er_sampler* s) { destroy(s); });
    }

    void reset() { iface_->reset(handle_.get()); }

    void accept(int32_t token) {
        er_error err{};
        check(iface_->accept(handle_.get(), token, &err), err, "sampler");
    }

    int32_t sample(const float* logits, int32_t n_vocab) {
        require_finite(logits, n_vocab);
        er_error err{};
        int32_t token = -1;
        check(iface_->sample(handle_.get(), logits, n_vocab, &token, &err), err, "sampler");
        return token;
    }

    // sample() over logits some of which are -infinity: the tokens a grammar rules out
    // (abi.h). The caller checked the logits finite before it masked them.
    int32_t sample_masked(const float* masked_logits, int32_t n_vocab) {
        er_error err{};
        int32_t token = -1;
        check(iface_->sample(handle_.get(), masked_logits, n_vocab, &token, &err), err, "sampler");
        return token;
    }

    bool is_greedy() const { return iface_->is_greedy(handle_.get()) == 1; }

    // The entries for speculative decoding (abi.h); OPTIONAL for a sampler plugin.
    bool has_speculative_entries() const {
        return iface_->struct_size >= sizeof(er_sampler_iface) && iface_->distribution && iface_->uniform &&
               iface_->rollback;
    }

    // `probs` gets n_vocab probabilities: what sample() would draw from.
    void distribution(const float* logits, int32_t n_vocab, float* probs) {
        require_speculative();
        require_finite(logits, n_vocab);
        er_error err{};
        check(iface_->distribution(handle_.get(), logits, n_vocab, probs, &err), err, "sampler distribution");
    }

    // distribution() over logits some of which are -infinity (sample_masked).
    void distribution_masked(const float* masked_logits, int32_t n_vocab, float* probs) {
        require_speculative();
        er_error err{};
        check(iface_->distribution(handle_.get(), masked_logits, n_vocab, probs, &err), err, "sampler distribution");
    }

    double uniform() {
        require_speculative();
        return iface_->uniform(handle_.get());
    }

    void rollback(int32_t n_tokens) {
        require_speculative();
        er_error err{};
        check(iface_->rollback(handle_.get(), n_tokens, &err), err, "sampler rollback");
    }

private:
    // A NaN or infinite logit means the forward pass went wrong (argmax.hpp): refused here as
    // the greedy path refuses it, not drawn from (a NaN compares false everywhere, so a
    // sampler would quietly pick some token).
    static void require_finite(const float* logits, int32_t n_vocab) {
        const Argmax best = argmax_logits(logits, n_vocab);
        if (best.non_finite >= 0)
            throw Error("the logit of token " + std::to_string(best.non_finite) +
                            " is not finite (the model's forward pass gave NaN or infinity)",
                        ER_E_INTERNAL);
    }

    void require_speculative() const {
        if (!has_speculative_entries())
            throw Error("this sampler plugin has no distribution/uniform/rollback entries", ER_E_UNSUPPORTED);
    }

    const er_sampler_iface* iface_ = nullptr;
    std::shared_ptr<er_sampler> handle_;
};

}  // namespace edgerun
