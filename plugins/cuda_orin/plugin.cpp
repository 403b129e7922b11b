// cuda_orin's ABI entries (abi.h, ER_ABI_VERSION 2): devices, model upload with repack,
// contexts with the KV cache allocated up front, plans and steps (plan.cpp). Plain C++
// against the Device interface, so the same entries run on the GPU (cuda_device.cpp) and
// on the CPU emulation of the kernels (tests/cuda/emu/emulated_device.cpp).
#include "backend.hpp"
#include "backend_options.hpp"
#include "plan.hpp"

#include <edgerun/dtype.hpp>
#include <edgerun/plugin_sdk.hpp>
#include <edgerun/quant/blocks.hpp>

#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

namespace edgerun::cuda_orin {

std::string memory_shortfall(Device& device, const char* what, uint64_t need, const MemoryFigures& figures) {
    const DeviceMemory m = device.memory();
    if (need <= m.free) return "";
    auto mib = [](uint64_t bytes) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / 1048576.0);
        return std::string(text);
    };
    // Free memory is what is left after the device's own (the context, the GEMM's handle
    // and workspace), named so that the line says where the rest went. Then the figures
    // known at this stage: the weights at load; with the KV cache at context creation; and
    // the scratch too when a graph is compiled.
    const DeviceDescription& d = device.description();
    const std::string context = d.context_unmeasured.empty() ? mib(d.context_bytes) : "unmeasured";
    std::string line = std::string("cuda_orin: ") + what + ": " + mib(need) + " of device memory needed, " +
                       mib(m.free) + " free (of " + mib(m.total) + "; taken at open: CUDA context " + context +
                       ", GEMM " + mib(d.gemm_bytes) + "); model " + mib(figures.model);
    if (figures.kv || figures.scratch) line += ", KV cache " + mib(figures.kv) + " at this context";
    if (figures.scratch) line += ", scratch " + mib(figures.scratch);
    return line;
}

