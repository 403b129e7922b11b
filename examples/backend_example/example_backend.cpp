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
//   er_context  up to kMaxSeqs conversations (sequences): a KV cache for each
//   er_plan     one compiled graph: a buffer per value, reused by every step
//
// A step carries rows of any of the context's sequences (er_step_row: sequence,
// position, whether LOGITS computes it); each row attends only to its own sequence's
// cache, so it comes out as it would in a step of its own. A backend that keeps one
// sequence per context leaves device_info's max_seqs at 0 and the runtime steps the
// sequences one context at a time instead.
#include <edgerun/graph_check.hpp>
#include <edgerun/plugin_sdk.hpp>
#include <edgerun/quant/blocks.hpp>

#include <algorithm>
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
constexpr int32_t kMaxSeqs = 16;        // sequences one context may hold (er_device_info.max_seqs)

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

// Eight running sums, not one: each add waits only for its own sum's previous add, so
// the CPU overlaps them (and the compiler can use vector registers).
float dot(const float* a, const float* b, int64_t n) {
    float sums[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) sums[k] += a[i + k] * b[i + k];
    for (; i < n; ++i) sums[0] += a[i] * b[i];
    return ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]));
}

// ---------------------------------------------------------------- objects --

struct Model {
    std::vector<Weight> weights;
};

struct Context {
    Model* model = nullptr;
    er_context_params params{};
    int32_t n_seqs = 1;
    std::vector<float> k, v;      // [layer][sequence][position][kv head][head_dim]
    std::vector<int32_t> filled;  // per sequence: positions [0, filled) hold keys and values

    int64_t row(int64_t layer, int64_t seq, int64_t pos, int64_t head) const {
        return ((layer * n_seqs + seq) * params.n_ctx + pos) * params.n_head_kv + head;
    }
    float* k_at(int64_t layer, int64_t seq, int64_t pos, int64_t head) { return &k[row(layer, seq, pos, head) * params.head_dim_k]; }
    float* v_at(int64_t layer, int64_t seq, int64_t pos, int64_t head) { return &v[row(layer, seq, pos, head) * params.head_dim_v]; }
};

struct Plan {
    Context* ctx = nullptr;
    int32_t max_tokens = 1;
    std::vector<er_node> nodes;
    std::vector<er_value_desc> values;
    std::vector<std::vector<float>> floats;  // F32 values: max_tokens rows each
    std::vector<std::vector<int32_t>> ids;   // I32 values (token ids)
    std::vector<int32_t> rows;               // rows each value holds after the last step
    // The step being run: each row's sequence and position, and the rows LOGITS computes.
    std::vector<int32_t> row_seq, row_pos, logit_rows;
    std::vector<float> logits_in;            // LOGITS' input rows gathered when only some ask
    bool has_attention = false;              // steps write the KV cache (so positions must not leave gaps)
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

// out = x · Wᵀ (+ bias) for the first n rows of x.
void run_matmul(Plan& p, const er_node& node, const float* x, int32_t n) {
    const int64_t width = p.values[node.inputs[0]].width;
    for (int32_t k = 0; k < node.n_outputs; ++k) {
        const Weight& w = p.ctx->model->weights[node.weights[k]];
        const std::vector<float> bias = node.biases[k] >= 0 ? dequantize(p.ctx->model->weights[node.biases[k]]) : std::vector<float>();
        float* out = p.floats[node.outputs[k]].data();
        std::vector<float> row(size_t(w.cols));
        for (int64_t j = 0; j < w.rows; ++j) {
            dequantize_row(w, j, row.data());
            for (int32_t r = 0; r < n; ++r)
                out[r * w.rows + j] = dot(x + r * width, row.data(), width) + (bias.empty() ? 0.0f : bias[j]);
        }
    }
}

// LOGITS for the rows the step asks about, gathered in step order.
void run_logits(Plan& p, const er_node& node) {
    const int64_t width = p.values[node.inputs[0]].width;
    const float* x = p.floats[node.inputs[0]].data();
    for (size_t i = 0; i < p.logit_rows.size(); ++i)
        std::memcpy(&p.logits_in[i * width], x + p.logit_rows[i] * width, size_t(width) * sizeof(float));
    run_matmul(p, node, p.logits_in.data(), int32_t(p.logit_rows.size()));
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

void run_rope(Plan& p, const er_node& node, int32_t n) {
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
                const double angle = double(p.row_pos[r]) * freq, c = std::cos(angle), s = std::sin(angle);
                // NORMAL pairs neighbours (2k, 2k+1); NEOX pairs the halves (k, k + n_rot/2).
                const int32_t a = rp.mode == ER_ROPE_NEOX ? k : 2 * k;
                const int32_t b = rp.mode == ER_ROPE_NEOX ? k + half : 2 * k + 1;
                y[a] = float(x[a] * c - x[b] * s);
                y[b] = float(x[a] * s + x[b] * c);
            }
        }
}

