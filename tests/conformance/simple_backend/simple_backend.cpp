// The simple backend: every op of the graph ABI in plain FP32 loops, one thread, no
// tricks, so that it is obviously right by reading. The conformance suite's own tests
// use it twice: built as it is it must pass the suite cleanly, and built with
// -DPLANTED_FAULT_<NAME> it carries exactly one bug of a kind a real backend might have,
// which the suite must catch:
//
//   ROPE_DIM        the rotation frequency of pair k taken from pair k + 1
//   Q6K_SCALE       Q6_K weights dequantized with the scales of each pair of 16-value
//                   sub-blocks swapped
//   RMS_EPS         RMSNorm with epsilon 1e-5 whatever the graph asks for
//   GQA_MAP         query head h reads KV head h % n_head_kv instead of h / group
//   KV_SHORT        attention reads the KV cache one position short (the newest
//                   position is left out)
//   SOFTMAX_NOMAX   softmax without subtracting the maximum (overflows on large scores)
//   KV_MIX          every row of a step reads and writes the KV cache of the step's first
//                   row's sequence (a per-step cache base, where it must be per row):
//                   sequences stepped together mix their caches
//   DECODE_SPLIT    single-token attention past 512 cached positions split into blocks of
//                   256 (flash-decode) whose partial sums are added without rescaling each
//                   by exp(block max - overall max): only long contexts go wrong
//   ROPE_TILE       in steps of more than 16 tokens, RoPE takes row r's position as
//                   pos0 + r % 16 (the offset of its 16-row tile forgotten): only long
//                   multi-token steps go wrong
//   CAUSAL_NEXT     in multi-token steps every row but the last also sees the next row's key
//   KV_REWIND       single-token attention reads up to the highest position the sequence
//                   ever reached (a kept length), not to the row's own position
//   SEQ_POS         in steps with a row table, RoPE takes row r's position as rows[0].pos + r
//   QK_NORM_WEIGHT  a per-head RMSNorm takes the weight of the previous per-head RMSNorm of
//                   the same layer (qwen3's k-norm gets q-norm's weight)
//   QKV_BIAS_K      MATMUL_MULTI ignores the bias of its second output (qwen2's k bias)
//   GEMM_Q4K        in steps of more than 16 rows (the GEMM path) Q4_K weights lose sub-block 7's min
//   GEMM_TAIL64     in steps of more than 64 rows MATMUL's tail tile (rows past the last whole
//                   64-row tile) reads the activations of the row 64 above
//   ROPE_POS4096    RoPE angles from a table of 4096 positions: position p rotated as p % 4096
//   ATTN_PAST8192   single-token attention over more than 8192 positions reads only the first 8192
//   MHA_DECODE_SPLIT DECODE_SPLIT, but only where n_head == n_head_kv (the non-grouped kernel)
//   LOGITS_ROWS     steps with a row table: LOGITS computes the first k rows, not the k flagged
//   LOGITS_VOCAB64K LOGITS outputs past 65535 never computed (a grid dimension's limit)
//   RMS_WIDE        RMSNorm of a whole row wider than 1024: mean square of its first 1024 values
//   MATMUL_K4096    MATMUL over more than 4096 columns drops the columns past the last whole 4096
//
// Weights are dequantized row by row as they are used (core's blocks.hpp defines every
// format); the KV cache stores floats already rounded to the cache type (F16, or
// llama.cpp's Q8_0 blocks), which gives the same numbers as storing the encoded bytes.
#include <edgerun/dtype.hpp>
#include <edgerun/plugin_sdk.hpp>
#include <edgerun/quant/blocks.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#ifndef SIMPLE_PLUGIN_NAME
#define SIMPLE_PLUGIN_NAME "simple"
#endif

namespace {

using edgerun::sdk::Failure;
using edgerun::sdk::guard;
namespace quant = edgerun::quant;

// ---------------------------------------------------------------- weights --

struct Weight {
    int32_t dtype = 0;
    int64_t cols = 0, rows = 0;
    uint64_t row_bytes = 0;
    const uint8_t* data = nullptr;
};

using edgerun::DType;

// The weight types this backend runs: what a model file stores that blocks.hpp dequantizes
// (not Q8_1 and Q8_K, which only ever hold activations).
constexpr DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                                  DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                                  DType::Q4_K, DType::Q5_K, DType::Q6_K};

