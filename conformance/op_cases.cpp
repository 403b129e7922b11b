// The op tests' cases: shapes chosen to hit each backend path (one token and many, one
// block and many, odd row counts, tiny widths), values chosen to expose the classic bugs
// (small activations for RMSNorm's epsilon, large scores for softmax overflow, far
// positions for RoPE angles, grouped heads for the KV head mapping).
#include "op_suite.hpp"

#include <edgerun/dtype.hpp>
#include <edgerun/kv_type.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace edgerun::conformance {

namespace {

er_context_params context_for(int32_t n_ctx, int32_t n_batch, int32_t kv_type = ER_KV_F32, int32_t n_head_kv = 1,
                              int32_t head_dim = 32) {
    auto p = sized<er_context_params>();
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.kv_type = kv_type;
    p.n_layer = 1;  // every case has a valid KV geometry, even those without attention
    p.n_head_kv = n_head_kv;
    p.head_dim_k = p.head_dim_v = head_dim;
    return p;
}

er_op_query query_for(int32_t op, int32_t dtype, int32_t kv_type = -1, int32_t head_dim = 0) {
    auto q = sized<er_op_query>();
    q.op = op;
    q.weight_dtype = dtype;
    q.kv_type = kv_type;
    q.head_dim = head_dim;
    return q;
}

uint32_t seed_of(const std::string& label) {
    uint32_t h = 2166136261u;
    for (unsigned char c : label) h = (h ^ c) * 16777619u;
    return h;
}

std::string type_name(int32_t dtype) { return std::string(dtype_name(DType(dtype))); }

int64_t block_of(int32_t dtype) { return dtype_info(dtype)->block_elems; }

// ------------------------------------------------------------ matmuls --

struct MatmulShape {
    int64_t cols, rows;
    int32_t tokens;
    bool bias;
};

// The last two shapes reach what prompts do and the others do not: a prefill step of 301
// rows (past any GEMM tile of 8 to 256 rows, with a tail), and 8960 columns (a real FFN's
// width: past any split of the sum into 4096 or 8192 columns, with a remainder).
std::vector<MatmulShape> matmul_shapes(int32_t dtype) {
    const int64_t b = block_of(dtype);
    if (b == 1) return {{7, 3, 1, false}, {33, 17, 5, false}, {256, 64, 16, false}, {64, 9, 3, true}, {256, 33, 301, false}, {8960, 9, 2, false}};
    if (b == 32) return {{32, 1, 1, false}, {96, 7, 5, false}, {512, 64, 16, false}, {64, 9, 3, true}, {512, 33, 301, false}, {8960, 9, 2, false}};
    return {{256, 1, 1, false}, {768, 7, 5, false}, {1024, 64, 16, false}, {256, 9, 3, true}, {1024, 33, 301, false}, {8960, 9, 2, false}};
}

OpCase matmul_case(int32_t dtype, const MatmulShape& s) {
    OpCase c;
    c.label = "MATMUL " + type_name(dtype) + " [" + std::to_string(s.cols) + " x " + std::to_string(s.rows) + "], " +
              std::to_string(s.tokens) + " token" + (s.tokens > 1 ? "s" : "") + (s.bias ? ", bias" : "");
    c.query = query_for(ER_OP_MATMUL, dtype);
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    const int32_t w = c.weights->add("w", dtype, s.cols, s.rows, random_values(size_t(s.cols * s.rows), rng, 0.5f), rng);
    const int32_t bias = s.bias ? c.weights->add_vector("b", 0, random_values(size_t(s.rows), rng), rng) : -1;
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, s.tokens);
    const int32_t x = g.input(s.cols);
    const int32_t y = g.matmul(x, w, bias);
    g.mark_output(y);
    c.graph = g.finish();
    c.outputs = {y};
    c.context = context_for(std::max(8, s.tokens), s.tokens);
    OpStep step{s.tokens, 0, true, {{x, random_values(size_t(s.cols * s.tokens), rng, 1.0f, true)}}, {}};
    c.steps = {step};
    return c;
}

