#include "plan.hpp"

#include <edgerun/graph_check.hpp>
#include <edgerun/plugin_sdk.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

namespace edgerun::cuda_orin {
namespace {

using sdk::Failure;

Failure invalid(const std::string& what) { return Failure(ER_E_INVALID_ARGUMENT, what); }

}  // namespace

Plan::Plan(Context& ctx, const er_graph& graph) : ctx_(ctx), device_(*ctx.model->backend->device) {
    const Model& model = *ctx.model;
    const sdk::CheckedGraph checked = sdk::check_graph(
        graph, ctx.params, int64_t(model.weights.size()), [&](int32_t index, const std::string& node) {
            const DeviceWeight& w = model.weights[size_t(index)];
            if (!w.table.data() && !w.packed_bytes.data() && !w.floats.data())
                throw Failure(ER_E_UNSUPPORTED, node + ": weight '" + w.name + "' was not loaded (unused, or of a type cuda_orin cannot hold)");
            return sdk::WeightShape{w.name, w.dtype, w.rows, w.cols};
        });
    has_attention_ = checked.has_attention;
    max_tokens_ = graph.max_tokens;
    nodes_.assign(graph.nodes, graph.nodes + graph.n_nodes);
    values_.resize(size_t(graph.n_values));
    for (int32_t v = 0; v < graph.n_values; ++v)
        values_[v] = {graph.values[v].type, graph.values[v].flags, graph.values[v].width, nullptr, nullptr, 0};

    // Each weight must be held in the form its node reads.
    int32_t max_heads = 0, max_rope_heads = 0, tile_rows = kTiledAttentionVectors;
    int64_t ticket_groups = 0;  // the most merge tickets one row of an attention launch takes
    bool split_attention = false, row_attention = false;
    uint64_t max_matmul_values = 0;  // the largest MATMUL weight, rows x cols
    for (size_t i = 0; i < nodes_.size(); ++i) {
        const er_node& node = nodes_[i];
        const std::string label = sdk::node_label(node, int32_t(i));
        auto need = [&](int32_t index, bool ok, const char* form) {
            if (!ok)
                throw Failure(ER_E_UNSUPPORTED, label + ": cuda_orin cannot run it with weight '" + weight(index).name +
                                                    "' (" + form + ")");
        };
        switch (node.op) {
            case ER_OP_EMBED: {
                const DeviceWeight& w = weight(node.weights[0]);
                need(node.weights[0], w.packed_bytes.data() || w.table.data(), "embedding rows");
                break;
            }
            case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: case ER_OP_LOGITS:
                for (int32_t k = 0; k < node.n_outputs; ++k) {
                    need(node.weights[k], weight(node.weights[k]).packed_bytes.data(), "GEMV weight");
                    if (node.biases[k] >= 0) need(node.biases[k], weight(node.biases[k]).floats.data(), "bias");
                    if (node.op != ER_OP_LOGITS)
                        max_matmul_values = std::max(max_matmul_values, uint64_t(weight(node.weights[k]).rows) *
                                                                            uint64_t(weight(node.weights[k]).cols));
                }
                max_gemv_width_ = std::max(max_gemv_width_, values_[node.inputs[0]].width);
                break;
            case ER_OP_RMS_NORM: need(node.weights[0], weight(node.weights[0]).floats.data(), "norm weight"); break;
            case ER_OP_ROPE:
                if (node.weights[0] >= 0) need(node.weights[0], weight(node.weights[0]).floats.data(), "frequency factors");
                break;
            case ER_OP_ATTENTION: {
                const er_attention_params& a = node.params.attention;
                max_heads = std::max(max_heads, a.n_head);
                max_rope_heads = std::max(max_rope_heads, a.n_head + a.n_head_kv);
                ticket_groups = std::max(ticket_groups, attention_merge_tickets(a.n_head, a.n_head_kv, 1));
                const bool split = takes_split_attention(a, ctx.params.kv_type);
                split_attention |= split;
                row_attention |= !split;
                const bool grouped = a.n_head_kv > 0 && a.n_head % a.n_head_kv == 0;
                tile_rows = std::min(tile_rows, split && grouped ? tiled_attention_rows_per_tile(a.n_head / a.n_head_kv) : 0);
                if (size_t(node.layer) >= ctx.layers.size())
                    throw Failure(ER_E_INVALID_ARGUMENT, label + ": layer " + std::to_string(node.layer) +
                                                             " has no KV cache in this context");
                if (a.head_dim_k != a.head_dim_v)
                    throw Failure(ER_E_UNSUPPORTED, label + ": cuda_orin needs equal K and V head dims");
                break;
            }
            default: break;
        }
    }

    // Scratch, counted and checked against free device memory before anything is allocated.
    const int64_t n_pad = padded_length(int32_t(max_gemv_width_));
    n_splits_ = choose_kv_splits(ctx.params.n_ctx, ctx.params.n_head_kv, device_.description().sm_count);
    rows_per_tile_ = split_attention ? tile_rows : 0;
    max_tiles_ = takes_tiled_attention(max_tokens_) ? attention_tiles(max_tokens_) : 0;
    // Partials per head: the split kernel's rows share n_splits_ (attention_splits); the
    // tiled kernel's each take tiled_splits(n).
    int64_t partials = n_splits_ + max_tokens_ - 1;
    for (int32_t n = 2; n <= max_tokens_; ++n)
        if (takes_tiled_attention(n)) partials = std::max<int64_t>(partials, int64_t(n) * tiled_splits(n));
    const uint64_t split_bytes =
        split_attention ? uint64_t(attention_workspace_floats(max_heads, ctx.params.head_dim_k, int(partials))) * 4 : 0;
    // The split kernel's merge tickets (option attention_merge=last_block), one set shared by
    // every layer's launches, which run one after another.
    const Backend& backend = *ctx.model->backend;
    const uint64_t ticket_bytes =
        split_attention && backend.merge_in_split_kernel ? uint64_t(ticket_groups) * uint64_t(max_tokens_) * 4 : 0;
    // The Q/K/V GEMV's tickets (option rope_append=gemv), likewise one set for every layer.
    const uint64_t rope_ticket_bytes = split_attention && backend.rope_append_in_gemv ? uint64_t(max_rope_heads) * 4 : 0;
    // Option widen_kv=1: a layer's INT8 K and V of one sequence as halves, for steps that
    // take the tiled attention (the largest layer's: layers may differ in heads). Optional
    // scratch: left out (the option ignored, with a warning) where only it does not fit.
    uint64_t widened_bytes = 0;
    if (backend.widen_kv && max_tiles_ > 0)
        for (const er_node& node : nodes_) {
            if (node.op != ER_OP_ATTENTION) continue;
            const KvCacheLayer& layer = ctx.layers[size_t(node.layer)].layer;
            if (layer.type == kKvQ8) widened_bytes = std::max(widened_bytes, 2 * kv_values(layer) * 2);  // K, V: halves
        }
    // The general row kernel's scores: every row's against the whole context.
    const uint64_t score_bytes = row_attention ? uint64_t(max_tokens_) * max_heads * ctx.params.n_ctx * 4 : 0;
    // GEMV input: prepared rows of x, as many as one GEMV launch multiplies.
    gemv_slots_ = std::min<int32_t>(kGemvMaxRows, max_tokens_);
    const uint64_t act_f_bytes = uint64_t(n_pad) * 4 * uint64_t(gemv_slots_);
    const uint64_t act_q_bytes = uint64_t(n_pad) * uint64_t(gemv_slots_);
    const uint64_t act_segments_bytes = uint64_t(n_pad) / 16 * sizeof(Words2) * uint64_t(gemv_slots_);
    const uint64_t act_bytes = act_f_bytes + act_q_bytes + act_segments_bytes;
    // Option prepare=gemv: two slots of 8-bit x handed from GEMV to GEMV (fusion.hpp,
    // q8_slot_layout); a ticket per 32 rows, and one more.
    fusions_ = find_fusions(graph);
    const bool handoffs = std::any_of(fusions_.gemv.begin(), fusions_.gemv.end(),
                                      [](const GemvFusion& g) { return g.q8_reader >= 0; });
    const uint64_t q8_slot_bytes =
        backend.prepare_in_gemv && handoffs ? uint64_t(q8_slot_layout(n_pad).bytes) : 0;
    const uint64_t q8_ticket_bytes = q8_slot_bytes ? (uint64_t(n_pad) / 32 + 1) * 4 : 0;
    // The matrix-matrix path (steps of at least gemm_rows rows): a tile of dequantized
    // weight rows, at most gemm_tile_bytes, at least one row of the widest matrix; for F16
    // GEMMs the tile is halves (twice the rows in the same bytes: Qwen3-4B's FFN matrices
    // in one GEMM each, not two), and the step's x rows are made halves too.
    const bool long_steps = backend.gemm_rows > 0 && max_tokens_ >= backend.gemm_rows && max_matmul_values > 0;
    if (long_steps && !device_.description().gemm_unavailable.empty())
        sdk::logf(ER_LOG_INFO, "cuda_orin: steps of %d or more rows keep the multi-row GEMV: %s", backend.gemm_rows,
                  device_.description().gemm_unavailable.c_str());
    const uint64_t gemm_value_bytes = backend.gemm_f16 ? 2 : 4;
    if (long_steps && device_.description().gemm_unavailable.empty()) {
        const uint64_t most = backend.gemm_tile_bytes / gemm_value_bytes;
        gemm_tile_values_ = std::max<uint64_t>(std::min(max_matmul_values, most), max_gemv_width_);
    }
    const uint64_t gemm_x_bytes =
        gemm_tile_values_ && backend.gemm_f16 ? uint64_t(max_tokens_) * uint64_t(max_gemv_width_) * 2 : 0;
    const uint64_t fixed = act_bytes + 2 * q8_slot_bytes + q8_ticket_bytes + split_bytes + ticket_bytes +
                           rope_ticket_bytes + score_bytes + 4 * uint64_t(row_table_ints()) +
                           gemm_tile_values_ * gemm_value_bytes + gemm_x_bytes;
    // Checks values + fixed (+ the widening, where it fits) before allocating.
    const uint64_t widening_asked = widened_bytes;
    assign_buffers(graph, extend_fused_lifetimes(graph, fusions_, checked.last_use), fixed, &widened_bytes);
    if (widening_asked && !widened_bytes)
        sdk::logf(ER_LOG_WARN, "cuda_orin: option widen_kv=1 ignored: its %.1f MiB of scratch do not fit "
                  "in device memory", double(widening_asked) / 1048576.0);
    uint64_t need = 0;
    for (const DeviceBuffer& b : buffers_) need += b.bytes();
    if (n_pad > 0) {
        act_f_ = DeviceBuffer(device_, act_f_bytes);
        act_q_ = DeviceBuffer(device_, act_q_bytes);
        act_segments_ = DeviceBuffer(device_, act_segments_bytes);
    }
    if (q8_slot_bytes) {
        for (DeviceBuffer& slot : q8_slots_) slot = DeviceBuffer(device_, q8_slot_bytes);
        q8_tickets_ = DeviceBuffer(device_, q8_ticket_bytes);  // zero-filled, as the GEMV needs
    }
    if (split_bytes) split_workspace_ = DeviceBuffer(device_, split_bytes);
    if (ticket_bytes) merge_tickets_ = DeviceBuffer(device_, ticket_bytes);  // zero-filled, as the kernels need
    if (rope_ticket_bytes) rope_append_tickets_ = DeviceBuffer(device_, rope_ticket_bytes);  // zero-filled too
    if (widened_bytes) widened_kv_ = DeviceBuffer(device_, widened_bytes);
    if (score_bytes) scores_ = DeviceBuffer(device_, score_bytes);
    if (gemm_tile_values_) gemm_tile_ = DeviceBuffer(device_, gemm_tile_values_ * gemm_value_bytes);
    if (gemm_x_bytes) gemm_x_ = DeviceBuffer(device_, gemm_x_bytes);
    row_table_ = DeviceBuffer(device_, 4 * uint64_t(row_table_ints()));
    const int32_t* table = row_table_.as<int32_t>();
    device_rows_ = {table + row_table_at(kRowSeq), table + row_table_at(kRowPos), table + row_table_at(kRowKvLen)};
    device_tile_rows_ = table + row_table_at(kTileRows);
    device_tiles_ = table + row_table_at(kTiles);
    scratch_bytes_ = need + fixed + widened_bytes;
    row_seq_.assign(size_t(max_tokens_), 0);
    row_pos_.assign(size_t(max_tokens_), 0);
    logit_rows_.assign(size_t(max_tokens_), 0);
    ctx_.scratch_bytes += scratch_bytes_;
    log_memory_taken(device_, "a plan's scratch", counted_bytes());
}

Plan::~Plan() {
    if (stepped_) {
        sdk::logf(ER_LOG_INFO, "cuda_orin: %lld steps replayed from a CUDA Graph, %lld launched plainly; %s",
                  static_cast<long long>(replayed_steps_), static_cast<long long>(launched_steps_),
                  launches_.launches_per_step().c_str());
        launches_.log_tables();
        report_memory();
    }
    ctx_.scratch_bytes -= scratch_bytes_;
}

namespace {
// Device memory taken since before the CUDA context was made: the context's share
// (measured then) and the drop in free memory since.
uint64_t memory_taken(Device& device) {
    const DeviceDescription& d = device.description();
    const uint64_t free_now = device.memory().free;
    return d.context_bytes + (d.free_after_context > free_now ? d.free_after_context - free_now : 0);
}
}  // namespace

void log_memory_taken(Device& device, const char* after, uint64_t counted) {
    const double mib = 1048576.0;
    sdk::logf(ER_LOG_DEBUG, "cuda_orin: after %s: %.1f MiB taken since before the CUDA context, %.1f MiB counted",
              after, double(memory_taken(device)) / mib, double(counted) / mib);
}

// Everything the backend allocates is held while a plan that has run lives (a step
// allocates nothing), so free memory now against free memory before the CUDA context was
// made is its peak: the context and the GEMM (measured when the device was opened), weights,
// KV cache and scratch (predicted), and what nothing predicts (the driver's code and
// launch resources, taken on the first launches). The line reads
//   cuda_orin: device memory taken since before the CUDA context T MiB, predicted P MiB
//   (CUDA context C + GEMM G + weights W + KV cache K + scratch S): R x
// with P = C + G + W + K + S (tests/cuda/check_memory_report.py reads it).
uint64_t Plan::counted_bytes() const {
    const DeviceDescription& d = device_.description();
    return d.context_bytes + d.gemm_bytes + ctx_.model->bytes + ctx_.kv_bytes + ctx_.scratch_bytes;
}

void Plan::report_memory() const {
    const DeviceDescription& d = device_.description();
    const uint64_t taken = memory_taken(device_);
    const uint64_t predicted = counted_bytes();
    const double mib = 1048576.0;
    const std::string unmeasured = d.context_unmeasured.empty() ? "" : "; CUDA context unmeasured: " + d.context_unmeasured;
    sdk::logf(ER_LOG_INFO,
              "cuda_orin: device memory taken since before the CUDA context %.1f MiB, predicted %.1f MiB "
              "(CUDA context %.1f + GEMM %.1f + weights %.1f + KV cache %.1f + scratch %.1f): %.3fx%s",
              double(taken) / mib, double(predicted) / mib, double(d.context_bytes) / mib,
              double(d.gemm_bytes) / mib, double(ctx_.model->bytes) / mib, double(ctx_.kv_bytes) / mib,
              double(ctx_.scratch_bytes) / mib, predicted ? double(taken) / double(predicted) : 0.0, unmeasured.c_str());
}

// Greedy reuse (as cpu_ref): a value takes the smallest free slot that fits, else grows the
// largest free one, else opens a new slot; outputs of a node take slots before its dying
// inputs are released, so no launch writes over its own input. Host inputs and outputs
// keep their own slots.
void Plan::assign_buffers(const er_graph& graph, const std::vector<int32_t>& last_use, uint64_t fixed_scratch,
                          uint64_t* optional_scratch) {
    const int32_t n_values = graph.n_values;
    auto pinned = [&](int32_t v) { return (values_[v].flags & (ER_VALUE_INPUT | ER_VALUE_OUTPUT)) != 0; };
    auto bytes_of = [&](int32_t v) { return uint64_t(values_[v].width) * uint64_t(max_tokens_) * 4; };
    struct Slot {
        uint64_t bytes = 0;
        bool busy = false;
    };
    std::vector<Slot> slots;
    std::vector<int32_t> slot_of(size_t(n_values), -1);
    std::vector<std::vector<int32_t>> dying(size_t(graph.n_nodes));  // values whose last reader is node i
    for (int32_t v = 0; v < n_values; ++v)
        if (last_use[v] >= 0 && !pinned(v)) dying[size_t(last_use[v])].push_back(v);
    auto take = [&](int32_t v) {
        const uint64_t need = bytes_of(v);
        int32_t best = -1;
        for (int32_t s = 0; s < int32_t(slots.size()); ++s) {
            if (slots[s].busy) continue;
            if (best < 0) { best = s; continue; }
            const bool fits = slots[s].bytes >= need, best_fits = slots[best].bytes >= need;
            if ((fits && (!best_fits || slots[s].bytes < slots[best].bytes)) ||
                (!fits && !best_fits && slots[s].bytes > slots[best].bytes))
                best = s;
        }
        if (best < 0 || pinned(v)) {
            slots.push_back({});
            best = int32_t(slots.size() - 1);
        }
        slots[best].bytes = std::max(slots[best].bytes, need);
        slots[best].busy = true;
        slot_of[v] = best;
    };
    for (int32_t v = 0; v < n_values; ++v)
        if (values_[v].flags & ER_VALUE_INPUT) take(v);
    for (int32_t i = 0; i < graph.n_nodes; ++i) {
        const er_node& node = graph.nodes[i];
        for (int32_t k = 0; k < node.n_outputs; ++k) take(node.outputs[k]);
        for (int32_t v : dying[size_t(i)])
            if (slot_of[v] >= 0) slots[slot_of[v]].busy = false;
        for (int32_t k = 0; k < node.n_outputs; ++k) {
            const int32_t v = node.outputs[k];
            if (last_use[v] < 0 && !pinned(v)) slots[slot_of[v]].busy = false;
        }
    }
    uint64_t total = 0;
    for (const Slot& s : slots) total += s.bytes;
    if (*optional_scratch && device_.memory().free < total + fixed_scratch + *optional_scratch) *optional_scratch = 0;
    const uint64_t scratch = total + fixed_scratch + *optional_scratch;
    if (const std::string why =
            memory_shortfall(device_, "the plan's scratch", scratch, {ctx_.model->bytes, ctx_.kv_bytes, scratch});
        !why.empty())
        throw Failure(ER_E_OUT_OF_MEMORY, why);
    for (const Slot& s : slots) buffers_.emplace_back(device_, std::max<uint64_t>(s.bytes, 4));
    host_ids_.resize(size_t(n_values));
    for (int32_t v = 0; v < n_values; ++v) {
        if (slot_of[v] < 0) continue;
        void* p = buffers_[size_t(slot_of[v])].data();
        if (values_[v].type == ER_VALUE_I32) {
            values_[v].i32 = static_cast<int32_t*>(p);
            host_ids_[v].assign(size_t(values_[v].width * max_tokens_), 0);
        } else {
            values_[v].f32 = static_cast<float*>(p);
        }
    }
}

void Plan::set_input(int32_t value, const void* data, int64_t n_rows) {
    if (value < 0 || value >= int32_t(values_.size()) || !(values_[value].flags & ER_VALUE_INPUT))
        throw invalid("value " + std::to_string(value) + " is not an input of this graph");
    if (!data) throw invalid("input " + std::to_string(value) + ": no data");
    if (n_rows < 1 || n_rows > max_tokens_)
        throw invalid("input " + std::to_string(value) + ": " + std::to_string(n_rows) + " rows, this graph takes 1 to " +
                      std::to_string(max_tokens_));
    Value& v = values_[value];
    const uint64_t bytes = uint64_t(n_rows * v.width) * 4;
    if (v.type == ER_VALUE_I32) {
        std::memcpy(host_ids_[value].data(), data, bytes);
        device_.copy_to_device(v.i32, data, bytes);
    } else {
        device_.copy_to_device(v.f32, data, bytes);
    }
    v.rows = int32_t(n_rows);
}

// The step's rows against the context, exactly as cpu_ref reads them (er_step's rules).
void Plan::read_rows(const er_step& step) {
    const int32_t n = step.n_tokens, n_ctx = ctx_.params.n_ctx;
    n_logit_rows_ = 0;
    if (!step.rows) {
        if (step.pos0 < 0 || int64_t{step.pos0} + n > n_ctx)
            throw invalid("positions " + std::to_string(step.pos0) + ".." + std::to_string(int64_t{step.pos0} + n - 1) +
                          " do not fit the context of " + std::to_string(n_ctx));
        if (has_attention_ && step.pos0 > ctx_.filled[0])
            throw invalid("step starts at position " + std::to_string(step.pos0) +
                          " but the cache holds only positions before " + std::to_string(ctx_.filled[0]));
        for (int32_t r = 0; r < n; ++r) {
            row_seq_[r] = 0;
            row_pos_[r] = step.pos0 + r;
            if (step.logits_all || r == n - 1) logit_rows_[n_logit_rows_++] = r;
        }
        positions_read_ = int64_t{step.pos0} + n;
        return;
    }
    std::fill(ctx_.next_pos.begin(), ctx_.next_pos.end(), -1);
    for (int32_t r = 0; r < n; ++r) {
        const er_step_row& row = step.rows[r];
        const std::string at = "row " + std::to_string(r) + ": ";
        if (row.seq < 0 || row.seq >= ctx_.n_seqs)
            throw invalid(at + "sequence " + std::to_string(row.seq) + " is not in the context's " + std::to_string(ctx_.n_seqs));
        if (row.pos < 0 || row.pos >= n_ctx)
            throw invalid(at + "position " + std::to_string(row.pos) + " does not fit the context of " + std::to_string(n_ctx));
        int32_t& next = ctx_.next_pos[row.seq];
        if (next < 0 && has_attention_ && row.pos > ctx_.filled[row.seq])
            throw invalid(at + "sequence " + std::to_string(row.seq) + " starts at position " + std::to_string(row.pos) +
                          " but its cache holds only positions before " + std::to_string(ctx_.filled[row.seq]));
        if (next >= 0 && row.pos != next)
            throw invalid(at + "sequence " + std::to_string(row.seq) + " continues at position " + std::to_string(row.pos) +
                          ", not " + std::to_string(next) + " (a sequence's rows must have consecutive positions)");
        next = row.pos + 1;
        row_seq_[r] = row.seq;
        row_pos_[r] = row.pos;
        if (row.logits) logit_rows_[n_logit_rows_++] = r;
    }
    // A sequence's rows are consecutive, so its next position is the count it reads.
    positions_read_ = 0;
    for (const int32_t next : ctx_.next_pos)
        if (next > 0) positions_read_ += next;
}

void Plan::execute(const er_step& step) {
    if (step.struct_size < sizeof(er_step)) throw invalid("step struct is too small");
    const int32_t n = step.n_tokens;
    if (n < 1 || n > max_tokens_)
        throw invalid("step of " + std::to_string(n) + " tokens, this graph takes 1 to " + std::to_string(max_tokens_));
    read_rows(step);
    for (int32_t v = 0; v < int32_t(values_.size()); ++v)
        if ((values_[v].flags & ER_VALUE_INPUT) && values_[v].rows < n)
            throw invalid("input " + std::to_string(v) + " has " + std::to_string(values_[v].rows) +
                          " rows set, the step needs " + std::to_string(n));
    for (const er_node& node : nodes_) {
        if (node.op != ER_OP_EMBED) continue;
        const DeviceWeight& table = weight(node.weights[0]);
        for (int32_t r = 0; r < n; ++r) {
            const int32_t id = host_ids_[node.inputs[0]][r];
            if (id < 0 || id >= table.rows)
                throw invalid("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                              std::to_string(table.rows) + ")");
        }
    }
    // The per-row table goes to device memory before any launch: kernels read positions,
    // sequences and KV lengths from it, so a replayed capture sees this step's values.
    std::vector<int32_t> table(row_table_ints(), 0);
    for (int32_t r = 0; r < n; ++r) {
        table[row_table_at(kRowSeq) + r] = row_seq_[r];
        table[row_table_at(kRowPos) + r] = row_pos_[r];
        table[row_table_at(kRowKvLen) + r] = row_pos_[r] + 1;
    }
    if (takes_tiled_attention(n))
        fill_attention_tiles(row_seq_.data(), n, ctx_.n_seqs, rows_per_tile_, &table[row_table_at(kTiles)],
                             &table[row_table_at(kTileRows)], attention_tiles(n));
    device_.copy_to_device(row_table_.data(), table.data(), table.size() * 4);

    const Backend& backend = *ctx_.model->backend;
    CapturedShape* captured = captured_step(n);
    const auto start = std::chrono::steady_clock::now();
    int64_t kernels = 0;
    if (captured) {
        captured->step->replay();
        kernels = captured->kernels;
        ++replayed_steps_;
    } else {
        const int64_t before = device_.kernels_launched();
        launch_all(n);
        kernels = device_.kernels_launched() - before;
        ++launched_steps_;
    }
    device_.synchronize();
    const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - start;
    launches_.add_step(n, kernels, backend.profile ? device_.take_launch_times() : std::vector<TimedLaunch>{},
                       wall.count());

    for (Value& v : values_)
        if (!(v.flags & ER_VALUE_INPUT)) v.rows = n;
    for (const er_node& node : nodes_)
        if (node.op == ER_OP_LOGITS) values_[node.outputs[0]].rows = n_logit_rows_;
    if (!stepped_) log_memory_taken(device_, captured ? "a plan's first step (captured)" : "a plan's first step", counted_bytes());
    stepped_ = true;
    if (has_attention_)
        for (int32_t r = 0; r < n; ++r) ctx_.filled[row_seq_[r]] = row_pos_[r] + 1;  // a sequence's last row wins
}

// Everything a step's launches take from the host, other than what is fixed for the plan
// (buffers, weights, the backend's options: fuse, activations, stage_x, gemm_rows), is a
// function of this key, so a step with the key of a captured one replays it exactly:
//   - rows (n): every launch's row count; whether the matmuls take the GEMM path
//     (takes_gemm); which nodes are absorbed into fused launches (absorbed: the GEMV
//     epilogues, SwiGLU's for one row only, the norm prologue of one-row GEMVs,
//     rope_append for one row); gemv_rows' groups and in-place reads; the split
//     attention's row count and KV splits (attention_splits(n)), or the tiled one's
//     tiles and splits (takes_tiled_attention(n), attention_tiles(n), tiled_splits(n));
//   - whether the rows are all of one sequence (rows_of_one_sequence): with widen_kv=1 the
//     tiled attention of such a step reads the INT8 cache widened to halves (widens_kv);
//   - the logit rows (their count and which rows): LOGITS' GEMV rows (gemv_rows'
//     row_index: the rows prepare reads, whether x is read in place, from which row), its
//     fused RMS_NORM prologue for a single logit row (norm_fused), and no launch at all for
//     none.
// Not in it because kernels read them from device memory, copied before every step: the
// row table's positions, sequences and KV lengths (every attention kernel and
// rope_append find a row's sequence there), the tiled attention's tile table, the token
// ids and other inputs (set_input's copies into fixed buffers).
Plan::StepKey Plan::step_key(int32_t n) const {
    StepKey key;
    key.rows = n;
    key.logit_rows.assign(logit_rows_.begin(), logit_rows_.begin() + n_logit_rows_);
    key.one_sequence = rows_of_one_sequence(n);
    return key;
}

// Not while profiling: the timing marks around each launch would be captured too.
Plan::CapturedShape* Plan::captured_step(int32_t n) {
    const Backend& backend = *ctx_.model->backend;
    if (!backend.use_graphs || backend.profile || capture_failed_) return nullptr;
    ++steps_seen_;
    StepKey key = step_key(n);
    for (CapturedShape& shape : captured_)
        if (shape.key == key) {
            shape.last_used = steps_seen_;
            return &shape;
        }
    const int64_t before = device_.kernels_launched();
    std::string why;
    bool recorded = true;
    device_.begin_capture();
    try {
        launch_all(n);
    } catch (const std::exception& e) {
        // A launch refused inside the capture: the step is launched plainly, where a
        // launch that is wrong in itself fails again and reports itself.
        recorded = false;
        why = e.what();
    }
    std::unique_ptr<CapturedStep> step = device_.end_capture(recorded ? &why : nullptr);
    if (!recorded) step.reset();
    if (!step) {
        capture_failed_ = true;
        sdk::logf(ER_LOG_WARN, "cuda_orin: step capture failed, launching plainly: %s", why.c_str());
        return nullptr;
    }
    if (captured_.size() == kMaxCapturedShapes)
        captured_.erase(std::min_element(captured_.begin(), captured_.end(), [](const auto& a, const auto& b) {
            return a.last_used < b.last_used;
        }));
    captured_.push_back({std::move(key), std::move(step), device_.kernels_launched() - before, steps_seen_});
    return &captured_.back();
}

void Plan::get_output(int32_t value, float* dst, int64_t n_rows) {
    if (value < 0 || value >= int32_t(values_.size()) || !(values_[value].flags & ER_VALUE_OUTPUT))
        throw invalid("value " + std::to_string(value) + " is not an output of this graph");
    if (!dst) throw invalid("output " + std::to_string(value) + ": no destination");
    if (!stepped_) throw Failure(ER_E_STATE, "output " + std::to_string(value) + ": no step has run yet");
    const Value& v = values_[value];
    if (n_rows < 1 || n_rows > v.rows)
        throw invalid("output " + std::to_string(value) + ": asked for " + std::to_string(n_rows) +
                      " rows, the last step left " + std::to_string(v.rows));
    device_.copy_to_host(dst, v.f32, uint64_t(n_rows * v.width) * 4);
}

}  // namespace edgerun::cuda_orin