bool weight_type_known(int32_t dtype) {
    return std::find(std::begin(kWeightTypes), std::end(kWeightTypes), DType(dtype)) != std::end(kWeightTypes);
}

// 0 for a type this backend does not run, or a row that is not whole blocks.
uint64_t bytes_per_row(int32_t dtype, int64_t cols) {
    return weight_type_known(dtype) ? edgerun::row_bytes(dtype, cols).value_or(0) : 0;
}

#ifdef PLANTED_FAULT_Q6K_SCALE
void dequantize_q6_k_faulty(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b) {
        quant::BlockQ6_K block;
        std::memcpy(&block, src + b * sizeof block, sizeof block);
        const float d = quant::fp16_to_fp32(block.d);
        for (int i = 0; i < 256; ++i)
            dst[b * 256 + i] = d * float(block.scales[(i / 16) ^ 1]) * float(quant::q6k_value(block, i));  // FAULT
    }
}
#endif

#ifdef PLANTED_FAULT_GEMM_Q4K
// FAULT: the min of sub-block 7 (the high nibbles of the last 64-value chunk) ignored
void dequantize_q4_k_no_min7(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b) {
        quant::BlockQ4_K block;
        std::memcpy(&block, src + b * sizeof block, sizeof block);
        quant::dequant_q4_k(block, dst + b * 256);
        uint8_t s7, m7;
        quant::q4k_scale_min(7, block.scales, &s7, &m7);
        const float dmin = quant::fp16_to_fp32(block.dmin);
        for (int i = 224; i < 256; ++i) dst[b * 256 + i] += dmin * m7;
    }
}
#endif

void dequantize_row(const Weight& w, int64_t row, float* out) {
    const uint8_t* src = w.data + uint64_t(row) * w.row_bytes;
#ifdef PLANTED_FAULT_Q6K_SCALE
    if (w.dtype == int32_t(DType::Q6_K)) return dequantize_q6_k_faulty(src, out, w.cols);
#endif
    if (!quant::dequantize_row(w.dtype, src, out, w.cols)) throw Failure(ER_E_UNSUPPORTED, "cannot decode this type");
}

std::vector<float> dequantize_all(const Weight& w) {
    std::vector<float> out(size_t(w.cols * w.rows));
    for (int64_t r = 0; r < w.rows; ++r) dequantize_row(w, r, out.data() + r * w.cols);
    return out;
}

float dot(const float* a, const float* b, int64_t n) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

// --------------------------------------------------------------- objects --

struct Model {
    std::vector<Weight> weights;
};

constexpr int32_t kMaxSeqs = 8;  // sequences one context may hold

struct Context {
    Model* model = nullptr;
    er_context_params params{};
    int32_t n_seqs = 1;
    // [layer][sequence][position][kv head][head_dim], floats rounded to the cache type.
    std::vector<float> k, v;
#ifdef PLANTED_FAULT_KV_REWIND
    std::vector<int32_t> kept;  // per sequence: the highest position ever written, plus one
#endif
};

struct Plan {
    Context* ctx = nullptr;
    int32_t max_tokens = 1;
    std::vector<er_node> nodes;
    std::vector<er_value_desc> values;
    std::vector<std::vector<float>> f32;    // per value: max_tokens rows
    std::vector<std::vector<int32_t>> i32;  // per I32 input
    std::vector<int32_t> rows;              // rows each value holds after the last step
    std::vector<int32_t> seq, pos;          // the step's rows: sequence and position
    std::vector<int32_t> logit_rows;        // the rows LOGITS computes, in step order
#ifdef PLANTED_FAULT_SEQ_POS
    bool row_table = false;  // the step came with a row table
#endif
};

// The value as the cache type stores it: F32 as is, F16 rounded to nearest even, Q8 as
// llama.cpp's reference Q8_0 quantizer makes it (one scale per 32 values).
void round_to_cache(int32_t kv_type, float* x, int64_t n) {
    if (kv_type == ER_KV_F16) {
        for (int64_t i = 0; i < n; ++i) x[i] = quant::fp16_to_fp32(quant::fp32_to_fp16(x[i]));
    } else if (kv_type == ER_KV_Q8) {
        for (int64_t b = 0; b < n; b += 32) {
            float amax = 0.0f;
            for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[b + i]));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const float stored = quant::fp16_to_fp32(quant::fp32_to_fp16(d));
            for (int i = 0; i < 32; ++i) x[b + i] = stored * float(int8_t(std::roundf(x[b + i] * id)));
        }
    }
}

