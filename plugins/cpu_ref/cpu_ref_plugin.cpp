// cpu_ref: the FP32 reference backend. Its outputs are the golden values other backends
// are compared with, so it favours exactness and determinism: weights are dequantized
// exactly as GGUF defines them, math is F32 with fixed summation orders, and results are
// bit-identical for every run and every thread count. It is also meant to be usable:
// weights stay quantized in memory, decode runs fused decode-and-dot GEMVs (AVX2 on x86,
// portable vectorisable C++ elsewhere), prefill runs OpenBLAS on dequantized tiles.
//
// Backend options (er_backend_params.options): "isa=generic" forces the portable kernels.
#include "backend.hpp"
#include "ops.hpp"
#include "plan.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace edgerun::cpu_ref {
namespace {

using sdk::Failure;
using sdk::guard;
using sdk::set_error;

Backend* as_backend(er_backend* b) { return reinterpret_cast<Backend*>(b); }
Model* as_model(er_model* m) { return reinterpret_cast<Model*>(m); }
Context* as_context(er_context* c) { return reinterpret_cast<Context*>(c); }
Plan* as_plan(er_plan* p) { return reinterpret_cast<Plan*>(p); }

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
        if (key == "model name" || key == "Model" || key == "Hardware") {
            const auto start = line.find_first_not_of(" \t", colon + 1);
            return start == std::string::npos ? "CPU" : line.substr(start);
        }
    }
    return "CPU";
}

// Parses "key=value,key=value"; only "isa" is known.
Isa isa_from_options(const char* options) {
    Isa isa = best_isa();
    if (!options) return isa;
    std::string_view rest(options);
    bool isa_given = false;  // given twice, which one was meant is not known: refused
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (item.empty()) continue;
        const auto eq = item.find('=');
        const std::string_view key = item.substr(0, eq), value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
        if (key == "isa") {
            if (isa_given) throw Failure(ER_E_INVALID_ARGUMENT, "option isa is given twice");
            isa_given = true;
            if (value == "generic") isa = Isa::Generic;
            else if (value == "avx2" && isa_available(Isa::Avx2)) isa = Isa::Avx2;
            else throw Failure(ER_E_INVALID_ARGUMENT, "option isa=" + std::string(value) +
                                                          " is not available (generic" +
                                                          (isa_available(Isa::Avx2) ? ", avx2)" : ")"));
        } else {
            throw Failure(ER_E_INVALID_ARGUMENT, "unknown option '" + std::string(key) + "' (known: isa)");
        }
    }
    return isa;
}

int32_t device_count() { return 1; }

er_status device_info(int32_t device, er_device_info* out, er_error* err) {
    return guard(err, [&] {
        if (device != 0) throw Failure(ER_E_INVALID_ARGUMENT, "cpu_ref has one device (0), not " + std::to_string(device));
        if (!out || out->struct_size < sizeof(er_device_info)) throw Failure(ER_E_INVALID_ARGUMENT, "device_info: bad output struct");
        std::snprintf(out->name, sizeof out->name, "%s (%s kernels)", cpu_model_name().c_str(), isa_name(best_isa()));
        std::snprintf(out->kind, sizeof out->kind, "cpu");
        const long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        out->memory_total = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page : 0;
        out->memory_free = avail > 0 && page > 0 ? static_cast<uint64_t>(avail) * page : 0;
        out->unified_memory = 1;
        out->score = 1;  // the reference: chosen only when nothing faster is there
        out->max_seqs = kMaxSeqs;
    });
}

er_status create(const er_backend_params* params, er_backend** out, er_error* err) {
    return guard(err, [&] {
        if (!out) throw Failure(ER_E_INVALID_ARGUMENT, "create: no output pointer");
        *out = nullptr;
        if (!params || params->struct_size < sizeof(er_backend_params))
            throw Failure(ER_E_INVALID_ARGUMENT, "create: backend params missing or too small");
        if (params->device != 0)
            throw Failure(ER_E_INVALID_ARGUMENT, "cpu_ref has one device (0), not " + std::to_string(params->device));
        auto backend = std::make_unique<Backend>();
        backend->isa = isa_from_options(params->options);
        init_blas();
        backend->pool = std::make_unique<ThreadPool>(params->n_threads);
        sdk::logf(ER_LOG_DEBUG, "cpu_ref: %d threads, %s kernels", backend->pool->size(), isa_name(backend->isa));
        *out = reinterpret_cast<er_backend*>(backend.release());
    });
}

void destroy(er_backend* backend) { delete as_backend(backend); }

int32_t supports(er_backend*, const er_op_query* q) {
    if (!q || q->struct_size < sizeof(er_op_query)) return 0;
    const bool dtype_ok = q->weight_dtype < 0 || dtype_supported(q->weight_dtype);
    switch (q->op) {
        case ER_OP_EMBED: case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: case ER_OP_LOGITS: case ER_OP_RMS_NORM:
            return dtype_ok ? 1 : 0;
        case ER_OP_ROPE: case ER_OP_SWIGLU: case ER_OP_ADD: return 1;
        case ER_OP_ATTENTION:
            if (q->kv_type == ER_KV_F32 || q->kv_type == ER_KV_F16 || q->kv_type < 0) return 1;
            if (q->kv_type == ER_KV_Q8) return q->head_dim % 32 == 0 ? 1 : 0;
            return 0;
        default: return 0;
    }
}

