// The example backend: a complete, deliberately partial backend plugin, written to be
// read by whoever writes the next one. It runs on the host CPU in plain FP32 loops and
// implements exactly this subset of the graph ABI (edgerun/abi.h):
//
//   EMBED, MATMUL, MATMUL_MULTI, LOGITS   with F32 or Q8_0 weights
//   RMS_NORM                              with F32 weights
//   ROPE                                  both modes, optional F32 frequency factors
//   ATTENTION                             with an F32 KV cache
//   SWIGLU, ADD
//
// and says supports() = 0 for everything else (F16, BF16, the other quantized types,
// F16 and Q8 KV caches). The runtime refuses to load a model on it that needs anything
// outside the subset, naming each missing op and type; the conformance suite
// (edgerun-conformance) tests the subset and lists the rest as missing coverage. See
// docs/writing-a-backend-plugin.md.
//
// The objects of the ABI, and what this backend keeps in each:
//   er_backend  the device: nothing here (one host CPU)
//   er_model    the weights: pointers to the host bytes the runtime hands over (the
//               model file's mapping), never copies
//   er_context  one conversation: its KV cache
//   er_plan     one compiled graph: a buffer per value, reused by every step
#include <edgerun/plugin_sdk.hpp>
#include <edgerun/quant/blocks.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using edgerun::sdk::Failure;
using edgerun::sdk::guard;

constexpr int32_t kF32 = 0, kQ8_0 = 8;  // GGUF type ids (edgerun/dtype.hpp has them all)

// --------------------------------------------------------------- weights --

struct Weight {
    std::string name;
    int32_t dtype = kF32;
    int64_t cols = 0, rows = 0;  // rows of `cols` values
    const uint8_t* data = nullptr;

    uint64_t row_bytes() const {
        return dtype == kF32 ? uint64_t(cols) * 4 : uint64_t(cols / 32) * sizeof(edgerun::quant::BlockQ8_0);
    }
};

// Row `r` of a weight as floats. A Q8_0 block is 32 values: one fp16 scale d and 32
// signed bytes q; value i is d * q[i].
void dequantize_row(const Weight& w, int64_t r, float* out) {
    const uint8_t* src = w.data + uint64_t(r) * w.row_bytes();
    if (w.dtype == kF32) {
        std::memcpy(out, src, size_t(w.cols) * sizeof(float));
        return;
    }
    for (int64_t b = 0; b < w.cols / 32; ++b) {
        edgerun::quant::BlockQ8_0 block;
        std::memcpy(&block, src + b * sizeof block, sizeof block);
        const float d = edgerun::quant::fp16_to_fp32(block.d);
        for (int i = 0; i < 32; ++i) out[b * 32 + i] = d * float(block.qs[i]);
    }
}

std::vector<float> dequantize(const Weight& w) {
    std::vector<float> out(size_t(w.cols * w.rows));
    for (int64_t r = 0; r < w.rows; ++r) dequantize_row(w, r, out.data() + r * w.cols);
    return out;
}