// ------------------------------------------------------------------- ops --

// Computes rows `which` of the input (every row when empty), into consecutive output rows.
void op_matmul(Plan& p, const er_node& node, int32_t n, const std::vector<int32_t>* which = nullptr) {
    const std::vector<float>& x = p.f32[node.inputs[0]];
    const int64_t width = p.values[node.inputs[0]].width;
    const int32_t n_out = which ? int32_t(which->size()) : n;
    for (int32_t k = 0; k < node.n_outputs; ++k) {
        const Weight& w = p.ctx->model->weights[node.weights[k]];
        std::vector<float> bias;
#ifdef PLANTED_FAULT_QKV_BIAS_K
        if (node.biases[k] >= 0 && !(node.op == ER_OP_MATMUL_MULTI && k == 1))  // FAULT: the second bias dropped
#else
        if (node.biases[k] >= 0)
#endif
            bias = dequantize_all(p.ctx->model->weights[node.biases[k]]);
        std::vector<float>& out = p.f32[node.outputs[k]];
        std::vector<float> row(size_t(w.cols));
        int64_t cols = width;
#ifdef PLANTED_FAULT_MATMUL_K4096
        if (width > 4096) cols = width / 4096 * 4096;  // FAULT: the remainder past whole 4096-column chunks dropped
#endif
        for (int64_t j = 0; j < w.rows; ++j) {
#ifdef PLANTED_FAULT_GEMM_Q4K
            if (!which && n > 16 && w.dtype == int32_t(DType::Q4_K))  // FAULT: the GEMM path's Q4_K dequantizer
                dequantize_q4_k_no_min7(w.data + uint64_t(j) * w.row_bytes, row.data(), w.cols);
            else
#endif
            dequantize_row(w, j, row.data());
            for (int32_t i = 0; i < n_out; ++i) {
                int32_t r = which ? (*which)[size_t(i)] : i;
#ifdef PLANTED_FAULT_GEMM_TAIL64
                if (!which && n > 64 && r >= n / 64 * 64) r -= 64;  // FAULT: the tail tile reads the tile above
#endif
#ifdef PLANTED_FAULT_LOGITS_VOCAB64K
                if (which && j >= 65536) continue;  // FAULT: past the grid's 65535 blocks nothing is computed
#endif
                out[i * w.rows + j] = dot(&x[r * width], row.data(), cols) + (bias.empty() ? 0.0f : bias[j]);
            }
        }
    }
}

void op_rms_norm(Plan& p, const er_node& node, int32_t n) {
    std::vector<float> weight = dequantize_all(p.ctx->model->weights[node.weights[0]]);
    const int64_t width = p.values[node.inputs[0]].width, group = node.params.rms_norm.group;
#ifdef PLANTED_FAULT_RMS_EPS
    const double eps = 1e-5;  // FAULT
#else
    const double eps = node.params.rms_norm.eps;
#endif
#ifdef PLANTED_FAULT_QK_NORM_WEIGHT
    if (group != width)  // FAULT: the layer's previous per-head norm's weight (a fused q/k-norm kernel)
        for (ptrdiff_t i = &node - p.nodes.data() - 1; i >= 0; --i) {
            const er_node& prev = p.nodes[size_t(i)];
            if (prev.op == ER_OP_RMS_NORM && prev.layer == node.layer &&
                prev.params.rms_norm.group != p.values[prev.inputs[0]].width) {
                weight = dequantize_all(p.ctx->model->weights[prev.weights[0]]);
                break;
            }
        }
#endif
    for (int64_t i0 = 0; i0 < n * width; i0 += group) {
        const float* x = &p.f32[node.inputs[0]][i0];
        float* y = &p.f32[node.outputs[0]][i0];
        double sum = 0.0;
#ifdef PLANTED_FAULT_RMS_WIDE
        const int64_t summed = group == width && group > 1024 ? 1024 : group;  // FAULT: one block of 1024 threads
#else
        const int64_t summed = group;
#endif
        for (int64_t i = 0; i < summed; ++i) sum += double(x[i]) * x[i];
        const double scale = 1.0 / std::sqrt(sum / double(summed) + eps);
        for (int64_t i = 0; i < group; ++i) y[i] = float(x[i] * scale) * weight[i];
    }
}