er_status model_load(er_backend* backend, const er_model_params* params, er_model** out, er_error* err) {
    return guard(err, [&] {
        if (!out) throw Failure(ER_E_INVALID_ARGUMENT, "model_load: no output pointer");
        *out = nullptr;
        if (!backend || !params || params->struct_size < sizeof(er_model_params))
            throw Failure(ER_E_INVALID_ARGUMENT, "model_load: model params missing or too small");
        auto model = std::make_unique<Model>();
        model->backend = as_backend(backend);
        model->weights = load_weights(*params, model->backend->isa, &model->weights_bytes);
        *out = reinterpret_cast<er_model*>(model.release());
    });
}

void model_free(er_model* model) { delete as_model(model); }

er_status context_create(er_model* model, const er_context_params* params, er_context** out, er_error* err) {
    return guard(err, [&] {
        if (!out) throw Failure(ER_E_INVALID_ARGUMENT, "context_create: no output pointer");
        *out = nullptr;
        if (!model || !params || params->struct_size < sizeof(er_context_params))
            throw Failure(ER_E_INVALID_ARGUMENT, "context_create: context params missing or too small");
        if (params->n_batch < 1)
            throw Failure(ER_E_INVALID_ARGUMENT, "context: n_batch must be at least 1 (got " + std::to_string(params->n_batch) + ")");
        if (params->n_seqs > kMaxSeqs)
            throw Failure(ER_E_UNSUPPORTED, "context: cpu_ref holds at most " + std::to_string(kMaxSeqs) +
                                                " sequences per context (asked for " + std::to_string(params->n_seqs) + ")");
        auto ctx = std::make_unique<Context>();
        ctx->model = as_model(model);
        ctx->params = *params;
        ctx->kv = std::make_unique<KvCache>(*params);
        ctx->n_filled.assign(static_cast<size_t>(ctx->kv->n_seqs()), 0);
        ctx->next_pos.assign(static_cast<size_t>(ctx->kv->n_seqs()), -1);
        *out = reinterpret_cast<er_context*>(ctx.release());
    });
}

void context_free(er_context* ctx) { delete as_context(ctx); }

er_status plan_create(er_context* ctx, const er_graph* graph, er_plan** out, er_error* err) {
    return guard(err, [&] {
        if (!out) throw Failure(ER_E_INVALID_ARGUMENT, "plan_create: no output pointer");
        *out = nullptr;
        if (!ctx || !graph) throw Failure(ER_E_INVALID_ARGUMENT, "plan_create: no context or graph");
        *out = reinterpret_cast<er_plan*>(new Plan(*as_context(ctx), *graph));
    });
}

void plan_free(er_plan* plan) { delete as_plan(plan); }

er_status plan_set_input(er_plan* plan, int32_t value, const void* data, int64_t n_rows, er_error* err) {
    if (!plan) return set_error(err, ER_E_INVALID_ARGUMENT, "plan_set_input: no plan");
    return as_plan(plan)->set_input(value, data, n_rows, err);
}

er_status plan_execute(er_plan* plan, const er_step* step, er_error* err) {
    if (!plan) return set_error(err, ER_E_INVALID_ARGUMENT, "plan_execute: no plan");
    if (!step || step->struct_size < sizeof(er_step)) return set_error(err, ER_E_INVALID_ARGUMENT, "plan_execute: step missing or too small");
    return as_plan(plan)->execute(*step, err);
}

er_status plan_get_output(er_plan* plan, int32_t value, float* dst, int64_t n_rows, er_error* err) {
    if (!plan) return set_error(err, ER_E_INVALID_ARGUMENT, "plan_get_output: no plan");
    return as_plan(plan)->get_output(value, dst, n_rows, err);
}

er_status plan_argmax(er_plan* plan, int32_t value, int32_t* tokens, int64_t n_rows, er_error* err) {
    if (!plan) return set_error(err, ER_E_INVALID_ARGUMENT, "plan_argmax: no plan");
    return as_plan(plan)->argmax(value, tokens, n_rows, err);
}

er_status memory_stats(er_context* ctx, er_memory_stats* out, er_error* err) {
    if (!ctx || !out || out->struct_size < sizeof(er_memory_stats))
        return set_error(err, ER_E_INVALID_ARGUMENT, "memory_stats: context or output struct missing");
    Context& c = *as_context(ctx);
    // Weights are the host bytes cpu_ref reads in place (the mapping), not copies.
    out->weights_bytes = c.model->weights_bytes;
    out->kv_bytes = c.kv->bytes();
    out->scratch_bytes = c.scratch_bytes.load();
    out->device_peak_bytes = 0;
    return ER_OK;
}

const er_backend_iface kIface = {
    sizeof(er_backend_iface),
    device_count,
    device_info,
    create,
    destroy,
    supports,
    model_load,
    model_free,
    context_create,
    context_free,
    plan_create,
    plan_free,
    plan_set_input,
    plan_execute,
    plan_get_output,
    plan_argmax,
    memory_stats,
};

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_BACKEND, "cpu_ref", "1.0.0",
                           "FP32 reference backend: exact GGUF decoding, deterministic, OpenBLAS prefill", &kIface};

}  // namespace
}  // namespace edgerun::cpu_ref

EDGERUN_DEFINE_PLUGIN(edgerun::cpu_ref::kPlugin)