// Biases on the first and last outputs (one missing in the middle), or on all three (qwen2's q, k, v).
OpCase matmul_multi_case(int32_t dtype, bool every_bias) {
    const int64_t cols = block_of(dtype) == 1 ? 40 : block_of(dtype) * 2;
    OpCase c;
    c.label = "MATMUL_MULTI " + type_name(dtype) + " [" + std::to_string(cols) + " x 5, 3, 7], 4 tokens, " +
              (every_bias ? "a bias on each" : "biases");
    c.query = query_for(ER_OP_MATMUL_MULTI, dtype);
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    const int64_t rows[3] = {5, 3, 7};
    int32_t w[3], b[3] = {-1, -1, -1};
    for (int i = 0; i < 3; ++i) w[i] = c.weights->add("w" + std::to_string(i), dtype, cols, rows[i], random_values(size_t(cols * rows[i]), rng, 0.5f), rng);
    b[0] = c.weights->add_vector("b0", 0, random_values(5, rng), rng);
    b[2] = c.weights->add_vector("b2", 0, random_values(7, rng), rng);
    if (every_bias) b[1] = c.weights->add_vector("b1", 0, random_values(3, rng), rng);
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, 4);
    const int32_t x = g.input(cols);
    const auto outs = g.matmul_multi(x, {{w[0], b[0]}, {w[1], b[1]}, {w[2], b[2]}});
    for (int32_t o : outs) g.mark_output(o);
    c.graph = g.finish();
    c.outputs = outs;
    c.context = context_for(8, 4);
    c.steps = {{4, 0, true, {{x, random_values(size_t(cols * 4), rng)}}, {}}};
    return c;
}

// A small vocabulary, and one of 70001 rows (real ones reach 151936: past a grid
// dimension's 65535 blocks).
OpCase logits_case(int32_t dtype, bool large_vocab) {
    const int64_t cols = large_vocab ? (block_of(dtype) == 1 ? 8 : block_of(dtype))
                                     : block_of(dtype) == 1 ? 24 : block_of(dtype) * (block_of(dtype) == 32 ? 3 : 1);
    const int64_t vocab = large_vocab ? 70001 : 301;
    OpCase c;
    c.label = "LOGITS " + type_name(dtype) + " [" + std::to_string(cols) + " x " + std::to_string(vocab) +
              "], 6 tokens all rows, then the last row";
    c.query = query_for(ER_OP_LOGITS, dtype);
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    const int32_t w = c.weights->add("output", dtype, cols, vocab, random_values(size_t(cols * vocab), rng, 0.5f), rng);
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, 6);
    const int32_t x = g.input(cols);
    const int32_t y = g.logits(x, w);
    c.graph = g.finish();
    c.outputs = {y};
    c.context = context_for(16, 6);
    c.steps = {{6, 0, true, {{x, random_values(size_t(cols * 6), rng)}}, {}},
               {6, 6, false, {{x, random_values(size_t(cols * 6), rng)}}, {}}};
    return c;
}

OpCase embed_case(int32_t dtype) {
    const int64_t cols = block_of(dtype) == 1 ? 13 : block_of(dtype) * (block_of(dtype) == 32 ? 2 : 1);
    const int64_t rows = 50;
    OpCase c;
    c.label = "EMBED " + type_name(dtype) + " [" + std::to_string(cols) + " x 50], 5 tokens then 1";
    c.query = query_for(ER_OP_EMBED, dtype);
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    const int32_t table_w = c.weights->add("token_embd", dtype, cols, rows, random_values(size_t(cols * rows), rng), rng);
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, 5);
    const int32_t ids = g.tokens();
    const int32_t y = g.embed(ids, table_w);
    g.mark_output(y);
    c.graph = g.finish();
    c.outputs = {y};
    c.context = context_for(8, 5);
    c.steps = {{5, 0, true, {}, {{ids, {0, 49, 7, 7, 23}}}}, {1, 5, true, {}, {{ids, {31}}}}};
    return c;
}

