#include "plan.hpp"

#include <edgerun/argmax.hpp>
#include <edgerun/graph_check.hpp>
#include <edgerun/plugin_sdk.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace edgerun::cpu_ref {
namespace {

using sdk::Failure;
using sdk::set_errorf;

// Floats per buffer are rounded up so every buffer starts 64-byte aligned in the arena.
constexpr int64_t kAlignFloats = 16;
int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

}  // namespace

Plan::Plan(Context& ctx, const er_graph& graph)
    : ctx_(ctx), model_(*ctx.model), pool_(*ctx.model->backend->pool) {
    compile(graph);
    ctx_.scratch_bytes.fetch_add(scratch_bytes_);
}

Plan::~Plan() { ctx_.scratch_bytes.fetch_sub(scratch_bytes_); }

void Plan::compile(const er_graph& graph) {
    // The graph checks every backend makes (edgerun/graph_check.hpp); cpu_ref adds only
    // which weight types it decodes.
    const sdk::CheckedGraph checked =
        sdk::check_graph(graph, ctx_.params, static_cast<int64_t>(model_.weights.size()),
                         [&](int32_t w, const std::string& node) {
                             const WeightRef& ref = model_.weights[w];
                             if (!ref.kernels)
                                 throw Failure(ER_E_UNSUPPORTED, node + ": cpu_ref cannot decode " +
                                                                     dtype_label(ref.dtype) + " weights ('" + ref.name + "')");
                             return sdk::WeightShape{ref.name, ref.dtype, ref.rows, ref.cols};
                         });
    has_attention_ = checked.has_attention;
    max_tokens_ = graph.max_tokens;
    values_.resize(static_cast<size_t>(graph.n_values));
    for (int32_t v = 0; v < graph.n_values; ++v) {
        const er_value_desc& d = graph.values[v];
        values_[v].type = d.type;
        values_[v].flags = d.flags;
        values_[v].width = d.width;
    }
    assign_buffers(graph);
    build_ops(graph);
}

void Plan::assign_buffers(const er_graph& graph) {
    const int32_t n_values = graph.n_values;
    std::vector<int32_t> last_use(n_values, -1);
    for (int32_t i = 0; i < graph.n_nodes; ++i)
        for (int32_t k = 0; k < graph.nodes[i].n_inputs; ++k) last_use[graph.nodes[i].inputs[k]] = i;
    auto pinned = [&](int32_t v) { return (values_[v].flags & (ER_VALUE_INPUT | ER_VALUE_OUTPUT)) != 0; };
    auto floats_of = [&](int32_t v) { return round_up(values_[v].width * max_tokens_, kAlignFloats); };

    // Greedy slot reuse: a value takes the smallest free slot that fits, else grows the
    // largest free one, else opens a new slot. Outputs of a node get slots before its
    // dying inputs are released, so no node writes over its own inputs.
    struct Slot {
        int64_t floats = 0;
        bool busy = false;
    };
    std::vector<Slot> slots;
    std::vector<int32_t> slot_of(n_values, -1);
    auto take = [&](int32_t v) {
        const int64_t need = floats_of(v);
        int32_t best = -1;
        for (int32_t s = 0; s < static_cast<int32_t>(slots.size()); ++s) {
            if (slots[s].busy) continue;
            if (best < 0) { best = s; continue; }
            const bool fits = slots[s].floats >= need, best_fits = slots[best].floats >= need;
            if ((fits && (!best_fits || slots[s].floats < slots[best].floats)) ||
                (!fits && !best_fits && slots[s].floats > slots[best].floats))
                best = s;
        }
        if (best < 0) {
            slots.push_back({});
            best = static_cast<int32_t>(slots.size() - 1);
        }
        slots[best].floats = std::max(slots[best].floats, need);
        slots[best].busy = true;
        slot_of[v] = best;
    };
    for (int32_t v = 0; v < n_values; ++v)
        if (values_[v].type == ER_VALUE_F32 && (values_[v].flags & ER_VALUE_INPUT)) take(v);
    for (int32_t i = 0; i < graph.n_nodes; ++i) {
        const er_node& node = graph.nodes[i];
        for (int32_t k = 0; k < node.n_outputs; ++k) take(node.outputs[k]);
        for (int32_t k = 0; k < node.n_inputs; ++k) {
            const int32_t v = node.inputs[k];
            if (last_use[v] == i && !pinned(v) && slot_of[v] >= 0) slots[slot_of[v]].busy = false;
        }
        for (int32_t k = 0; k < node.n_outputs; ++k) {  // results nobody reads
            const int32_t v = node.outputs[k];
            if (last_use[v] < 0 && !pinned(v)) slots[slot_of[v]].busy = false;
        }
    }
    std::vector<int64_t> offset(slots.size());
    int64_t total = 0;
    for (size_t s = 0; s < slots.size(); ++s) offset[s] = total, total += slots[s].floats;
    arena_.assign(static_cast<size_t>(total + kAlignFloats), 0.0f);
    float* base = arena_.data();
    while (reinterpret_cast<uintptr_t>(base) % (kAlignFloats * sizeof(float)) != 0) ++base;
    int_inputs_.resize(static_cast<size_t>(n_values));
    for (int32_t v = 0; v < n_values; ++v) {
        if (slot_of[v] >= 0) values_[v].f32 = base + offset[slot_of[v]];
        if (values_[v].type == ER_VALUE_I32) {
            int_inputs_[v].assign(static_cast<size_t>(values_[v].width * max_tokens_), 0);
            values_[v].i32 = int_inputs_[v].data();
            scratch_bytes_ += int_inputs_[v].size() * sizeof(int32_t);
        }
    }
    scratch_bytes_ += arena_.size() * sizeof(float);
}