void op_rope(Plan& p, const er_node& node, int32_t n) {
    const er_rope_params& rp = node.params.rope;
    std::vector<float> factors;
    if (node.weights[0] >= 0) factors = dequantize_all(p.ctx->model->weights[node.weights[0]]);
    const int64_t width = p.values[node.inputs[0]].width;
    const int32_t half = rp.n_rot / 2;
    for (int32_t r = 0; r < n; ++r) {
        for (int64_t h0 = 0; h0 < width; h0 += rp.head_dim) {
            const float* x = &p.f32[node.inputs[0]][r * width + h0];
            float* y = &p.f32[node.outputs[0]][r * width + h0];
            for (int32_t i = 0; i < rp.head_dim; ++i) y[i] = x[i];
            for (int32_t k = 0; k < half; ++k) {
#ifdef PLANTED_FAULT_ROPE_DIM
                const double exponent = -2.0 * (k + 1) / rp.n_rot;  // FAULT
#else
                const double exponent = -2.0 * k / rp.n_rot;
#endif
                const double freq = std::pow(double(rp.freq_base), exponent) / (factors.empty() ? 1.0 : factors[k]);
#ifdef PLANTED_FAULT_ROPE_TILE
                // FAULT: the row's offset inside its 16-row tile, not inside the step
                const double angle = double(p.pos[r] - r / 16 * 16) * freq * rp.freq_scale;
#elif defined(PLANTED_FAULT_ROPE_POS4096)
                const double angle = double(p.pos[r] % 4096) * freq * rp.freq_scale;  // FAULT: a 4096-entry table
#elif defined(PLANTED_FAULT_SEQ_POS)
                // FAULT: positions counted from the step's first row, whatever each row's sequence
                const double angle = double(p.row_table ? p.pos[0] + r : p.pos[r]) * freq * rp.freq_scale;
#else
                const double angle = double(p.pos[r]) * freq * rp.freq_scale;
#endif
                // NORMAL rotates adjacent pairs, NEOX the two halves of the rotated part.
                const int32_t a = rp.mode == ER_ROPE_NEOX ? k : 2 * k;
                const int32_t b = rp.mode == ER_ROPE_NEOX ? k + half : 2 * k + 1;
                const double c = std::cos(angle), s = std::sin(angle);
                y[a] = float(x[a] * c - x[b] * s);
                y[b] = float(x[a] * s + x[b] * c);
            }
        }
    }
}