// Appends each row's key and value to its sequence's cache at its position, then lets
// every query row attend to the positions up to its own (causal) of its own sequence,
// query head h reading KV head h / (n_head / n_head_kv).
void run_attention(Plan& p, const er_node& node, int32_t n) {
    const er_attention_params& ap = node.params.attention;
    Context& c = *p.ctx;
    const int64_t dk = ap.head_dim_k, dv = ap.head_dim_v;
    for (int32_t r = 0; r < n; ++r)
        for (int32_t g = 0; g < ap.n_head_kv; ++g) {
            std::memcpy(c.k_at(node.layer, p.row_seq[r], p.row_pos[r], g), &p.floats[node.inputs[1]][(int64_t(r) * ap.n_head_kv + g) * dk], size_t(dk) * 4);
            std::memcpy(c.v_at(node.layer, p.row_seq[r], p.row_pos[r], g), &p.floats[node.inputs[2]][(int64_t(r) * ap.n_head_kv + g) * dv], size_t(dv) * 4);
        }
    const int32_t heads_per_kv = ap.n_head / ap.n_head_kv;
    std::vector<float> weights;
    std::vector<double> acc(static_cast<size_t>(dv));
    for (int32_t r = 0; r < n; ++r) {
        const int32_t seq = p.row_seq[r], n_pos = p.row_pos[r] + 1;
        for (int32_t h = 0; h < ap.n_head; ++h) {
            const int32_t g = h / heads_per_kv;
            const float* q = &p.floats[node.inputs[0]][(int64_t(r) * ap.n_head + h) * dk];
            // softmax(scale * q.k): subtract the largest score first so exp() cannot overflow.
            weights.resize(size_t(n_pos));
            float max = -INFINITY;
            for (int32_t j = 0; j < n_pos; ++j) {
                weights[j] = ap.scale * dot(q, c.k_at(node.layer, seq, j, g), dk);
                max = std::fmax(max, weights[j]);
            }
            double sum = 0.0;
            for (int32_t j = 0; j < n_pos; ++j) {
                weights[j] = std::exp(weights[j] - max);
                sum += weights[j];
            }
            // Position by position, each a contiguous row of V.
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int32_t j = 0; j < n_pos; ++j) {
                const float* v = c.v_at(node.layer, seq, j, g);
                for (int64_t i = 0; i < dv; ++i) acc[size_t(i)] += double(weights[j]) * v[i];
            }
            float* out = &p.floats[node.outputs[0]][(int64_t(r) * ap.n_head + h) * dv];
            for (int64_t i = 0; i < dv; ++i) out[i] = float(acc[size_t(i)] / sum);
        }
    }
}

// Each row's sequence and position, and which rows LOGITS computes: from the row table,
// or for a step without one, positions pos0.. of sequence 0. Checked before anything runs.
void read_rows(Plan& p, const er_step& step) {
    const int32_t n = step.n_tokens;
    Context& c = *p.ctx;
    p.logit_rows.clear();
    for (int32_t r = 0; r < n; ++r) {
        const er_step_row row = step.rows ? step.rows[r] : er_step_row{0, step.pos0 + r, step.logits_all || r == n - 1, 0};
        if (row.seq < 0 || row.seq >= c.n_seqs)
            throw Failure(ER_E_INVALID_ARGUMENT, "row " + std::to_string(r) + ": sequence " + std::to_string(row.seq) + " is not in the context");
        if (row.pos < 0 || row.pos >= c.params.n_ctx) throw Failure(ER_E_INVALID_ARGUMENT, "positions past the context");
        // A sequence's rows continue one another; its first may not leave a gap in its cache.
        int32_t previous = -1;
        for (int32_t e = r - 1; e >= 0 && previous < 0; --e)
            if (p.row_seq[e] == row.seq) previous = e;
        const bool fits = previous >= 0 ? row.pos == p.row_pos[previous] + 1 : !p.has_attention || row.pos <= c.filled[row.seq];
        if (!fits)
            throw Failure(ER_E_INVALID_ARGUMENT, "row " + std::to_string(r) + ": position " + std::to_string(row.pos) +
                                                     " does not continue sequence " + std::to_string(row.seq));
        p.row_seq[r] = row.seq;
        p.row_pos[r] = row.pos;
        if (row.logits) p.logit_rows.push_back(r);
    }
}