void Plan::build_ops(const er_graph& graph) {
    const int32_t n_threads = pool_.size();
    int64_t max_tile_width = 0, max_matmul_width = 0;
    for (int32_t i = 0; i < graph.n_nodes; ++i) {
        const er_node& node = graph.nodes[i];
        Op op;
        op.kind = node.op;
        op.node = i;
        for (int32_t k = 0; k < node.n_inputs; ++k) op.in[k] = node.inputs[k];
        op.out = node.outputs[0];
        switch (node.op) {
            case ER_OP_EMBED: op.weight = &model_.weights[node.weights[0]]; break;
            case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: case ER_OP_LOGITS:
                op.matmul.x = values_[node.inputs[0]].f32;
                op.matmul.width = values_[node.inputs[0]].width;
                op.matmul.n_targets = node.n_outputs;
                for (int32_t k = 0; k < node.n_outputs; ++k) {
                    MatmulTarget& t = op.matmul.targets[k];
                    t.weight = &model_.weights[node.weights[k]];
                    t.bias = node.op != ER_OP_LOGITS && node.biases[k] >= 0 ? model_.weights[node.biases[k]].dequantized.data() : nullptr;
                    t.out = values_[node.outputs[k]].f32;
                    if (t.weight->dtype != 0) max_tile_width = std::max(max_tile_width, t.weight->cols);
                    max_matmul_width = std::max(max_matmul_width, t.weight->cols);
                }
                break;
            case ER_OP_RMS_NORM:
                op.weight = &model_.weights[node.weights[0]];
                op.norm = node.params.rms_norm;
                break;
            case ER_OP_ROPE: {
                const float* factors = node.weights[0] >= 0 ? model_.weights[node.weights[0]].dequantized.data() : nullptr;
                const er_rope_params& p = node.params.rope;
                // Nodes with the same rope settings share one table of cosines and sines.
                for (int32_t r = 0; r < static_cast<int32_t>(ropes_.size()) && op.rope < 0; ++r) {
                    const er_rope_params& q = ropes_[r].params();
                    if (q.mode == p.mode && q.head_dim == p.head_dim && q.n_rot == p.n_rot && q.freq_base == p.freq_base &&
                        q.freq_scale == p.freq_scale && ropes_[r].freq_factors() == factors)
                        op.rope = r;
                }
                if (op.rope < 0) {
                    ropes_.emplace_back();
                    ropes_.back().init(p, factors, max_tokens_);
                    scratch_bytes_ += ropes_.back().bytes();
                    op.rope = static_cast<int32_t>(ropes_.size() - 1);
                }
                break;
            }
            case ER_OP_ATTENTION:
                op.attention.q = values_[node.inputs[0]].f32;
                op.attention.k = values_[node.inputs[1]].f32;
                op.attention.v = values_[node.inputs[2]].f32;
                op.attention.out = values_[node.outputs[0]].f32;
                op.attention.layer = node.layer;
                op.attention.params = node.params.attention;
                break;
            default: break;
        }
        ops_.push_back(op);
    }
    if (max_tokens_ >= kGemmMinRows && max_tile_width > 0) {
        matmul_scratch_.tile_floats_per_thread = round_up(kGemmTileRows * max_tile_width, kAlignFloats);
        tiles_.assign(static_cast<size_t>(matmul_scratch_.tile_floats_per_thread * n_threads), 0.0f);
        matmul_scratch_.tiles = tiles_.data();
        scratch_bytes_ += tiles_.size() * sizeof(float);
    }
    if (max_tokens_ >= 2 && max_matmul_width > 0) {
        matmul_scratch_.row_floats_per_thread = round_up(max_matmul_width, kAlignFloats);
        decoded_rows_.assign(static_cast<size_t>(matmul_scratch_.row_floats_per_thread * n_threads), 0.0f);
        matmul_scratch_.rows = decoded_rows_.data();
        scratch_bytes_ += decoded_rows_.size() * sizeof(float);
    }
    row_seq_.assign(static_cast<size_t>(max_tokens_), 0);
    row_pos_.assign(static_cast<size_t>(max_tokens_), 0);
    logit_rows_.assign(static_cast<size_t>(max_tokens_), 0);
    int64_t logits_width = 0;
    for (const Op& op : ops_)
        if (op.kind == ER_OP_LOGITS) logits_width = std::max(logits_width, op.matmul.width);
    logits_in_.assign(static_cast<size_t>(logits_width * max_tokens_), 0.0f);
    scratch_bytes_ += logits_in_.size() * sizeof(float) + 3 * row_seq_.size() * sizeof(int32_t);
    if (has_attention_) {
        scores_per_thread_ = round_up(ctx_.params.n_ctx, kAlignFloats);
        scores_.assign(static_cast<size_t>(scores_per_thread_ * n_threads), 0.0f);
        scratch_bytes_ += scores_.size() * sizeof(float);
    }
}