void op_attention(Plan& p, const er_node& node, int32_t n) {
    const er_attention_params& ap = node.params.attention;
    Context& c = *p.ctx;
    const int64_t dk = ap.head_dim_k, dv = ap.head_dim_v, n_kv = ap.n_head_kv;
    auto row_of = [&](int64_t seq, int64_t pos, int64_t g) {
        return ((int64_t(node.layer) * c.n_seqs + seq) * c.params.n_ctx + pos) * n_kv + g;
    };
    auto k_at = [&](int64_t seq, int64_t pos, int64_t g) { return &c.k[row_of(seq, pos, g) * dk]; };
    auto v_at = [&](int64_t seq, int64_t pos, int64_t g) { return &c.v[row_of(seq, pos, g) * dv]; };
    auto seq_of = [&](int32_t r) {
#ifdef PLANTED_FAULT_KV_MIX
        (void)r;
        return p.seq[0];  // FAULT: one cache base for the whole step
#else
        return p.seq[r];
#endif
    };
    // Append this step's keys and values, each row to its sequence at its position.
    for (int32_t r = 0; r < n; ++r)
        for (int64_t g = 0; g < n_kv; ++g) {
            float* k = k_at(seq_of(r), p.pos[r], g);
            float* v = v_at(seq_of(r), p.pos[r], g);
            std::memcpy(k, &p.f32[node.inputs[1]][(r * n_kv + g) * dk], dk * sizeof(float));
            std::memcpy(v, &p.f32[node.inputs[2]][(r * n_kv + g) * dv], dv * sizeof(float));
            round_to_cache(c.params.kv_type, k, dk);
            round_to_cache(c.params.kv_type, v, dv);
#ifdef PLANTED_FAULT_KV_REWIND
            if (c.kept.empty()) c.kept.assign(size_t(c.n_seqs), 0);
            c.kept[size_t(seq_of(r))] = std::max(c.kept[size_t(seq_of(r))], p.pos[r] + 1);
#endif
        }
    const int32_t group = ap.n_head / ap.n_head_kv;
    std::vector<double> weights, acc;
    for (int32_t r = 0; r < n; ++r) {
#ifdef PLANTED_FAULT_KV_SHORT
        const int32_t n_pos = p.pos[r];  // FAULT: the newest position is left out
#elif defined(PLANTED_FAULT_CAUSAL_NEXT)
        const int32_t n_pos = std::min(p.pos[r] + 1 + (r + 1 < n ? 1 : 0), c.params.n_ctx);  // FAULT: sees the next row
#elif defined(PLANTED_FAULT_KV_REWIND)
        const int32_t n_pos = n == 1 ? std::max(p.pos[r] + 1, c.kept[size_t(seq_of(r))]) : p.pos[r] + 1;  // FAULT
#elif defined(PLANTED_FAULT_ATTN_PAST8192)
        const int32_t n_pos = n == 1 ? std::min(p.pos[r] + 1, 8192) : p.pos[r] + 1;  // FAULT: 32 splits of 256 at most
#else
        const int32_t n_pos = p.pos[r] + 1;  // causal: positions [0, its own] of its own sequence
#endif
        const int32_t seq = seq_of(r);
        for (int32_t h = 0; h < ap.n_head; ++h) {
#ifdef PLANTED_FAULT_GQA_MAP
            const int32_t g = h % ap.n_head_kv;  // FAULT
#else
            const int32_t g = h / group;
#endif
            (void)group;
            const float* q = &p.f32[node.inputs[0]][(int64_t(r) * ap.n_head + h) * dk];
            weights.assign(size_t(n_pos), 0.0);
            double max = -INFINITY, sum = 0.0;
            for (int32_t j = 0; j < n_pos; ++j) {
                weights[j] = double(ap.scale) * dot(q, k_at(seq, j, g), dk);
                max = std::fmax(max, weights[j]);
            }
#if defined(PLANTED_FAULT_DECODE_SPLIT) || defined(PLANTED_FAULT_MHA_DECODE_SPLIT)
#ifdef PLANTED_FAULT_MHA_DECODE_SPLIT
            const bool split = n == 1 && n_pos > 512 && ap.n_head == ap.n_head_kv;  // the non-grouped kernel only
#else
            const bool split = n == 1 && n_pos > 512;
#endif
            if (split) {  // FAULT: blocks of 256, each with its own max, never rescaled
                for (int32_t b = 0; b < n_pos; b += 256) {
                    const int32_t end = std::min(n_pos, b + 256);
                    double block_max = -INFINITY;
                    for (int32_t j = b; j < end; ++j) block_max = std::fmax(block_max, weights[j]);
                    for (int32_t j = b; j < end; ++j) weights[j] += max - block_max;
                }
            }
#endif
            for (int32_t j = 0; j < n_pos; ++j) {
#ifdef PLANTED_FAULT_SOFTMAX_NOMAX
                weights[j] = float(std::exp(float(weights[j])));  // FAULT: overflows past 88
#else
                weights[j] = std::exp(weights[j] - max);
#endif
                sum += weights[j];
            }
            float* out = &p.f32[node.outputs[0]][(int64_t(r) * ap.n_head + h) * dv];
            acc.assign(size_t(dv), 0.0);  // position by position: reads each cached row in order
            for (int32_t j = 0; j < n_pos; ++j) {
                const float* v = v_at(seq, j, g);
                for (int64_t i = 0; i < dv; ++i) acc[i] += weights[j] * v[i];
            }
            for (int64_t i = 0; i < dv; ++i) out[i] = float(acc[i] / sum);
        }
    }
}