// -------------------------------------------------------------- norms --

struct NormShape {
    int64_t width, group;
    int32_t tokens;
    float eps, input_sd;
};

OpCase rms_norm_case(int32_t dtype, const NormShape& s) {
    char eps[16];
    std::snprintf(eps, sizeof eps, "%.0e", double(s.eps));
    OpCase c;
    c.label = "RMS_NORM " + type_name(dtype) + " width " + std::to_string(s.width) +
              (s.group != s.width ? " in groups of " + std::to_string(s.group) : "") + ", eps " + eps +
              (s.input_sd < 0.1f ? ", small inputs (rms 1e-3)" : "") + ", " + std::to_string(s.tokens) + " tokens";
    c.query = query_for(ER_OP_RMS_NORM, dtype, -1, int32_t(s.group));
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    std::vector<float> gains = random_values(size_t(s.group), rng, 0.1f);
    for (float& v : gains) v += 1.0f;
    const int32_t w = c.weights->add_vector("norm", dtype, gains, rng);
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, s.tokens);
    const int32_t x = g.input(s.width);
    const int32_t y = s.group == s.width ? g.rms_norm(x, w, s.eps) : g.rms_norm_heads(x, w, s.eps);
    g.mark_output(y);
    c.graph = g.finish();
    c.outputs = {y};
    c.context = context_for(8, s.tokens);
    c.steps = {{s.tokens, 0, true, {{x, random_values(size_t(s.width * s.tokens), rng, s.input_sd, true)}}, {}}};
    return c;
}

std::vector<NormShape> norm_shapes(int32_t dtype) {
    const int64_t b = block_of(dtype);
    const int64_t small = b == 1 ? 7 : b, head = b == 256 ? 256 : 128;
    std::vector<NormShape> out = {
        {small, small, 3, 1e-6f, 1.0f},
        {8 * head, head, 2, 1e-6f, 1e-3f},   // RMSNorm of small values: epsilon matters
        {1024, 1024, 5, 1e-5f, 1.0f},
        {1024, 1024, 1, 1e-6f, 1e-3f},
        {5120, 5120, 2, 1e-6f, 1.0f},        // a row wider than one block of 1024 or 4096 threads
    };
    if (b == 1) out.push_back({1, 1, 2, 1e-6f, 1.0f});
    return out;
}

// --------------------------------------------------------------- rope --

struct RopeShape {
    int32_t mode, head_dim, n_rot, n_head;
    float base, scale;
    bool factors;
    std::vector<std::pair<int32_t, int32_t>> steps;  // (pos0, tokens)
};

OpCase rope_case(const RopeShape& s) {
    OpCase c;
    char label[192];
    std::snprintf(label, sizeof label, "ROPE %s head_dim %d n_rot %d x%d heads, base %.0f%s%s, positions up to %d",
                  s.mode == ER_ROPE_NEOX ? "neox" : "normal", s.head_dim, s.n_rot, s.n_head, double(s.base),
                  s.scale != 1.0f ? ", freq scale 0.25" : "", s.factors ? ", frequency factors" : "",
                  s.steps.back().first + s.steps.back().second - 1);
    c.label = label;
    c.query = query_for(ER_OP_ROPE, -1, -1, s.head_dim);
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    int32_t factors = -1;
    if (s.factors) {
        std::vector<float> f(size_t(s.n_rot / 2));
        for (size_t i = 0; i < f.size(); ++i) f[i] = i < f.size() / 2 ? 1.0f : float(1 + 31 * i / f.size());
        factors = c.weights->add_vector("rope_freqs", 0, f, rng);
    }
    int32_t max_tokens = 1, n_ctx = 1;
    for (auto [pos0, n] : s.steps) max_tokens = std::max(max_tokens, n), n_ctx = std::max(n_ctx, pos0 + n);
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, max_tokens);
    const int64_t width = int64_t(s.head_dim) * s.n_head;
    const int32_t x = g.input(width);
    const int32_t y = g.rope(x, er_rope_params{s.mode, s.head_dim, s.n_rot, s.base, s.scale}, factors);
    g.mark_output(y);
    c.graph = g.finish();
    c.outputs = {y};
    c.context = context_for(n_ctx, max_tokens);
    for (auto [pos0, n] : s.steps) c.steps.push_back({n, pos0, true, {{x, random_values(size_t(width * n), rng)}}, {}});
    return c;
}