void execute(Plan& p, const er_step& step) {
    const int32_t n = step.n_tokens;
    if (n < 1 || n > p.max_tokens) throw Failure(ER_E_INVALID_ARGUMENT, "a step of " + std::to_string(n) + " tokens");
    read_rows(p, step);
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
            case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: run_matmul(p, node, p.floats[node.inputs[0]].data(), n); break;
            case ER_OP_LOGITS: run_logits(p, node); break;
            case ER_OP_RMS_NORM: run_rms_norm(p, node, n); break;
            case ER_OP_ROPE: run_rope(p, node, n); break;
            case ER_OP_ATTENTION: run_attention(p, node, n); break;
            case ER_OP_SWIGLU: case ER_OP_ADD: {
                const float* a = p.floats[node.inputs[0]].data();
                const float* b = p.floats[node.inputs[1]].data();
                for (int64_t i = 0; i < n * width; ++i)
                    out[i] = node.op == ER_OP_ADD ? a[i] + b[i] : a[i] / (1.0f + std::exp(-a[i])) * b[i];  // silu(a) * b
                break;
            }
        }
        for (int32_t k = 0; k < node.n_outputs; ++k)
            p.rows[node.outputs[k]] = node.op == ER_OP_LOGITS ? int32_t(p.logit_rows.size()) : n;
    }
    if (p.has_attention)
        for (int32_t r = 0; r < n; ++r) p.ctx->filled[p.row_seq[r]] = p.row_pos[r] + 1;  // a sequence's last row wins
}

// -------------------------------------------------------------- the ABI --

er_status device_info(int32_t device, er_device_info* out, er_error* err) {
    if (device != 0) return edgerun::sdk::set_error(err, ER_E_INVALID_ARGUMENT, "example has one device");
    std::snprintf(out->name, sizeof out->name, "example (host CPU, F32 and Q8_0)");
    std::snprintf(out->kind, sizeof out->kind, "cpu");
    out->unified_memory = 1;
    out->score = 0;  // never chosen unless asked for by name
    out->max_seqs = kMaxSeqs;
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
        if (params->n_seqs > kMaxSeqs) throw Failure(ER_E_UNSUPPORTED, "example holds at most 16 sequences per context");
        auto ctx = std::make_unique<Context>();
        ctx->model = reinterpret_cast<Model*>(model);
        ctx->params = *params;
        ctx->n_seqs = params->n_seqs > 1 ? params->n_seqs : 1;
        ctx->filled.assign(size_t(ctx->n_seqs), 0);
        const size_t rows = size_t(params->n_layer) * size_t(ctx->n_seqs) * size_t(params->n_ctx) * size_t(params->n_head_kv);
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
        // The SDK's graph checks (edgerun/graph_check.hpp): value table, arity, widths,
        // weight shapes, KV geometry. The backend adds only which weight types it runs.
        const Model& model = *plan->ctx->model;
        const edgerun::sdk::CheckedGraph checked = edgerun::sdk::check_graph(
            *graph, plan->ctx->params, int64_t(model.weights.size()), [&](int32_t index, const std::string& node) {
                const Weight& w = model.weights[size_t(index)];
                if (!matmul_type(w.dtype))
                    throw Failure(ER_E_UNSUPPORTED, node + ": example runs F32 and Q8_0 weights only; '" + w.name +
                                                        "' is type " + std::to_string(w.dtype));
                return edgerun::sdk::WeightShape{w.name, w.dtype, w.rows, w.cols};
            });
        plan->has_attention = checked.has_attention;
        plan->max_tokens = graph->max_tokens;
        plan->nodes.assign(graph->nodes, graph->nodes + graph->n_nodes);
        plan->values.assign(graph->values, graph->values + graph->n_values);
        plan->floats.resize(plan->values.size());
        plan->ids.resize(plan->values.size());
        plan->rows.assign(plan->values.size(), 0);
        plan->row_seq.assign(size_t(graph->max_tokens), 0);
        plan->row_pos.assign(size_t(graph->max_tokens), 0);
        plan->logit_rows.reserve(size_t(graph->max_tokens));
        int64_t widest = 0;
        for (const er_value_desc& v : plan->values) widest = std::max(widest, v.width);
        plan->logits_in.assign(size_t(widest) * size_t(graph->max_tokens), 0.0f);
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