void execute(Plan& p, const er_step& step) {
    const int32_t n = step.n_tokens;
    if (n < 1 || n > p.max_tokens) throw Failure(ER_E_INVALID_ARGUMENT, "step has " + std::to_string(n) + " tokens");
    // Each row's sequence and position: from the row table, or positions pos0.. of sequence 0.
    p.logit_rows.clear();
    for (int32_t r = 0; r < n; ++r) {
        const er_step_row row = step.rows ? step.rows[r] : er_step_row{0, step.pos0 + r, step.logits_all || r == n - 1, 0};
        if (row.seq < 0 || row.seq >= p.ctx->n_seqs) throw Failure(ER_E_INVALID_ARGUMENT, "a row of no sequence of the context");
        if (row.pos < 0 || row.pos >= p.ctx->params.n_ctx) throw Failure(ER_E_INVALID_ARGUMENT, "step past the context");
        p.seq[r] = row.seq;
        p.pos[r] = row.pos;
        if (row.logits) p.logit_rows.push_back(r);
    }
#ifdef PLANTED_FAULT_SEQ_POS
    p.row_table = step.rows != nullptr;
#endif
#ifdef PLANTED_FAULT_LOGITS_ROWS
    if (step.rows)  // FAULT: as many rows as are flagged, but the step's first ones
        for (size_t i = 0; i < p.logit_rows.size(); ++i) p.logit_rows[i] = int32_t(i);
#endif
    for (const er_node& node : p.nodes) {
        const int64_t width = p.values[node.outputs[0]].width;
        switch (node.op) {
            case ER_OP_EMBED: {
                const Weight& table = p.ctx->model->weights[node.weights[0]];
                for (int32_t r = 0; r < n; ++r) {
                    const int32_t id = p.i32[node.inputs[0]][r];
                    if (id < 0 || id >= table.rows) throw Failure(ER_E_INVALID_ARGUMENT, "token id outside the vocabulary");
                    dequantize_row(table, id, &p.f32[node.outputs[0]][r * width]);
                }
                break;
            }
            case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: op_matmul(p, node, n); break;
            case ER_OP_LOGITS: op_matmul(p, node, n, &p.logit_rows); break;
            case ER_OP_RMS_NORM: op_rms_norm(p, node, n); break;
            case ER_OP_ROPE: op_rope(p, node, n); break;
            case ER_OP_ATTENTION: op_attention(p, node, n); break;
            case ER_OP_SWIGLU: case ER_OP_ADD: {
                const float* a = p.f32[node.inputs[0]].data();
                const float* b = p.f32[node.inputs[1]].data();
                float* y = p.f32[node.outputs[0]].data();
                for (int64_t i = 0; i < n * width; ++i)
                    y[i] = node.op == ER_OP_ADD ? a[i] + b[i] : a[i] / (1.0f + std::exp(-a[i])) * b[i];
                break;
            }
            default: throw Failure(ER_E_UNSUPPORTED, "unknown op " + std::to_string(node.op));
        }
        for (int32_t k = 0; k < node.n_outputs; ++k)
            p.rows[node.outputs[k]] = node.op == ER_OP_LOGITS ? int32_t(p.logit_rows.size()) : n;
    }
}

// ------------------------------------------------------------- interface --

int32_t supports(er_backend*, const er_op_query* q) {
    if (q->op < ER_OP_EMBED || q->op >= ER_OP_COUNT_) return 0;
    if (q->weight_dtype >= 0 && !weight_type_known(q->weight_dtype)) return 0;
    if (q->op == ER_OP_ATTENTION && q->kv_type == ER_KV_Q8) return q->head_dim % 32 == 0;
    if (q->op == ER_OP_ATTENTION) return q->kv_type == ER_KV_F32 || q->kv_type == ER_KV_F16;
    return 1;
}

er_status model_load(er_backend*, const er_model_params* params, er_model** out, er_error* err) {
    return guard(err, [&] {
        auto model = std::make_unique<Model>();
        for (int64_t i = 0; i < params->n_weights; ++i) {
            const er_tensor_desc& t = params->weights[i];
            Weight w;
            w.dtype = t.dtype;
            w.cols = t.ne[0];
            w.rows = t.ne[1] * t.ne[2] * t.ne[3];
            if (t.n_dims == 1) w.rows = 1;
            w.row_bytes = weight_type_known(t.dtype) ? bytes_per_row(t.dtype, t.ne[0]) : 0;
            w.data = static_cast<const uint8_t*>(t.data);
            model->weights.push_back(w);
        }
        *out = reinterpret_cast<er_model*>(model.release());
    });
}

er_status context_create(er_model* model, const er_context_params* params, er_context** out, er_error* err) {
    return guard(err, [&] {
        if (params->n_seqs > kMaxSeqs) throw Failure(ER_E_UNSUPPORTED, "more sequences than one context holds");
        auto ctx = std::make_unique<Context>();
        ctx->model = reinterpret_cast<Model*>(model);
        ctx->params = *params;
        ctx->n_seqs = params->n_seqs > 1 ? params->n_seqs : 1;
        const int64_t rows = int64_t(params->n_layer) * ctx->n_seqs * params->n_ctx * params->n_head_kv;
        ctx->k.assign(size_t(rows * params->head_dim_k), 0.0f);
        ctx->v.assign(size_t(rows * params->head_dim_v), 0.0f);
        *out = reinterpret_cast<er_context*>(ctx.release());
    });
}