// ---------------------------------------------------------- attention --

struct AttentionShape {
    int32_t n_head, n_head_kv, head_dim;
    float q_sd, k_sd;
    float scale;  // 0: 1/sqrt(head_dim)
    std::vector<int32_t> steps;  // tokens per step, positions consecutive from 0
    const char* note;
};

OpCase attention_case(int32_t kv_type, const AttentionShape& s) {
    int32_t n_ctx = 0, max_tokens = 1;
    for (int32_t n : s.steps) n_ctx += n, max_tokens = std::max(max_tokens, n);
    OpCase c;
    char label[192];
    std::snprintf(label, sizeof label, "ATTENTION %s cache, %d heads / %d KV heads of %d, %zu steps to position %d%s",
                  kv_type_label(kv_type), s.n_head, s.n_head_kv, s.head_dim, s.steps.size(), n_ctx - 1, s.note);
    c.label = label;
    c.query = query_for(ER_OP_ATTENTION, -1, kv_type, s.head_dim);
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, max_tokens);
    const int64_t q_width = int64_t(s.n_head) * s.head_dim, kv_width = int64_t(s.n_head_kv) * s.head_dim;
    const int32_t q = g.input(q_width), k = g.input(kv_width), v = g.input(kv_width);
    const float scale = s.scale > 0 ? s.scale : 1.0f / std::sqrt(float(s.head_dim));
    const int32_t y = g.attention(q, k, v, 0, er_attention_params{s.n_head, s.n_head_kv, s.head_dim, s.head_dim, scale});
    g.mark_output(y);
    c.graph = g.finish();
    c.outputs = {y};
    c.context = context_for(n_ctx, max_tokens, kv_type, s.n_head_kv, s.head_dim);
    int32_t pos = 0;
    for (int32_t n : s.steps) {
        c.steps.push_back({n, pos, true,
                           {{q, random_values(size_t(q_width * n), rng, s.q_sd)},
                            {k, random_values(size_t(kv_width * n), rng, s.k_sd)},
                            {v, random_values(size_t(kv_width * n), rng)}},
                           {}});
        pos += n;
    }
    return c;
}

// ------------------------------------------------ long-context attention --