er_status Plan::set_input(int32_t value, const void* data, int64_t n_rows, er_error* err) {
    if (value < 0 || value >= static_cast<int32_t>(values_.size()) || !(values_[value].flags & ER_VALUE_INPUT))
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "value %d is not an input of this graph", value);
    if (!data) return set_errorf(err, ER_E_INVALID_ARGUMENT, "input %d: no data", value);
    if (n_rows < 1 || n_rows > max_tokens_)
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "input %d: %lld rows, this graph takes 1 to %d", value,
                          static_cast<long long>(n_rows), max_tokens_);
    Value& v = values_[value];
    const size_t bytes = static_cast<size_t>(n_rows * v.width) * 4;
    if (v.type == ER_VALUE_I32)
        std::memcpy(v.i32, data, bytes);
    else
        std::memcpy(v.f32, data, bytes);
    v.rows = static_cast<int32_t>(n_rows);
    return ER_OK;
}

er_status Plan::read_rows(const er_step& step, er_error* err) {
    const int32_t n = step.n_tokens;
    const int32_t n_ctx = ctx_.params.n_ctx;
    const int32_t n_seqs = ctx_.kv->n_seqs();
    n_logit_rows_ = 0;
    if (!step.rows) {  // positions pos0.. of sequence 0
        if (step.pos0 < 0 || int64_t{step.pos0} + n > n_ctx)
            return set_errorf(err, ER_E_INVALID_ARGUMENT, "positions %d..%lld do not fit the context of %d", step.pos0,
                              static_cast<long long>(step.pos0) + n - 1, n_ctx);
        if (has_attention_ && step.pos0 > ctx_.n_filled[0])
            return set_errorf(err, ER_E_INVALID_ARGUMENT,
                              "step starts at position %d but the cache holds only positions before %d", step.pos0,
                              ctx_.n_filled[0]);
        for (int32_t r = 0; r < n; ++r) {
            row_seq_[r] = 0;
            row_pos_[r] = step.pos0 + r;
            if (step.logits_all || r == n - 1) logit_rows_[n_logit_rows_++] = r;
        }
        return ER_OK;
    }
    er_status status = ER_OK;
    int32_t r = 0;
    for (; r < n && status == ER_OK; ++r) {
        const er_step_row& row = step.rows[r];
        if (row.seq < 0 || row.seq >= n_seqs) {
            status = set_errorf(err, ER_E_INVALID_ARGUMENT, "row %d: sequence %d is not in the context's %d", r,
                                row.seq, n_seqs);
            break;
        }
        if (row.pos < 0 || row.pos >= n_ctx) {
            status = set_errorf(err, ER_E_INVALID_ARGUMENT, "row %d: position %d does not fit the context of %d", r,
                                row.pos, n_ctx);
            break;
        }
        int32_t& next = ctx_.next_pos[row.seq];
        if (next < 0 && has_attention_ && row.pos > ctx_.n_filled[row.seq]) {
            status = set_errorf(err, ER_E_INVALID_ARGUMENT,
                                "row %d: sequence %d starts at position %d but its cache holds only positions before %d",
                                r, row.seq, row.pos, ctx_.n_filled[row.seq]);
            break;
        }
        if (next >= 0 && row.pos != next) {
            status = set_errorf(err, ER_E_INVALID_ARGUMENT,
                                "row %d: sequence %d continues at position %d, not %d (a sequence's rows must have "
                                "consecutive positions)",
                                r, row.seq, row.pos, next);
            break;
        }
        next = row.pos + 1;
        row_seq_[r] = row.seq;
        row_pos_[r] = row.pos;
        if (row.logits) logit_rows_[n_logit_rows_++] = r;
    }
    for (int32_t k = 0; k < r && k < n; ++k) ctx_.next_pos[step.rows[k].seq] = -1;
    return status;
}