er_status plan_create(er_context* ctx, const er_graph* graph, er_plan** out, er_error* err) {
    return guard(err, [&] {
        auto plan = std::make_unique<Plan>();
        plan->ctx = reinterpret_cast<Context*>(ctx);
        plan->max_tokens = graph->max_tokens;
        plan->nodes.assign(graph->nodes, graph->nodes + graph->n_nodes);
        plan->values.assign(graph->values, graph->values + graph->n_values);
        plan->f32.resize(plan->values.size());
        plan->i32.resize(plan->values.size());
        plan->rows.assign(plan->values.size(), 0);
        plan->seq.assign(size_t(graph->max_tokens), 0);
        plan->pos.assign(size_t(graph->max_tokens), 0);
        for (size_t v = 0; v < plan->values.size(); ++v) {
            const size_t size = size_t(plan->values[v].width * graph->max_tokens);
            if (plan->values[v].type == ER_VALUE_I32) plan->i32[v].assign(size, 0);
            else plan->f32[v].assign(size, 0.0f);
        }
        *out = reinterpret_cast<er_plan*>(plan.release());
    });
}

er_status plan_set_input(er_plan* handle, int32_t value, const void* data, int64_t n_rows, er_error* err) {
    return guard(err, [&] {
        Plan& p = *reinterpret_cast<Plan*>(handle);
        if (value < 0 || value >= int32_t(p.values.size()) || n_rows < 1 || n_rows > p.max_tokens)
            throw Failure(ER_E_INVALID_ARGUMENT, "bad input value or row count");
        const size_t bytes = size_t(n_rows * p.values[value].width) * 4;
        std::memcpy(p.values[value].type == ER_VALUE_I32 ? static_cast<void*>(p.i32[value].data())
                                                         : static_cast<void*>(p.f32[value].data()),
                    data, bytes);
    });
}

er_status plan_get_output(er_plan* handle, int32_t value, float* dst, int64_t n_rows, er_error* err) {
    return guard(err, [&] {
        Plan& p = *reinterpret_cast<Plan*>(handle);
        if (value < 0 || value >= int32_t(p.values.size()) || n_rows < 1 || n_rows > p.rows[value])
            throw Failure(ER_E_INVALID_ARGUMENT, "bad output value or row count");
        std::memcpy(dst, p.f32[value].data(), size_t(n_rows * p.values[value].width) * sizeof(float));
    });
}

const er_backend_iface kIface = {
    sizeof(er_backend_iface),
    [] { return int32_t{1}; },
    [](int32_t device, er_device_info* out, er_error* err) {
        if (device != 0) return edgerun::sdk::set_error(err, ER_E_INVALID_ARGUMENT, "one device");
        std::snprintf(out->name, sizeof out->name, "simple (host CPU, one thread)");
        std::snprintf(out->kind, sizeof out->kind, "cpu");
        out->score = 0;
        out->max_seqs = kMaxSeqs;
        return er_status{ER_OK};
    },
    [](const er_backend_params*, er_backend** out, er_error*) {
        *out = reinterpret_cast<er_backend*>(new int(0));
        return er_status{ER_OK};
    },
    [](er_backend* b) { delete reinterpret_cast<int*>(b); },
    supports,
    model_load,
    [](er_model* m) { delete reinterpret_cast<Model*>(m); },
    context_create,
    [](er_context* c) { delete reinterpret_cast<Context*>(c); },
    plan_create,
    [](er_plan* p) { delete reinterpret_cast<Plan*>(p); },
    plan_set_input,
    [](er_plan* p, const er_step* step, er_error* err) { return guard(err, [&] { execute(*reinterpret_cast<Plan*>(p), *step); }); },
    plan_get_output,
    nullptr,
    nullptr,
};

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_BACKEND, SIMPLE_PLUGIN_NAME, "1.0.0",
                           "naive FP32 loops (conformance suite test fixture)", &kIface};

}  // namespace

EDGERUN_DEFINE_PLUGIN(kPlugin)
