// Plan's launches: each node of a step turned into kernel launches on the device, with
// the fusions the plan chose (fusion.hpp), GEMVs for few rows, the GEMM path for many.
#include "plan.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <algorithm>

namespace edgerun::cuda_orin {

bool Plan::takes_gemm(int32_t n) const {
    return gemm_tile_values_ && n >= ctx_.model->backend->gemm_rows;
}

// The fused forms: GEMV epilogues on the GEMV path, SwiGLU's for one row only (the
// multi-row kernel has none); the norm prologue for one-row GEMVs (the stage of the
// one-row kernel, or prepare); rope_append for the one-row split attention, launched or
// (option rope_append=gemv) done by the Q/K/V GEMV.
bool Plan::epilogue_fused(size_t matmul, int32_t n) const {
    const GemvFusion::Kind kind = fusions_.gemv[matmul].kind;
    return ctx_.model->backend->fuse && kind != GemvFusion::kNone && !takes_gemm(n) &&
           (kind != GemvFusion::kSwiGLU || n == 1);
}

const float* Plan::norm_fused(size_t matmul, int32_t n, float* eps) const {
    const int32_t norm = fusions_.gemv[matmul].norm;
    const bool logits = nodes_[matmul].op == ER_OP_LOGITS;
    if (norm < 0 || !ctx_.model->backend->fuse || (logits ? n_logit_rows_ : n) != 1 || (!logits && takes_gemm(n)))
        return nullptr;
    *eps = nodes_[size_t(norm)].params.rms_norm.eps;
    return weight(nodes_[size_t(norm)].weights[0]).floats.as<float>();
}

bool Plan::takes_tiled_attention(int32_t n) const {
    const int32_t from = ctx_.model->backend->tiled_attention_rows;
    return rows_per_tile_ > 0 && from > 0 && n >= std::max(from, 2);
}

int32_t Plan::tiled_splits(int32_t n) const {
    return choose_tiled_kv_splits(attention_tiles(n), ctx_.params.n_head_kv, ctx_.params.n_ctx,
                                  device_.description().sm_count);
}

int32_t Plan::tile_stages(int32_t kv_type) const {
    const int32_t asked = ctx_.model->backend->tiled_attention_stages;
    return asked ? asked : kv_type == kKvQ8 ? 1 : 2;
}

bool Plan::rows_of_one_sequence(int32_t n) const {
    return std::all_of(row_seq_.begin(), row_seq_.begin() + n, [&](int32_t s) { return s == row_seq_[0]; });
}

bool Plan::widens_kv(const KvCacheLayer& cache, int32_t n) const {
    return widened_kv_.data() && cache.type == kKvQ8 && takes_tiled_attention(n) && rows_of_one_sequence(n);
}

bool Plan::rope_append_fused(size_t attention, int32_t n) const {
    return ctx_.model->backend->fuse && fusions_.attention[attention].q_rope >= 0 && n == 1 &&
           takes_split_attention(nodes_[attention].params.attention, ctx_.params.kv_type);
}

bool Plan::rope_append_in_gemv(size_t attention, int32_t n) const {
    return ctx_.model->backend->rope_append_in_gemv && fusions_.attention[attention].qkv >= 0 &&
           rope_append_fused(attention, n) && !takes_gemm(n);
}

RopeAppendParams Plan::rope_append_params(size_t attention) const {
    const AttentionFusion& f = fusions_.attention[attention];
    const er_node& node = nodes_[attention];
    const KvLayerAllSeqs& cache = ctx_.layers[size_t(node.layer)];
    RopeAppendParams p;
    p.q = values_[f.q].f32;  // rotated in place, then read by the attention
    p.n_head = node.params.attention.n_head;
    p.k = values_[f.k].f32;
    p.v = values_[node.inputs[2]].f32;
    auto norm_weight = [&](int32_t norm) {
        return norm >= 0 ? weight(nodes_[size_t(norm)].weights[0]).floats.as<float>() : nullptr;
    };
    p.q_norm = norm_weight(f.q_norm);
    p.k_norm = norm_weight(f.k_norm);
    const int32_t any_norm = f.q_norm >= 0 ? f.q_norm : f.k_norm;
    if (any_norm >= 0) p.norm_eps = nodes_[size_t(any_norm)].params.rms_norm.eps;
    p.rope = rope_config(nodes_[size_t(f.q_rope)]);
    p.pos = device_rows_.pos;
    p.cache = cache.layer;
    p.seq = device_rows_.seq;
    p.seq_stride_values = cache.seq_stride_values;
    p.seq_stride_scales = cache.seq_stride_scales;
    return p;
}

namespace {

bool all_of_quantized(const std::vector<const DeviceWeight*>& weights) {
    return std::all_of(weights.begin(), weights.end(),
                       [](const DeviceWeight* w) { return plain_value_bytes(w->packed.type) == 0; });
}

}  // namespace

bool Plan::reads_q8_x(const std::vector<const DeviceWeight*>& weights) const {
    int64_t out_rows = 0;
    for (const DeviceWeight* w : weights) out_rows += w->rows;
    return ctx_.model->backend->q8_activations && out_rows >= kQ8ActivationsMinRows;
}

bool Plan::reads_only_q8_x(size_t gemv) const {
    const er_node& node = nodes_[gemv];
    std::vector<const DeviceWeight*> weights;
    for (int32_t k = 0; k < node.n_outputs; ++k) weights.push_back(&weight(node.weights[k]));
    return reads_q8_x(weights) && all_of_quantized(weights);  // plain weights read float x
}

// Both GEMVs one-row launches (the reader's norm, if it has one, done in its launch), the
// maker's epilogue fused where it writes through one, and the reader's x 8-bit.
bool Plan::q8_handed(size_t maker, int32_t n) const {
    const GemvFusion& m = fusions_.gemv[maker];
    if (!ctx_.model->backend->prepare_in_gemv || m.q8_reader < 0 || !q8_tickets_.data() || n != 1 || takes_gemm(n) ||
        (m.kind != GemvFusion::kNone && !epilogue_fused(maker, n)))
        return false;
    const size_t reader = size_t(m.q8_reader);
    const er_node& node = nodes_[reader];
    if (node.op == ER_OP_LOGITS && n_logit_rows_ != 1) return false;
    float eps = 0.0f;
    if (fusions_.gemv[reader].norm >= 0 && !norm_fused(reader, n, &eps)) return false;
    return reads_only_q8_x(reader);
}

Q8Out Plan::q8_slot(size_t maker, int32_t n) const {
    const GemvFusion& m = fusions_.gemv[maker];
    const Q8SlotLayout at = q8_slot_layout(padded_length(int32_t(max_gemv_width_)));
    uint8_t* bytes = q8_slots_[m.q8_slot].as<uint8_t>();
    Q8Out slot;
    slot.q = bytes;
    slot.segments = reinterpret_cast<Words2*>(bytes + at.segments);
    slot.tickets = q8_tickets_.as<int32_t>();
    if ((slot.norm_weight = norm_fused(size_t(m.q8_reader), n, &slot.norm_eps))) {
        slot.sums = reinterpret_cast<float*>(bytes + at.sums);
        slot.norm_scale = reinterpret_cast<float*>(bytes + at.norm_scale);
    }
    return slot;
}

// The split kernel's one-row steps (not the tiled kernel's), the output float, and the
// reader's x 8-bit.
bool Plan::merge_makes_q8(size_t attention, int32_t n) const {
    const int32_t reader = fusions_.attention[attention].q8_reader;
    if (!ctx_.model->backend->merge_q8 || reader < 0 || n != 1 || takes_gemm(n) || takes_tiled_attention(n) ||
        !takes_split_attention(nodes_[attention].params.attention, ctx_.params.kv_type))
        return false;
    return reads_only_q8_x(size_t(reader));
}

Plan::GemvQ8Handoff Plan::q8_handoff(size_t gemv, int32_t n) const {
    GemvQ8Handoff h;
    if ((h.makes = q8_handed(gemv, n))) h.out = q8_slot(gemv, n);
    const int32_t maker = fusions_.gemv[gemv].q8_maker, merge = fusions_.gemv[gemv].q8_merge;
    if ((h.reads = maker >= 0 && q8_handed(size_t(maker), n))) h.in = q8_slot(size_t(maker), n);
    if (merge >= 0 && merge_makes_q8(size_t(merge), n)) {  // launch_attention's act_q_ slot
        h.reads = true;
        h.in.q = act_q_.as<uint8_t>();
        h.in.segments = act_segments_.as<Words2>();
    }
    return h;
}

bool Plan::absorbed(size_t index, int32_t n) const {
    const int32_t by = fusions_.absorbed_by[index];
    if (by < 0) return false;
    if (nodes_[size_t(by)].op == ER_OP_ATTENTION) return rope_append_fused(size_t(by), n);
    float eps = 0.0f;
    if (fusions_.gemv[size_t(by)].norm == int32_t(index)) return norm_fused(size_t(by), n, &eps) != nullptr;
    return epilogue_fused(size_t(by), n);
}

void Plan::launch_all(int32_t n) {
    for (size_t i = 0; i < nodes_.size(); ++i)
        if (!absorbed(i, n)) launch_node(i, n);
}

RopeConfig Plan::rope_config(const er_node& rope) const {
    const er_rope_params& r = rope.params.rope;
    return {r.mode, r.head_dim, r.n_rot, rope_theta_scale(r.freq_base, r.n_rot), r.freq_scale,
            rope.weights[0] >= 0 ? weight(rope.weights[0]).floats.as<float>() : nullptr};
}

void Plan::launch_node(size_t index, int32_t n) {
    const er_node& node = nodes_[index];
    const Value& out = values_[node.outputs[0]];
    const Value& in = values_[node.inputs[0]];
    switch (node.op) {
        case ER_OP_EMBED: {  // every row in one launch, from the GEMV's copy when there is one
            const DeviceWeight& w = weight(node.weights[0]);
            EmbedParams p;
            p.type = w.dtype;
            p.n_rows = int32_t(w.rows);
            p.n_cols = int32_t(w.cols);
            if (w.packed_bytes.data()) {
                p.packed = w.packed;
            } else {
                p.table = w.table.data();
                p.row_bytes = int64_t(w.row_bytes);
            }
            p.token = in.i32;
            p.n_tokens = n;
            p.out = out.f32;
            device_.embed(p);
            break;
        }
        case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: launch_matmul(index, n); break;
        case ER_OP_LOGITS: launch_logits(index, n); break;
        case ER_OP_RMS_NORM: {
            RmsNormParams p;
            p.x = in.f32;
            p.out = out.f32;
            p.weight = weight(node.weights[0]).floats.as<float>();
            p.n_rows = n;
            p.width = int32_t(in.width);
            p.group = node.params.rms_norm.group;
            p.eps = node.params.rms_norm.eps;
            device_.rms_norm(p);
            break;
        }
        case ER_OP_ROPE: {
            RopeRowsParams p;
            p.x = in.f32;
            p.out = out.f32;
            p.n_rows = n;
            p.width = int32_t(in.width);
            p.rope = rope_config(node);
            p.rows = device_rows_;
            device_.rope_rows(p);
            break;
        }
        case ER_OP_ATTENTION: launch_attention(index, n); break;
        case ER_OP_SWIGLU: case ER_OP_ADD: {
            ElementwiseParams p;
            p.op = node.op == ER_OP_ADD ? kElementwiseAdd : kElementwiseSwiGLU;
            p.a = in.f32;
            p.b = values_[node.inputs[1]].f32;
            p.out = out.f32;
            p.n = int64_t(n) * in.width;
            device_.elementwise(p);
            break;
        }
        default: break;
    }
}

// Rows in groups of up to kGemvMaxRows: prepare writes each row's float and q8 forms into
// its slot, then one GEMV launch computes every output of the node for the whole group,
// reading each weight once (one row: the one-row kernel). With 8-bit activations (the
// default) x is prepared so, once for all the launch's blocks, unless stage_x=1 has each
// block quantize it as it stages it (GemvLaunch::quantize_x, where it fits the stage and
// every weight is quantized). Float rows of x that need no padding and lie one after
// another are read where they are, without a prepare launch (for widths that are
// multiples of 32). A fused RMS_NORM (one row) is done by the GEMV's staging of x when x
// is read in place and fits the stage, else by prepare. Launches of fewer than
// kQ8ActivationsMinRows outputs read float x (see there).
void Plan::gemv_rows(const GemvInput& in, const std::vector<const DeviceWeight*>& weights,
                     const std::vector<const float*>& biases, const std::vector<float*>& outs, int32_t n_rows,
                     const int32_t* row_index, const float* residual, int32_t epilogue,
                     const RopeAppendParams* rope_append, const GemvQ8Handoff& handoff) {
    const int64_t width = in.width;
    const int32_t n_pad = padded_length(int32_t(width));
    const bool all_quantized = all_of_quantized(weights);
    const bool q8 = reads_q8_x(weights);
    const bool stage_x = ctx_.model->backend->stages_x();
    for (int32_t first = 0; first < n_rows; first += gemv_slots_) {
        const int32_t group = std::min(gemv_slots_, n_rows - first);
        const int64_t first_row = row_index ? row_index[first] : first;
        bool consecutive = true;
        for (int32_t j = 1; j < group && row_index; ++j) consecutive = consecutive && row_index[first + j] == first_row + j;
        const bool readable = n_pad == width && consecutive && (!in.norm || group == 1);
        const Q8Out* handed = handoff.reads ? &handoff.in : nullptr;  // one row: one group
        const bool quantize_x =
            !handed && q8 && stage_x && all_quantized && readable && gemv_q8_stage_fits(group, n_pad);
        const bool float_in_place = !q8 && readable && (!in.norm || (stage_x && gemv_stage_fits(1, n_pad)));
        const bool in_place = quantize_x || float_in_place;
        for (int32_t j = 0; j < group && !in_place && !handed; ++j) {
            const int64_t r = row_index ? row_index[first + j] : first + j;
            PrepareParams prep;
            prep.x = in.x + r * width;
            prep.n = int32_t(width);
            prep.norm_weight = in.norm;
            prep.norm_eps = in.norm_eps;
            prep.out_f = act_f_.as<float>() + int64_t(j) * n_pad;
            prep.out_q = act_q_.as<int8_t>() + int64_t(j) * n_pad;
            prep.out_segments = act_segments_.as<Words2>() + int64_t(j) * (n_pad / 16);
            device_.prepare(prep);
        }
        GemvLaunch g;
        if (q8 && !quantize_x) g.x.q8 = {act_q_.as<uint8_t>(), act_segments_.as<Words2>()};
        else g.x.q8 = {nullptr, nullptr};
        g.quantize_x = quantize_x;
        g.rows_per_warp = ctx_.model->backend->gemv_rows_per_warp;
        g.tasks_in_flight = ctx_.model->backend->gemv_tasks_in_flight;
        g.load_ahead = ctx_.model->backend->gemv_load_ahead;
        g.typed_kernel = ctx_.model->backend->gemv_typed_kernels;
        g.typed_blocks_per_sm = ctx_.model->backend->gemv_typed_blocks_per_sm;
        g.swiglu_pairs = ctx_.model->backend->gemv_swiglu_pairs;
        g.row_pairs = ctx_.model->backend->gemv_row_pairs;
        g.ring_depth = ctx_.model->backend->gemv_ring_depth;
        g.asked_warps_per_row = ctx_.model->backend->gemv_warps_per_row;
        g.x.f = in_place ? in.x + first_row * width : act_f_.as<float>();
        g.x.n = int32_t(width);
        g.x.n_pad = n_pad;
        if (in_place) {
            g.x.norm = in.norm;
            g.x.norm_eps = in.norm_eps;
        }
        g.n_x_rows = group;
        g.stage_x = stage_x;
        g.prefetch = ctx_.model->backend->prefetch;
        g.epilogue = epilogue;
        g.n_outputs = int32_t(weights.size());
        for (size_t j = 0; j < weights.size(); ++j) {
            g.out[j].w = weights[j]->packed;
            g.out[j].bias = biases[j];
            g.out[j].y = outs[j] + int64_t(first) * weights[j]->rows;
            g.out[j].y_row_stride = weights[j]->rows;
        }
        if (residual) g.out[0].residual = residual + int64_t(first) * weights[0]->rows;
        if (rope_append) {  // one row: one group
            g.rope_append = *rope_append;
            g.rope_append_tickets = rope_append_tickets_.as<int32_t>();
        }
        if (handed) {  // the bytes of the norm's input times its weight (Activation::norm_scale)
            g.x.q8 = {handed->q, handed->segments};
            g.x.f = in.x;
            g.x.norm = nullptr;
            g.x.norm_scale = handed->norm_scale;
        }
        if (handoff.makes) g.q8_out = handoff.out;
        device_.gemv(g);
    }
}

// Each weight's rows dequantized a tile at a time, then C = x W^T for the whole step by
// the device's GEMM (F32, or F16 inputs with F32 accumulation: option gemm=f16), then the
// bias added to every row.
void Plan::matmul_by_gemm(const void* x, int64_t width, const DeviceWeight& w, const float* bias, float* out,
                          int32_t n) {
    const bool f16 = ctx_.model->backend->gemm_f16;
    int64_t rows_per_tile = std::max<int64_t>(1, int64_t(gemm_tile_values_) / w.cols);
    // Later tiles start at a multiple of rows_per_tile: kept a multiple of 128, each
    // tile's output columns stay 16-byte aligned and its n a whole number of tensor-core
    // tiles. Qwen3-4B's FFN matrices had tiles of 6553 rows, and its GEMMs ran at 83
    // TFLOPS on the H200 where Llama-3.2-1B's (one tile a matrix) ran at 205.
    if (rows_per_tile < w.rows && rows_per_tile >= kGemmTileRowMultiple)
        rows_per_tile -= rows_per_tile % kGemmTileRowMultiple;
    for (int64_t row0 = 0; row0 < w.rows; row0 += rows_per_tile) {
        const int32_t tile_rows = int32_t(std::min<int64_t>(rows_per_tile, w.rows - row0));
        DequantizeRowsParams d;
        d.w = w.packed;
        d.row0 = int32_t(row0);
        d.n_rows = tile_rows;
        d.out = gemm_tile_.data();
        d.out_is_f16 = f16;
        device_.dequantize_rows(d);
        GemmParams g;
        g.a = x;
        g.lda = width;
        g.b = gemm_tile_.data();
        g.inputs_f16 = f16;
        g.ldb = w.cols;
        g.c = out + row0;
        g.ldc = w.rows;
        g.m = n;
        g.n = tile_rows;
        g.k = int32_t(w.cols);
        device_.gemm(g);
    }
    if (bias) {
        ElementwiseParams add;
        add.op = kElementwiseAdd;
        add.a = out;
        add.b = bias;
        add.out = out;
        add.n = int64_t(n) * w.rows;
        add.b_period = w.rows;
        device_.elementwise(add);
    }
}

// The node's input, or its fused RMS_NORM's input with the norm's weight.
Plan::GemvInput Plan::gemv_input(size_t matmul, int32_t n) const {
    const Value& x = values_[nodes_[matmul].inputs[0]];
    GemvInput in{x.f32, x.width};
    if ((in.norm = norm_fused(matmul, n, &in.norm_eps)))
        in.x = values_[nodes_[size_t(fusions_.gemv[matmul].norm)].inputs[0]].f32;
    return in;
}

void Plan::launch_matmul(size_t index, int32_t n) {
    const er_node& node = nodes_[index];
    const Value& x = values_[node.inputs[0]];
    if (takes_gemm(n)) {
        const void* rows = x.f32;
        if (ctx_.model->backend->gemm_f16) {  // x as halves once for all the node's matrices
            HalfRowsParams h;
            h.x = x.f32;
            h.ld = x.width;
            h.rows = n;
            h.cols = int32_t(x.width);
            h.out = gemm_x_.as<uint16_t>();
            device_.half_rows(h);
            rows = h.out;
        }
        for (int32_t k = 0; k < node.n_outputs; ++k)
            matmul_by_gemm(rows, x.width, weight(node.weights[k]),
                           node.biases[k] >= 0 ? weight(node.biases[k]).floats.as<float>() : nullptr,
                           values_[node.outputs[k]].f32, n);
        return;
    }
    std::vector<const DeviceWeight*> weights;
    std::vector<const float*> biases;
    std::vector<float*> outs;
    for (int32_t k = 0; k < node.n_outputs; ++k) {
        weights.push_back(&weight(node.weights[k]));
        biases.push_back(node.biases[k] >= 0 ? weight(node.biases[k]).floats.as<float>() : nullptr);
        outs.push_back(values_[node.outputs[k]].f32);
    }
    const GemvInput in = gemv_input(index, n);
    const GemvQ8Handoff handoff = q8_handoff(index, n);
    if (const int32_t attention = fusions_.gemv[index].rope_append;
        attention >= 0 && rope_append_in_gemv(size_t(attention), n)) {
        const RopeAppendParams rope_append = rope_append_params(size_t(attention));
        gemv_rows(in, weights, biases, outs, n, nullptr, nullptr, kEpilogueStore, &rope_append, handoff);
        return;
    }
    if (!epilogue_fused(index, n)) {
        gemv_rows(in, weights, biases, outs, n, nullptr, nullptr, kEpilogueStore, nullptr, handoff);
        return;
    }
    // The consumer's output instead of the products: with its residual added, or gate and
    // up through SwiGLU (the kernel writes output 0 only).
    const GemvFusion& fusion = fusions_.gemv[index];
    float* fused_out = values_[nodes_[size_t(fusion.consumer)].outputs[0]].f32;
    if (fusion.kind == GemvFusion::kResidual)
        gemv_rows(in, weights, biases, {fused_out}, n, nullptr, values_[fusion.residual].f32, kEpilogueStore, nullptr,
                  handoff);
    else
        gemv_rows(in, weights, biases, {fused_out, fused_out}, n, nullptr, nullptr, kEpilogueSwiGLU, nullptr, handoff);
}

void Plan::launch_logits(size_t index, int32_t n) {
    if (n_logit_rows_ == 0) return;
    const er_node& node = nodes_[index];
    gemv_rows(gemv_input(index, n), {&weight(node.weights[0])}, {nullptr}, {values_[node.outputs[0]].f32},
              n_logit_rows_, logit_rows_.data(), nullptr, kEpilogueStore, nullptr, q8_handoff(index, n));
}

// A step's attention: first its keys and values into the cache, by rope_append (one-row
// steps, with the norms and RoPEs fused; fusion.hpp; with rope_append=gemv the Q/K/V GEMV
// did it) or kv_append (the graph's own nodes ran before); then the split flash-decode
// kernel over every row (each row's sequence and causal length read from the device row
// table, so a captured step serves any sequence; on tensor cores with option
// mma_attention=1; its splits merged by a second kernel, or with
// attention_merge=last_block by its own last blocks), in steps of tiled_attention rows or
// more the tiled kernel over tiles of rows of one sequence (the tile table is device data
// too; with widen_kv=1 an INT8 cache widened to halves first where the rows are of one
// sequence), or the general row kernel for the head dims and cache types the split kernel
// lacks.
void Plan::launch_attention(size_t index, int32_t n) {
    const er_node& node = nodes_[index];
    const er_attention_params& a = node.params.attention;
    const KvLayerAllSeqs& cache = ctx_.layers[size_t(node.layer)];
    const float* q = values_[node.inputs[0]].f32;
    float* out = values_[node.outputs[0]].f32;
    if (rope_append_fused(index, n)) {
        q = values_[fusions_.attention[index].q].f32;  // rotated in place
        if (!rope_append_in_gemv(index, n)) device_.rope_append(rope_append_params(index));
    } else {
        KvAppendParams append;
        append.k = values_[node.inputs[1]].f32;
        append.v = values_[node.inputs[2]].f32;
        append.n_rows = n;
        append.cache = cache;
        append.rows = device_rows_;
        device_.kv_append(append);
    }
    if (takes_split_attention(a, ctx_.params.kv_type)) {
        AttentionParams p;
        p.q = q;
        p.cache = cache.layer;
        p.kv_len = device_rows_.kv_len;
        p.n_rows = n;
        p.row_seq = device_rows_.seq;
        p.seq_stride_values = cache.seq_stride_values;
        p.seq_stride_scales = cache.seq_stride_scales;
        p.n_head = a.n_head;
        p.scale = a.scale;
        p.n_splits = attention_splits(n);
        p.mma = ctx_.model->backend->mma_attention;
        if (takes_tiled_attention(n)) {
            p.tiles = device_tiles_;
            p.tile_rows = device_tile_rows_;
            p.n_tiles = attention_tiles(n);
            p.n_splits = tiled_splits(n);
            if (widens_kv(cache.layer, n)) {
                uint16_t* halves = widened_kv_.as<uint16_t>();
                const WidenKvParams w = widening_for(p, halves, halves + kv_values(cache.layer));
                device_.widen_kv(w);
                p = reading_widened(p, w);
            }
            p.tile_stages = tile_stages(p.cache.type);
        } else {
            p.merge_tickets = merge_tickets_.as<int32_t>();  // null without attention_merge=last_block
            p.prefetch_next_tile = p.mma && ctx_.model->backend->attention_prefetch;
            p.pipeline_tiles = p.mma && ctx_.model->backend->attention_pipeline;
            if (merge_makes_q8(index, n)) {  // read by the next GEMV (q8_handoff)
                p.out_q = act_q_.as<uint8_t>();
                p.out_segments = act_segments_.as<Words2>();
            }
        }
        p.workspace = split_workspace_.as<float>();
        p.out = out;
        p.positions_read = positions_read_;
        device_.attention(p);
        return;
    }
    AttentionRowsParams p;
    p.q = q;
    p.out = out;
    p.n_rows = n;
    p.n_head = a.n_head;
    p.scale = a.scale;
    p.cache = cache;
    p.rows = device_rows_;
    p.scores = scores_.as<float>();
    device_.attention_rows(p);
}

}  // namespace edgerun::cuda_orin