void Plan::run_logits(const Op& op, int32_t n) {
    if (n_logit_rows_ == n) {
        run_matmul(op.matmul, n, pool_, matmul_scratch_);
        return;
    }
    if (n_logit_rows_ == 0) return;
    MatmulOp some = op.matmul;
    if (n_logit_rows_ == 1) {  // the usual decode: one row, no copy
        some.x += static_cast<int64_t>(logit_rows_[0]) * some.width;
    } else {
        for (int32_t k = 0; k < n_logit_rows_; ++k)
            std::memcpy(logits_in_.data() + k * some.width, some.x + static_cast<int64_t>(logit_rows_[k]) * some.width,
                        static_cast<size_t>(some.width) * sizeof(float));
        some.x = logits_in_.data();
    }
    run_matmul(some, n_logit_rows_, pool_, matmul_scratch_);
}

er_status Plan::execute(const er_step& step, er_error* err) {
    std::lock_guard<std::mutex> lock(ctx_.step_mutex);
    const int32_t n = step.n_tokens;
    if (n < 1 || n > max_tokens_)
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "step of %d tokens, this graph takes 1 to %d", n, max_tokens_);
    if (er_status status = read_rows(step, err); status != ER_OK) return status;
    for (int32_t v = 0; v < static_cast<int32_t>(values_.size()); ++v)
        if ((values_[v].flags & ER_VALUE_INPUT) && values_[v].rows < n)
            return set_errorf(err, ER_E_INVALID_ARGUMENT, "input %d has %d rows set, the step needs %d", v,
                              values_[v].rows, n);
    for (const Op& op : ops_) {
        if (op.kind != ER_OP_EMBED) continue;
        const int32_t* ids = values_[op.in[0]].i32;
        for (int32_t r = 0; r < n; ++r)
            if (ids[r] < 0 || ids[r] >= op.weight->rows)
                return set_errorf(err, ER_E_INVALID_ARGUMENT, "token id %d is outside the vocabulary [0, %lld)", ids[r],
                                  static_cast<long long>(op.weight->rows));
    }
    for (RopeTable& table : ropes_) table.compute(row_pos_.data(), n);
    const StepRows rows{row_seq_.data(), row_pos_.data(), n};

    for (const Op& op : ops_) {
        const Value& out = values_[op.out];
        switch (op.kind) {
            case ER_OP_EMBED: run_embed(values_[op.in[0]].i32, n, *op.weight, out.f32, pool_); break;
            case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: run_matmul(op.matmul, n, pool_, matmul_scratch_); break;
            case ER_OP_LOGITS: run_logits(op, n); break;
            case ER_OP_RMS_NORM:
                run_rms_norm(values_[op.in[0]].f32, out.f32, n, out.width, op.norm.group, op.weight->dequantized.data(),
                             op.norm.eps, pool_);
                break;
            case ER_OP_ROPE: run_rope(values_[op.in[0]].f32, out.f32, n, out.width, ropes_[op.rope], pool_); break;
            case ER_OP_ATTENTION: run_attention(op.attention, *ctx_.kv, rows, pool_, scores_.data(), scores_per_thread_); break;
            case ER_OP_SWIGLU: run_swiglu(values_[op.in[0]].f32, values_[op.in[1]].f32, out.f32, n, out.width, pool_); break;
            case ER_OP_ADD: run_add(values_[op.in[0]].f32, values_[op.in[1]].f32, out.f32, n, out.width, pool_); break;
        }
    }
    for (Value& v : values_)
        if (!(v.flags & ER_VALUE_INPUT)) v.rows = n;
    for (const Op& op : ops_)
        if (op.kind == ER_OP_LOGITS) values_[op.out].rows = n_logit_rows_;
    stepped_ = true;
    if (has_attention_)
        for (int32_t r = 0; r < n; ++r) ctx_.n_filled[row_seq_[r]] = row_pos_[r] + 1;  // a sequence's last row wins
    return ER_OK;
}