namespace {

using sdk::Failure;
using sdk::guard;

constexpr int32_t kMaxSeqs = 16;

std::string type_name(int32_t dtype) {
    const DTypeInfo* info = dtype_info(dtype);
    return info ? std::string(info->name) : "type " + std::to_string(dtype);
}

// Types the embedding kernel and the host-side F32 conversion read (blocks.hpp).
bool decodable(int32_t dtype) {
    float out[256];
    static const uint8_t zeros[1024] = {};
    const DTypeInfo* info = dtype_info(dtype);
    return info && info->block_elems <= 256 && quant::dequantize_row(dtype, zeros, out, info->block_elems);
}

int32_t supports(er_backend*, const er_op_query* q) {
    if (!q || q->struct_size < sizeof(er_op_query)) return 0;
    switch (q->op) {
        case ER_OP_EMBED: return decodable(q->weight_dtype) ? 1 : 0;
        case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: case ER_OP_LOGITS:
            return is_gemv_weight_type(q->weight_dtype) ? 1 : 0;
        case ER_OP_RMS_NORM: return q->weight_dtype < 0 || decodable(q->weight_dtype) ? 1 : 0;
        case ER_OP_ROPE: return q->head_dim > 0 && q->head_dim % 2 == 0 && q->head_dim <= 2048 ? 1 : 0;
        case ER_OP_ATTENTION:
            if (q->head_dim < 1 || q->head_dim > 1024) return 0;
            if (q->kv_type == ER_KV_F32 || q->kv_type == ER_KV_F16) return 1;
            if (q->kv_type == ER_KV_Q8) return q->head_dim % 32 == 0 ? 1 : 0;
            return 0;
        case ER_OP_SWIGLU: case ER_OP_ADD: return 1;
        default: return 0;
    }
}

er_status device_info(int32_t index, er_device_info* out, er_error* err) {
    return guard(err, [&] {
        if (!out || out->struct_size < sizeof(er_device_info)) throw Failure(ER_E_INVALID_ARGUMENT, "device_info: bad output struct");
        std::unique_ptr<Device> device = open_device(index);
        const DeviceDescription& d = device->description();
        std::snprintf(out->name, sizeof out->name, "%s", d.name.c_str());
        std::snprintf(out->kind, sizeof out->kind, "gpu");
        out->memory_total = d.memory_total;
        out->memory_free = device->memory().free;
        out->unified_memory = d.integrated ? 1 : 0;
        out->score = d.score;  // a usable GPU above cpu_ref; the emulated test device 0
        out->max_seqs = kMaxSeqs;
    });
}

er_status create(const er_backend_params* params, er_backend** out, er_error* err) {
    return guard(err, [&] {
        if (!out) throw Failure(ER_E_INVALID_ARGUMENT, "create: no output pointer");
        *out = nullptr;
        if (!params || params->struct_size < sizeof(er_backend_params))
            throw Failure(ER_E_INVALID_ARGUMENT, "create: backend params missing or too small");
        auto backend = std::make_unique<Backend>();
        const OpenOptions open = apply_backend_options(params->options ? params->options : "", *backend);
        backend->device = open_device(params->device);
        const DeviceDescription& device = backend->device->description();
        if (open.weights_shared.value_or(false) && !device.host_filled_memory)
            throw Failure(ER_E_UNSUPPORTED, "option weights=shared: " + device.name + " has no managed memory");
        backend->weights_shared = open.weights_shared.value_or(device.integrated && device.host_filled_memory);
        backend->device->set_launch_timing(backend->profile);
        backend->device->set_skipped_launches(backend->profile_skip);
        if (backend->profile_skip)
            sdk::logf(ER_LOG_WARN, "cuda_orin: option %s: those launches are not made, so every output is wrong "
                      "(for timing a step without them only)", open.profile_skip.c_str());
        backend->device->set_programmatic_launch(backend->pdl.value_or(true), backend->pdl.has_value());
        log_memory_taken(*backend->device, "opening the device (and cuBLAS)", device.context_bytes + device.gemm_bytes);
        *out = reinterpret_cast<er_backend*>(backend.release());
    });
}

// What the graphs use a weight for (ER_USE_*); no usage given: every use its type allows.
struct Uses {
    bool embed = false, matmul = false, vector = false;
};
Uses uses_of(uint32_t usage, int64_t rows) {
    if (usage == 0xFFFFFFFFu) return {true, true, rows == 1};
    return {(usage & ER_USE_EMBED) != 0, (usage & ER_USE_MATMUL) != 0, (usage & ER_USE_VECTOR) != 0};
}

// The forms a weight is held in, and where each lies in the model's one allocation
// (Model::weight_memory). The GEMV layout serves EMBED as well as the GEMVs, so a weight
// used for both (tied embeddings) is held once; the GGUF table only for an embedding of a
// type that layout cannot hold.
struct Forms {
    bool table = false, packed = false, floats = false;
    uint64_t table_at = 0, packed_at = 0, floats_at = 0;
};
constexpr uint64_t kFormAlignment = 256;  // as cudaMalloc's: 16-byte loads need less

// Writes one form of a weight at `to`: `bytes` that are either `ready` (the file's own) or
// made by `fill`. Shared (option weights=): `to` is memory the host writes in place and
// the device then reads, so a Jetson never holds the form twice; otherwise the form is
// made on the host and copied to device memory.
void upload_form(Device& device, bool shared, uint8_t* to, uint64_t bytes, const uint8_t* ready,
                 const std::function<void(uint8_t*)>& fill) {
    if (shared) {
        // Every byte is written (repack_matrix zeroes its padding): the memory comes
        // with no promised contents, and the emulated device fills it with 0xFF.
        if (ready)
            std::memcpy(to, ready, bytes);
        else
            fill(to);
        return;
    }
    if (ready) {
        device.copy_to_device(to, ready, bytes);
    } else {
        std::vector<uint8_t> staging(bytes);
        fill(staging.data());
        device.copy_to_device(to, staging.data(), bytes);
    }
}

er_status model_load(er_backend* handle, const er_model_params* params, er_model** out, er_error* err) {
    return guard(err, [&] {
        if (!out) throw Failure(ER_E_INVALID_ARGUMENT, "model_load: no output pointer");
        *out = nullptr;
        if (!params || params->struct_size < sizeof(er_model_params) || params->n_weights < 0 ||
            (params->n_weights > 0 && !params->weights))
            throw Failure(ER_E_INVALID_ARGUMENT, "model_load: model params missing or too small");
        Backend& backend = *reinterpret_cast<Backend*>(handle);
        Device& device = *backend.device;
        auto model = std::make_unique<Model>();
        model->backend = &backend;
        model->weights.resize(size_t(params->n_weights));

        // Shapes and the bytes each form takes, checked against free memory before any upload.
        std::vector<Forms> forms(size_t(params->n_weights));
        uint64_t need = 0;
        auto claim = [&need](uint64_t bytes) {
            const uint64_t at = need;
            need += align_up(bytes, kFormAlignment);
            return at;
        };
        for (int64_t i = 0; i < params->n_weights; ++i) {
            const er_tensor_desc& t = params->weights[i];
            DeviceWeight& w = model->weights[size_t(i)];
            w.name = std::string(sdk::view(t.name));
            w.dtype = t.dtype;
            const std::string label = "weight '" + w.name + "'";
            if (t.n_dims < 1 || t.n_dims > ER_MAX_DIMS) throw Failure(ER_E_FORMAT, label + ": bad dimensions");
            w.cols = t.ne[0];
            w.rows = 1;
            for (int d = 1; d < t.n_dims; ++d) w.rows *= t.ne[d];
            const auto row = row_bytes(t.dtype, w.cols);
            if (!row) throw Failure(ER_E_FORMAT, label + ": rows are not whole blocks of " + type_name(t.dtype));
            w.row_bytes = *row;
            if (t.nbytes < w.row_bytes * uint64_t(w.rows) || !t.data)
                throw Failure(ER_E_FORMAT, label + ": fewer bytes than its shape needs");
            const Uses use = uses_of(params->usage ? params->usage[i] : 0xFFFFFFFFu, w.rows);
            const bool packable = is_gemv_weight_type(t.dtype) && packed_layout(t.dtype, w.rows, w.cols).total_bytes != 0;
            if (use.matmul && !packable && params->usage) {
                if (!is_gemv_weight_type(t.dtype))
                    throw Failure(ER_E_UNSUPPORTED, label + ": cuda_orin cannot multiply " + type_name(t.dtype) + " weights");
                throw Failure(ER_E_UNSUPPORTED, label + ": its shape does not fit the GEMV layout");
            }
            const bool needs_table = use.embed && !packable;
            if ((needs_table || use.vector) && !decodable(t.dtype) && params->usage)
                throw Failure(ER_E_UNSUPPORTED, label + ": cuda_orin cannot decode " + type_name(t.dtype) + " weights");
            Forms& f = forms[size_t(i)];
            f.packed = (use.matmul || use.embed) && packable;
            f.table = needs_table && decodable(t.dtype);
            f.floats = use.vector && decodable(t.dtype);
            if (f.table) f.table_at = claim(w.row_bytes * uint64_t(w.rows));
            if (f.packed) f.packed_at = claim(packed_layout(t.dtype, w.rows, w.cols).total_bytes);
            if (f.floats) f.floats_at = claim(uint64_t(w.rows) * uint64_t(w.cols) * 4);
        }
        if (const std::string why = memory_shortfall(device, "the model's weights", need, {need, 0, 0}); !why.empty())
            throw Failure(ER_E_OUT_OF_MEMORY, why);
        const bool shared = backend.weights_shared;
        if (need)
            model->weight_memory = shared ? DeviceBuffer::host_filled(device, need) : DeviceBuffer(device, need);
        model->bytes = need;
        uint8_t* const memory = model->weight_memory.as<uint8_t>();

        for (int64_t i = 0; i < params->n_weights; ++i) {
            const er_tensor_desc& t = params->weights[i];
            DeviceWeight& w = model->weights[size_t(i)];
            const Forms& f = forms[size_t(i)];
            const uint64_t file_bytes = w.row_bytes * uint64_t(w.rows);
            const auto* file = static_cast<const uint8_t*>(t.data);
            if (f.table) {
                w.table = DeviceSpan(memory + f.table_at, file_bytes);
                upload_form(device, shared, w.table.as<uint8_t>(), file_bytes, file, nullptr);
            }
            if (f.packed) {
                const PackedLayout layout = packed_layout(t.dtype, w.rows, w.cols);
                w.packed_bytes = DeviceSpan(memory + f.packed_at, layout.total_bytes);
                upload_form(device, shared, w.packed_bytes.as<uint8_t>(), layout.total_bytes, nullptr, [&](uint8_t* to) {
                    repack_matrix(t.dtype, t.data, w.rows, w.cols, to);
                });
                w.packed = packed_view(layout, t.dtype, int32_t(w.rows), int32_t(w.cols), w.packed_bytes.data());
            }
            if (f.floats) {
                w.floats = DeviceSpan(memory + f.floats_at, uint64_t(w.rows * w.cols) * 4);
                upload_form(device, shared, w.floats.as<uint8_t>(), w.floats.bytes(), nullptr, [&](uint8_t* to) {
                    for (int64_t r = 0; r < w.rows; ++r)
                        quant::dequantize_row(t.dtype, file + r * w.row_bytes, reinterpret_cast<float*>(to) + r * w.cols,
                                              w.cols);
                });
            }
            // The device holds its own copy now: the host may drop the file's pages.
            if ((f.table || f.packed || f.floats) && params->release)
                params->release(params->release_user_data, t.data, file_bytes);
        }
        if (shared && need) device.hand_over_to_device(memory, need);
        sdk::logf(ER_LOG_INFO, "cuda_orin: weights on the device: %llu bytes (%.1f MiB)",
                  static_cast<unsigned long long>(model->bytes), double(model->bytes) / 1048576.0);
        const DeviceDescription& d = device.description();
        log_memory_taken(device, "the weights", d.context_bytes + d.gemm_bytes + model->bytes);
        *out = reinterpret_cast<er_model*>(model.release());
    });
}

er_status context_create(er_model* handle, const er_context_params* params, er_context** out, er_error* err) {
    return guard(err, [&] {
        if (!out) throw Failure(ER_E_INVALID_ARGUMENT, "context_create: no output pointer");
        *out = nullptr;
        if (!params || params->struct_size < sizeof(er_context_params))
            throw Failure(ER_E_INVALID_ARGUMENT, "context_create: params missing or too small");
        const er_context_params& p = *params;
        if (p.n_ctx < 1 || p.n_batch < 1 || p.n_layer < 0)
            throw Failure(ER_E_INVALID_ARGUMENT, "context: n_ctx and n_batch must be at least 1");
        if (p.n_layer > 0 && (p.n_head_kv < 1 || p.head_dim_k < 1 || p.head_dim_v < 1))
            throw Failure(ER_E_INVALID_ARGUMENT, "context: KV geometry needs n_head_kv, head_dim_k and head_dim_v of at least 1");
        if (p.n_layer > 0 && p.kv_type != ER_KV_F32 && p.kv_type != ER_KV_F16 && p.kv_type != ER_KV_Q8)
            throw Failure(ER_E_INVALID_ARGUMENT, "context: unknown KV cache type " + std::to_string(p.kv_type));
        if (p.n_layer > 0 && p.head_dim_k != p.head_dim_v)
            throw Failure(ER_E_UNSUPPORTED, "cuda_orin needs equal K and V head dims");
        if (p.kv_type == ER_KV_Q8 && p.head_dim_k % 32 != 0)
            throw Failure(ER_E_UNSUPPORTED, "cuda_orin's INT8 cache needs head dims that are multiples of 32");
        if (p.n_seqs > kMaxSeqs) throw Failure(ER_E_UNSUPPORTED, "cuda_orin holds at most 16 sequences per context");
        Model& model = *reinterpret_cast<Model*>(handle);
        Device& device = *model.backend->device;
        auto ctx = std::make_unique<Context>();
        ctx->model = &model;
        ctx->params = p;
        ctx->n_seqs = p.n_seqs > 1 ? p.n_seqs : 1;
        ctx->filled.assign(size_t(ctx->n_seqs), 0);
        ctx->next_pos.assign(size_t(ctx->n_seqs), -1);

        // [layer] K, V, (K scales, V scales), each [sequence][kv head][position][dim].
        KvCacheLayer shape;
        shape.type = p.kv_type == ER_KV_F32 ? kKvF32 : p.kv_type == ER_KV_F16 ? kKvF16 : kKvQ8;
        shape.n_ctx = p.n_ctx;
        shape.n_head_kv = p.n_head_kv;
        shape.head_dim = p.head_dim_k;
        const uint64_t values = kv_values_bytes(shape) * uint64_t(ctx->n_seqs);
        const uint64_t scales = kv_scales_bytes(shape) * uint64_t(ctx->n_seqs);
        const uint64_t per_layer = align_up(values, 256) * 2 + align_up(scales, 256) * 2;
        ctx->kv_bytes = per_layer * uint64_t(p.n_layer);
        if (const std::string why = memory_shortfall(device, "the KV cache at this context", ctx->kv_bytes,
                                                           {model.bytes, ctx->kv_bytes, 0}); !why.empty())
            throw Failure(ER_E_OUT_OF_MEMORY, why);
        if (ctx->kv_bytes) ctx->kv = DeviceBuffer(device, ctx->kv_bytes);
        const DeviceDescription& d = device.description();
        log_memory_taken(device, "the KV cache", d.context_bytes + d.gemm_bytes + model.bytes + ctx->kv_bytes);
        for (int32_t l = 0; l < p.n_layer; ++l) {
            uint8_t* base = ctx->kv.as<uint8_t>() + per_layer * uint64_t(l);
            KvLayerAllSeqs layer;
            layer.layer = shape;
            layer.layer.k = base;
            layer.layer.v = base + align_up(values, 256);
            if (scales) {
                layer.layer.k_scales = reinterpret_cast<uint16_t*>(base + 2 * align_up(values, 256));
                layer.layer.v_scales = reinterpret_cast<uint16_t*>(base + 2 * align_up(values, 256) + align_up(scales, 256));
            }
            layer.seq_stride_values = int64_t(p.n_head_kv) * p.n_ctx * p.head_dim_k;
            layer.seq_stride_scales = shape.type == kKvQ8 ? layer.seq_stride_values / 32 : 0;
            ctx->layers.push_back(layer);
        }
        *out = reinterpret_cast<er_context*>(ctx.release());
    });
}

Plan& plan_of(er_plan* p) { return *reinterpret_cast<Plan*>(p); }

const er_backend_iface kIface = {
    sizeof(er_backend_iface),
    [] { return device_count(); },
    device_info,
    create,
    [](er_backend* b) { delete reinterpret_cast<Backend*>(b); },
    supports,
    model_load,
    [](er_model* m) { delete reinterpret_cast<Model*>(m); },
    context_create,
    [](er_context* c) { delete reinterpret_cast<Context*>(c); },
    [](er_context* ctx, const er_graph* graph, er_plan** out, er_error* err) {
        return guard(err, [&] {
            if (!out || !graph) throw Failure(ER_E_INVALID_ARGUMENT, "plan_create: no graph or output pointer");
            *out = nullptr;
            *out = reinterpret_cast<er_plan*>(new Plan(*reinterpret_cast<Context*>(ctx), *graph));
        });
    },
    [](er_plan* p) { delete reinterpret_cast<Plan*>(p); },
    [](er_plan* p, int32_t value, const void* data, int64_t n_rows, er_error* err) {
        return guard(err, [&] { plan_of(p).set_input(value, data, n_rows); });
    },
    [](er_plan* p, const er_step* step, er_error* err) {
        return guard(err, [&] {
            if (!step) throw Failure(ER_E_INVALID_ARGUMENT, "plan_execute: no step");
            plan_of(p).execute(*step);
        });
    },
    [](er_plan* p, int32_t value, float* dst, int64_t n_rows, er_error* err) {
        return guard(err, [&] { plan_of(p).get_output(value, dst, n_rows); });
    },
    nullptr,  // plan_argmax: the host takes the argmax of the logits
    [](er_context* c, er_memory_stats* out, er_error* err) {
        return guard(err, [&] {
            if (!out || out->struct_size < sizeof(er_memory_stats)) throw Failure(ER_E_INVALID_ARGUMENT, "memory_stats: bad output struct");
            const Context& ctx = *reinterpret_cast<Context*>(c);
            out->weights_bytes = ctx.model->bytes;
            out->kv_bytes = ctx.kv_bytes;
            out->scratch_bytes = ctx.scratch_bytes;
            out->device_peak_bytes = 0;
        });
    },
};

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_BACKEND, kPluginName, "0.2.0",
                           kPluginDescription, &kIface};

}  // namespace
}  // namespace edgerun::cuda_orin

EDGERUN_DEFINE_PLUGIN(edgerun::cuda_orin::kPlugin)