// A GPU attention kernel changes strategy with the KV length: a flash-decode split, a
// tile, a ring buffer or a block table ends at a power of two. This case fills the cache
// past every power of two from 32 to 4096 in multi-token steps of unaligned sizes, and at
// each boundary b runs single-token steps at KV lengths b - 1, b and b + 1, each twice:
// once with random keys (attention spread over the whole cache: a wrong split or a lost
// range shows) and once again at the same position with the newest key along the query
// of the group's first head (the newest position carries about half the weight: an
// off-by-one shows). The second step overwrites the first's cache row, as a rewind does.
// Every step is judged on its own.
OpCase long_attention_case(int32_t kv_type, int32_t head_dim, int32_t n_head = 4, int32_t n_head_kv = 2,
                           int32_t last_boundary = 4096) {
    static const char* kv_names[] = {"F32", "F16", "Q8"};
    constexpr int32_t max_fill = 251;
    const int32_t group = n_head / n_head_kv;
    OpCase c;
    char label[192];
    std::snprintf(label, sizeof label,
                  "ATTENTION %s cache, %d heads / %d KV heads of %d, KV lengths across every power of two 32..%d",
                  kv_names[kv_type], n_head, n_head_kv, head_dim, last_boundary);
    c.label = label;
    c.query = query_for(ER_OP_ATTENTION, -1, kv_type, head_dim);
    c.judge_each_step = true;
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, max_fill);
    const int64_t q_width = int64_t(n_head) * head_dim, kv_width = int64_t(n_head_kv) * head_dim;
    const int32_t q = g.input(q_width), k = g.input(kv_width), v = g.input(kv_width);
    const float scale = 1.0f / std::sqrt(float(head_dim));
    const int32_t y = g.attention(q, k, v, 0, er_attention_params{n_head, n_head_kv, head_dim, head_dim, scale});
    g.mark_output(y);
    c.graph = g.finish();
    c.outputs = {y};
    c.context = context_for(last_boundary + 1, max_fill, kv_type, n_head_kv, head_dim);
    auto random_step = [&](int32_t pos0, int32_t n) {
        return OpStep{n, pos0, true,
                      {{q, random_values(size_t(q_width * n), rng)},
                       {k, random_values(size_t(kv_width * n), rng)},
                       {v, random_values(size_t(kv_width * n), rng)}},
                      {}};
    };
    int32_t pos = 0;
    for (int32_t boundary = 32; boundary <= last_boundary; boundary *= 2) {
        while (pos < boundary - 2) {  // fill up to the step at KV length boundary - 1
            const int32_t n = std::min(max_fill, boundary - 2 - pos);
            c.steps.push_back(random_step(pos, n));
            pos += n;
        }
        for (; pos <= boundary; ++pos) {  // KV lengths boundary - 1, boundary, boundary + 1
            c.steps.push_back(random_step(pos, 1));
            OpStep self = random_step(pos, 1);
            std::vector<float>& query = self.inputs[0].second;
            std::vector<float>& key = self.inputs[1].second;
            // Score of the newest key about log(KV length) above the others': half the weight.
            const float gain = (std::log(float(pos + 1)) + 0.5f) / std::sqrt(float(head_dim));
            for (int32_t kv = 0; kv < n_head_kv; ++kv)
                for (int32_t i = 0; i < head_dim; ++i)
                    key[size_t(kv * head_dim + i)] = gain * query[size_t(kv * group * head_dim + i)];
            c.steps.push_back(std::move(self));
        }
    }
    return c;
}

// --------------------------------------------------------- elementwise --

OpCase binary_case(int32_t op, int64_t width, int32_t tokens) {
    OpCase c;
    c.label = std::string(op_name(op)) + " width " + std::to_string(width) + ", " + std::to_string(tokens) + " tokens";
    c.query = query_for(op, -1);
    std::mt19937 rng(seed_of(c.label));
    c.weights = std::make_shared<WeightSet>();
    const WeightTable table = c.weights->table();
    GraphBuilder g(table, tokens);
    const int32_t a = g.input(width), b = g.input(width);
    const int32_t y = op == ER_OP_ADD ? g.add(a, b) : g.swiglu(a, b);
    g.mark_output(y);
    c.graph = g.finish();
    c.outputs = {y};
    c.context = context_for(8, tokens);
    c.steps = {{tokens, 0, true,
                {{a, random_values(size_t(width * tokens), rng, 3.0f, true)}, {b, random_values(size_t(width * tokens), rng)}},
                {}}};
    return c;
}

}  // namespace

std::vector<int32_t> op_variants(int32_t op) {
    switch (op) {
        case ER_OP_EMBED: case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: case ER_OP_LOGITS: case ER_OP_RMS_NORM:
            return weight_types();
        case ER_OP_ATTENTION: return {ER_KV_F32, ER_KV_F16, ER_KV_Q8};
        default: return {-1};
    }
}