er_status Plan::get_output(int32_t value, float* dst, int64_t n_rows, er_error* err) {
    if (value < 0 || value >= static_cast<int32_t>(values_.size()) || !(values_[value].flags & ER_VALUE_OUTPUT))
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "value %d is not an output of this graph", value);
    const Value& v = values_[value];
    if (v.type != ER_VALUE_F32) return set_errorf(err, ER_E_INVALID_ARGUMENT, "output %d is not F32", value);
    if (!dst) return set_errorf(err, ER_E_INVALID_ARGUMENT, "output %d: no destination", value);
    if (!stepped_) return set_errorf(err, ER_E_STATE, "output %d: no step has run yet", value);
    if (n_rows < 1 || n_rows > v.rows)
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "output %d: asked for %lld rows, the last step left %d", value,
                          static_cast<long long>(n_rows), v.rows);
    std::memcpy(dst, v.f32, static_cast<size_t>(n_rows * v.width) * sizeof(float));
    return ER_OK;
}

er_status Plan::argmax(int32_t value, int32_t* tokens, int64_t n_rows, er_error* err) {
    if (!tokens) return set_errorf(err, ER_E_INVALID_ARGUMENT, "argmax: no destination");
    if (value < 0 || value >= static_cast<int32_t>(values_.size()) || !(values_[value].flags & ER_VALUE_OUTPUT) ||
        values_[value].type != ER_VALUE_F32)
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "value %d is not an F32 output of this graph", value);
    const Value& v = values_[value];
    if (!stepped_) return set_errorf(err, ER_E_STATE, "argmax of output %d: no step has run yet", value);
    if (n_rows < 1 || n_rows > v.rows)
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "argmax of output %d: asked for %lld rows, the last step left %d",
                          value, static_cast<long long>(n_rows), v.rows);
    for (int64_t r = 0; r < n_rows; ++r) {
        const Argmax best = argmax_logits(v.f32 + r * v.width, v.width);
        if (best.non_finite >= 0)
            return set_errorf(err, ER_E_INTERNAL, "argmax of output %d, row %lld: the logit of token %lld is not finite",
                              value, static_cast<long long>(r), static_cast<long long>(best.non_finite));
        tokens[r] = static_cast<int32_t>(best.index);
    }
    return ER_OK;
}

}  // namespace edgerun::cpu_ref