float dot(const float* a, const float* b, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

// ---------------------------------------------------------------- objects --

struct Model {
    std::vector<Weight> weights;
};

struct Context {
    Model* model = nullptr;
    er_context_params params{};
    std::vector<float> k, v;  // [layer][position][kv head][head_dim]

    float* k_at(int64_t layer, int64_t pos, int64_t head) {
        return &k[((layer * params.n_ctx + pos) * params.n_head_kv + head) * params.head_dim_k];
    }
    float* v_at(int64_t layer, int64_t pos, int64_t head) {
        return &v[((layer * params.n_ctx + pos) * params.n_head_kv + head) * params.head_dim_v];
    }
};

struct Plan {
    Context* ctx = nullptr;
    int32_t max_tokens = 1;
    std::vector<er_node> nodes;
    std::vector<er_value_desc> values;
    std::vector<std::vector<float>> floats;  // F32 values: max_tokens rows each
    std::vector<std::vector<int32_t>> ids;   // I32 values (token ids)
    std::vector<int32_t> rows;               // rows each value holds after the last step
};

// ------------------------------------------------------------- the subset --

bool matmul_type(int32_t dtype) { return dtype == kF32 || dtype == kQ8_0; }

int32_t supports(er_backend*, const er_op_query* q) {
    switch (q->op) {
        case ER_OP_EMBED: case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: case ER_OP_LOGITS:
            return matmul_type(q->weight_dtype);
        case ER_OP_RMS_NORM: return q->weight_dtype == kF32;
        case ER_OP_ROPE: case ER_OP_SWIGLU: case ER_OP_ADD: return 1;
        case ER_OP_ATTENTION: return q->kv_type == ER_KV_F32;
        default: return 0;
    }
}

// --------------------------------------------------------------------- ops --

void run_matmul(Plan& p, const er_node& node, int32_t n, bool last_row_only) {
    const float* x = p.floats[node.inputs[0]].data();
    const int64_t width = p.values[node.inputs[0]].width;
    const int32_t first = last_row_only ? n - 1 : 0;
    for (int32_t k = 0; k < node.n_outputs; ++k) {
        const Weight& w = p.ctx->model->weights[node.weights[k]];
        const std::vector<float> bias = node.biases[k] >= 0 ? dequantize(p.ctx->model->weights[node.biases[k]]) : std::vector<float>();
        float* out = p.floats[node.outputs[k]].data();
        std::vector<float> row(size_t(w.cols));
        for (int64_t j = 0; j < w.rows; ++j) {
            dequantize_row(w, j, row.data());
            for (int32_t r = first; r < n; ++r)
                out[(r - first) * w.rows + j] = dot(x + r * width, row.data(), width) + (bias.empty() ? 0.0f : bias[j]);
        }
    }
}

void run_rms_norm(Plan& p, const er_node& node, int32_t n) {
    const std::vector<float> gain = dequantize(p.ctx->model->weights[node.weights[0]]);
    const int64_t width = p.values[node.inputs[0]].width, group = node.params.rms_norm.group;
    for (int64_t i0 = 0; i0 < n * width; i0 += group) {
        const float* x = &p.floats[node.inputs[0]][i0];
        float* y = &p.floats[node.outputs[0]][i0];
        double sum = 0.0;
        for (int64_t i = 0; i < group; ++i) sum += double(x[i]) * x[i];
        const float scale = float(1.0 / std::sqrt(sum / double(group) + node.params.rms_norm.eps));
        for (int64_t i = 0; i < group; ++i) y[i] = x[i] * scale * gain[i];
    }
}

void run_rope(Plan& p, const er_node& node, int32_t n, int32_t pos0) {
    const er_rope_params& rp = node.params.rope;
    const std::vector<float> factors = node.weights[0] >= 0 ? dequantize(p.ctx->model->weights[node.weights[0]]) : std::vector<float>();
    const int64_t width = p.values[node.inputs[0]].width;
    const int32_t half = rp.n_rot / 2;
    for (int32_t r = 0; r < n; ++r)
        for (int64_t h0 = 0; h0 < width; h0 += rp.head_dim) {
            const float* x = &p.floats[node.inputs[0]][r * width + h0];
            float* y = &p.floats[node.outputs[0]][r * width + h0];
            for (int32_t i = 0; i < rp.head_dim; ++i) y[i] = x[i];  // dimensions past n_rot pass through
            for (int32_t k = 0; k < half; ++k) {
                // Pair k turns at freq_base^(-2k/n_rot) radians per position.
                double freq = std::pow(double(rp.freq_base), -2.0 * k / rp.n_rot) * rp.freq_scale;
                if (!factors.empty()) freq /= factors[k];
                const double angle = double(pos0 + r) * freq, c = std::cos(angle), s = std::sin(angle);
                // NORMAL pairs neighbours (2k, 2k+1); NEOX pairs the halves (k, k + n_rot/2).
                const int32_t a = rp.mode == ER_ROPE_NEOX ? k : 2 * k;
                const int32_t b = rp.mode == ER_ROPE_NEOX ? k + half : 2 * k + 1;
                y[a] = float(x[a] * c - x[b] * s);
                y[b] = float(x[a] * s + x[b] * c);
            }
        }
}

// Appends this step's keys and values to the cache, then lets every query row attend to
// the positions up to its own (causal), query head h reading KV head h / (n_head / n_head_kv).
void run_attention(Plan& p, const er_node& node, int32_t n, int32_t pos0) {
    const er_attention_params& ap = node.params.attention;
    Context& c = *p.ctx;
    const int64_t dk = ap.head_dim_k, dv = ap.head_dim_v;
    for (int32_t r = 0; r < n; ++r)
        for (int32_t g = 0; g < ap.n_head_kv; ++g) {
            std::memcpy(c.k_at(node.layer, pos0 + r, g), &p.floats[node.inputs[1]][(int64_t(r) * ap.n_head_kv + g) * dk], size_t(dk) * 4);
            std::memcpy(c.v_at(node.layer, pos0 + r, g), &p.floats[node.inputs[2]][(int64_t(r) * ap.n_head_kv + g) * dv], size_t(dv) * 4);
        }
    const int32_t heads_per_kv = ap.n_head / ap.n_head_kv;
    std::vector<float> weights;
    for (int32_t r = 0; r < n; ++r) {
        const int32_t n_pos = pos0 + r + 1;
        for (int32_t h = 0; h < ap.n_head; ++h) {
            const int32_t g = h / heads_per_kv;
            const float* q = &p.floats[node.inputs[0]][(int64_t(r) * ap.n_head + h) * dk];
            // softmax(scale * q.k): subtract the largest score first so exp() cannot overflow.
            weights.resize(size_t(n_pos));
            float max = -INFINITY;
            for (int32_t j = 0; j < n_pos; ++j) {
                weights[j] = ap.scale * dot(q, c.k_at(node.layer, j, g), dk);
                max = std::fmax(max, weights[j]);
            }
            double sum = 0.0;
            for (int32_t j = 0; j < n_pos; ++j) {
                weights[j] = std::exp(weights[j] - max);
                sum += weights[j];
            }
            float* out = &p.floats[node.outputs[0]][(int64_t(r) * ap.n_head + h) * dv];
            for (int64_t i = 0; i < dv; ++i) {
                double acc = 0.0;
                for (int32_t j = 0; j < n_pos; ++j) acc += double(weights[j]) * c.v_at(node.layer, j, g)[i];
                out[i] = float(acc / sum);
            }
        }
    }
}

void execute(Plan& p, const er_step& step) {
    const int32_t n = step.n_tokens;
    if (n < 1 || n > p.max_tokens) throw Failure(ER_E_INVALID_ARGUMENT, "a step of " + std::to_string(n) + " tokens");
    if (step.pos0 < 0 || step.pos0 + n > p.ctx->params.n_ctx) throw Failure(ER_E_INVALID_ARGUMENT, "positions past the context");
    for (const er_node& node : p.nodes) {
        const int64_t width = p.values[node.outputs[0]].width;
        float* out = p.floats[node.outputs[0]].data();
        switch (node.op) {
            case ER_OP_EMBED: {
                const Weight& table = p.ctx->model->weights[node.weights[0]];
                for (int32_t r = 0; r < n; ++r) {
                    const int32_t id = p.ids[node.inputs[0]][r];
                    if (id < 0 || id >= table.rows) throw Failure(ER_E_INVALID_ARGUMENT, "token id " + std::to_string(id) + " is outside the vocabulary");
                    dequantize_row(table, id, out + r * width);
                }
                break;
            }
            case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: run_matmul(p, node, n, false); break;
            case ER_OP_LOGITS: run_matmul(p, node, n, !step.logits_all); break;
            case ER_OP_RMS_NORM: run_rms_norm(p, node, n); break;
            case ER_OP_ROPE: run_rope(p, node, n, step.pos0); break;
            case ER_OP_ATTENTION: run_attention(p, node, n, step.pos0); break;
            case ER_OP_SWIGLU: case ER_OP_ADD: {
                const float* a = p.floats[node.inputs[0]].data();
                const float* b = p.floats[node.inputs[1]].data();
                for (int64_t i = 0; i < n * width; ++i)
                    out[i] = node.op == ER_OP_ADD ? a[i] + b[i] : a[i] / (1.0f + std::exp(-a[i])) * b[i];  // silu(a) * b
                break;
            }
        }
        for (int32_t k = 0; k < node.n_outputs; ++k)
            p.rows[node.outputs[k]] = node.op == ER_OP_LOGITS && !step.logits_all ? 1 : n;
    }
}

// -------------------------------------------------------------- the ABI --

er_status device_info(int32_t device, er_device_info* out, er_error* err) {
    if (device != 0) return edgerun::sdk::set_error(err, ER_E_INVALID_ARGUMENT, "example has one device");
    std::snprintf(out->name, sizeof out->name, "example (host CPU, F32 and Q8_0)");
    std::snprintf(out->kind, sizeof out->kind, "cpu");
    out->unified_memory = 1;
    out->score = 0;  // never chosen unless asked for by name
    return ER_OK;
}

er_status model_load(er_backend*, const er_model_params* params, er_model** out, er_error* err) {
    return guard(err, [&] {
        auto model = std::make_unique<Model>();
        for (int64_t i = 0; i < params->n_weights; ++i) {
            const er_tensor_desc& t = params->weights[i];
            Weight w;
            w.name = std::string(edgerun::sdk::view(t.name));
            w.dtype = t.dtype;
            w.cols = t.ne[0];
            w.rows = t.n_dims == 1 ? 1 : t.ne[1] * t.ne[2] * t.ne[3];
            w.data = static_cast<const uint8_t*>(t.data);
            const bool used = !params->usage || params->usage[i] != 0;
            if (used && !matmul_type(w.dtype))
                throw Failure(ER_E_UNSUPPORTED, "example runs F32 and Q8_0 weights only; '" + w.name + "' is type " + std::to_string(w.dtype));
            if (w.dtype == kQ8_0 && w.cols % 32 != 0) throw Failure(ER_E_FORMAT, "'" + w.name + "': rows are not whole Q8_0 blocks");
            model->weights.push_back(w);
        }
        *out = reinterpret_cast<er_model*>(model.release());
    });
}

er_status context_create(er_model* model, const er_context_params* params, er_context** out, er_error* err) {
    return guard(err, [&] {
        if (params->kv_type != ER_KV_F32) throw Failure(ER_E_UNSUPPORTED, "example keeps an F32 KV cache only");
        auto ctx = std::make_unique<Context>();
        ctx->model = reinterpret_cast<Model*>(model);
        ctx->params = *params;
        const size_t rows = size_t(params->n_layer) * size_t(params->n_ctx) * size_t(params->n_head_kv);
        ctx->k.assign(rows * size_t(params->head_dim_k), 0.0f);
        ctx->v.assign(rows * size_t(params->head_dim_v), 0.0f);
        *out = reinterpret_cast<er_context*>(ctx.release());
    });
}

// Everything a step needs is allocated here: steps only compute.
er_status plan_create(er_context* ctx, const er_graph* graph, er_plan** out, er_error* err) {
    return guard(err, [&] {
        auto plan = std::make_unique<Plan>();
        plan->ctx = reinterpret_cast<Context*>(ctx);
        plan->max_tokens = graph->max_tokens;
        plan->nodes.assign(graph->nodes, graph->nodes + graph->n_nodes);
        plan->values.assign(graph->values, graph->values + graph->n_values);
        for (const er_node& node : plan->nodes)
            if (node.op == ER_OP_ATTENTION && node.params.attention.n_head_kv != plan->ctx->params.n_head_kv)
                throw Failure(ER_E_INVALID_ARGUMENT, "attention's KV heads differ from the context's");
        plan->floats.resize(plan->values.size());
        plan->ids.resize(plan->values.size());
        plan->rows.assign(plan->values.size(), 0);
        for (size_t v = 0; v < plan->values.size(); ++v) {
            const size_t size = size_t(plan->values[v].width) * size_t(graph->max_tokens);
            if (plan->values[v].type == ER_VALUE_I32) plan->ids[v].assign(size, 0);
            else plan->floats[v].assign(size, 0.0f);
        }
        *out = reinterpret_cast<er_plan*>(plan.release());
    });
}

er_status plan_set_input(er_plan* handle, int32_t value, const void* data, int64_t n_rows, er_error* err) {
    return guard(err, [&] {
        Plan& p = *reinterpret_cast<Plan*>(handle);
        if (value < 0 || value >= int32_t(p.values.size()) || !(p.values[value].flags & ER_VALUE_INPUT))
            throw Failure(ER_E_INVALID_ARGUMENT, "value " + std::to_string(value) + " is not an input");
        if (n_rows < 1 || n_rows > p.max_tokens) throw Failure(ER_E_INVALID_ARGUMENT, "too many rows");
        const size_t bytes = size_t(n_rows * p.values[value].width) * 4;
        if (p.values[value].type == ER_VALUE_I32) std::memcpy(p.ids[value].data(), data, bytes);
        else std::memcpy(p.floats[value].data(), data, bytes);
    });
}

er_status plan_execute(er_plan* handle, const er_step* step, er_error* err) {
    return guard(err, [&] { execute(*reinterpret_cast<Plan*>(handle), *step); });
}

er_status plan_get_output(er_plan* handle, int32_t value, float* dst, int64_t n_rows, er_error* err) {
    return guard(err, [&] {
        Plan& p = *reinterpret_cast<Plan*>(handle);
        if (value < 0 || value >= int32_t(p.values.size()) || !(p.values[value].flags & ER_VALUE_OUTPUT))
            throw Failure(ER_E_INVALID_ARGUMENT, "value " + std::to_string(value) + " is not an output");
        if (n_rows < 1 || n_rows > p.rows[value]) throw Failure(ER_E_INVALID_ARGUMENT, "more rows than the last step made");
        std::memcpy(dst, p.floats[value].data(), size_t(n_rows * p.values[value].width) * sizeof(float));
    });
}

const er_backend_iface kIface = {
    sizeof(er_backend_iface),
    [] { return int32_t{1}; },  // device_count
    device_info,
    [](const er_backend_params*, er_backend** out, er_error*) {  // create: no state to keep
        *out = reinterpret_cast<er_backend*>(new char(0));
        return er_status{ER_OK};
    },
    [](er_backend* b) { delete reinterpret_cast<char*>(b); },
    supports,
    model_load,
    [](er_model* m) { delete reinterpret_cast<Model*>(m); },
    context_create,
    [](er_context* c) { delete reinterpret_cast<Context*>(c); },
    plan_create,
    [](er_plan* p) { delete reinterpret_cast<Plan*>(p); },
    plan_set_input,
    plan_execute,
    plan_get_output,
    nullptr,  // plan_argmax: optional, the host takes the argmax of plan_get_output's logits
    nullptr,  // memory_stats: optional
};

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_BACKEND, "example", "0.2.0",
                           "example third-party backend: F32 and Q8_0 weights, F32 KV cache, plain loops", &kIface};

}  // namespace

EDGERUN_DEFINE_PLUGIN(kPlugin)