std::vector<OpCase> make_cases(int32_t op, int32_t variant) {
    std::vector<OpCase> out;
    switch (op) {
        case ER_OP_MATMUL:
            for (const MatmulShape& s : matmul_shapes(variant)) out.push_back(matmul_case(variant, s));
            break;
        case ER_OP_MATMUL_MULTI:
            out.push_back(matmul_multi_case(variant, false));
            out.push_back(matmul_multi_case(variant, true));
            break;
        case ER_OP_LOGITS:
            out.push_back(logits_case(variant, false));
            // The vocabulary past 65535 rows for the output types of real models only: F16
            // and Q6_K (llama.cpp's choice for the output of most quantized files).
            if (variant == int32_t(DType::F16) || variant == int32_t(DType::Q6_K)) out.push_back(logits_case(variant, true));
            break;
        case ER_OP_EMBED: out.push_back(embed_case(variant)); break;
        case ER_OP_RMS_NORM:
            for (const NormShape& s : norm_shapes(variant)) out.push_back(rms_norm_case(variant, s));
            break;
        case ER_OP_ROPE: {
            const RopeShape shapes[] = {
                {ER_ROPE_NORMAL, 64, 64, 4, 10000.0f, 1.0f, false, {{0, 5}, {5, 1}, {1000, 3}}},
                {ER_ROPE_NEOX, 128, 128, 2, 1e6f, 1.0f, false, {{3, 2}, {4090, 6}, {8190, 4}}},  // past tables of 4096 and 8192
                {ER_ROPE_NEOX, 64, 32, 3, 10000.0f, 0.25f, false, {{0, 4}, {700, 1}}},
                {ER_ROPE_NORMAL, 64, 64, 2, 5e5f, 1.0f, true, {{0, 3}, {2000, 2}}},
                {ER_ROPE_NORMAL, 2, 2, 5, 10000.0f, 1.0f, false, {{0, 3}, {17, 1}}},
                {ER_ROPE_NEOX, 6, 4, 3, 10000.0f, 1.0f, false, {{0, 2}, {40, 2}}},
            };
            for (const RopeShape& s : shapes) out.push_back(rope_case(s));
            break;
        }
        case ER_OP_ATTENTION: {
            const AttentionShape shapes[] = {
                {8, 2, 64, 1.0f, 1.0f, 0, {7, 1, 5, 1}, ", grouped heads"},
                {4, 4, 128, 1.0f, 1.0f, 0, {3, 1, 1}, ""},
                {14, 2, 64, 1.0f, 1.0f, 0, {1, 1}, ", from position 0 one token at a time"},
                {4, 1, 64, 3.0f, 3.0f, 1.0f, {64, 64, 64, 64, 1}, ", large scores (up to about 200)"},
                {3, 1, 40, 1.0f, 1.0f, 0, {4, 1}, ", head size not a multiple of 32"},
                {2, 1, 32, 1.0f, 1.0f, 0, {1, 1, 1}, ", tiny"},
            };
            for (const AttentionShape& s : shapes) out.push_back(attention_case(variant, s));
            break;
        }
        case ER_OP_SWIGLU: case ER_OP_ADD:
            for (auto [width, tokens] : {std::pair<int64_t, int32_t>{1, 1}, {7, 3}, {4864, 2}}) out.push_back(binary_case(op, width, tokens));
            break;
        default: break;
    }
    return out;
}

std::vector<OpCase> make_long_attention_cases(int32_t kv_type) {
    // The third: one head on its own KV head (no grouping: the kernel a model without GQA
    // takes, e.g. SmolLM2-1.7B) past 8192 positions, where a bounded split count ends.
    return {long_attention_case(kv_type, 64), long_attention_case(kv_type, 128), long_attention_case(kv_type, 64, 1, 1, 8192)};
}

}  // namespace edgerun::conformance
