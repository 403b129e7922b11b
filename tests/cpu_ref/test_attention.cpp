// ATTENTION through the ABI: grouped-query heads, the causal mask, a cache filled over
// several steps and rewound, and the three KV cache types.
#include "helpers.hpp"

using namespace cpu_ref_test;

namespace {

constexpr int32_t kHeads = 6, kKvHeads = 2, kDim = 32, kCtx = 16;
constexpr int64_t kQWidth = kHeads * kDim, kKvWidth = kKvHeads * kDim;

// What a cache of `kv_type` gives back for a row of values (the documented encodings,
// implemented here independently).
std::vector<double> stored(const float* x, int n, int32_t kv_type, double* max_error = nullptr) {
    std::vector<double> out(n);
    double worst = 0;
    for (int b = 0; b < n; b += 32) {
        float amax = 0;
        for (int i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        const float d16 = edgerun::quant::fp16_to_fp32(edgerun::quant::fp32_to_fp16(d));
        for (int i = b; i < b + 32; ++i) {
            if (kv_type == ER_KV_F32) out[i] = x[i];
            else if (kv_type == ER_KV_F16) out[i] = edgerun::quant::fp16_to_fp32(edgerun::quant::fp32_to_fp16(x[i]));
            else out[i] = double(d16) * std::round(x[i] * id);
        }
        worst = std::max(worst, double(d16) * 0.5 + 1e-7 * amax);  // Q8: at most half a step off
    }
    if (max_error) *max_error = worst;
    return out;
}

// Attention of query row `q` (head h) over positions [0, last] of the history, in double.
std::vector<double> attend(const std::vector<std::vector<float>>& qs, const std::vector<std::vector<float>>& ks,
                           const std::vector<std::vector<float>>& vs, int32_t pos, int32_t kv_type, int kv_of_head_div) {
    std::vector<double> out(kHeads * kDim, 0.0);
    const double scale = 1.0 / std::sqrt(double(kDim));
    for (int h = 0; h < kHeads; ++h) {
        const int g = kv_of_head_div > 0 ? h / kv_of_head_div : h % kKvHeads;
        std::vector<double> s(pos + 1);
        double max = -1e300;
        for (int j = 0; j <= pos; ++j) {
            const auto k = stored(&ks[j][g * kDim], kDim, kv_type);
            double dot = 0;
            for (int i = 0; i < kDim; ++i) dot += double(qs[pos][h * kDim + i]) * k[i];
            s[j] = dot * scale;
            max = std::max(max, s[j]);
        }
        double sum = 0;
        for (auto& e : s) sum += (e = std::exp(e - max));
        for (int j = 0; j <= pos; ++j) {
            const auto v = stored(&vs[j][g * kDim], kDim, kv_type);
            for (int i = 0; i < kDim; ++i) out[h * kDim + i] += s[j] / sum * v[i];
        }
    }
    return out;
}

struct AttentionGraph {
    Weights weights;
    WeightTable table;
    Graph graph;
    int32_t q, k, v, out;

    AttentionGraph() {
        weights.add_f32("unused", 4, 1, {0, 0, 0, 0});
        table = weights.table();
        GraphBuilder b(table, 8);
        q = b.input(kQWidth);
        k = b.input(kKvWidth);
        v = b.input(kKvWidth);
        const er_attention_params p{kHeads, kKvHeads, kDim, kDim, 1.0f / std::sqrt(float(kDim))};
        out = b.attention(q, k, v, /*layer*/ 1, p);
        b.mark_output(out);
        graph = b.finish();
    }
};

// Runs positions [pos0, pos0 + n) of the history through `plan` and returns the outputs.
std::vector<std::vector<float>> step(Plan& plan, const AttentionGraph& g, const std::vector<std::vector<float>>& qs,
                                     const std::vector<std::vector<float>>& ks, const std::vector<std::vector<float>>& vs,
                                     int32_t pos0, int32_t n) {
    std::vector<float> q, k, v;
    for (int32_t p = pos0; p < pos0 + n; ++p) {
        q.insert(q.end(), qs[p].begin(), qs[p].end());
        k.insert(k.end(), ks[p].begin(), ks[p].end());
        v.insert(v.end(), vs[p].begin(), vs[p].end());
    }
    plan.set_input(g.q, q.data(), n);
    plan.set_input(g.k, k.data(), n);
    plan.set_input(g.v, v.data(), n);
    plan.execute(n, pos0, false);
    std::vector<float> all(n * kQWidth);
    plan.get_output(g.out, all.data(), n);
    std::vector<std::vector<float>> rows;
    for (int32_t r = 0; r < n; ++r) rows.emplace_back(all.begin() + r * kQWidth, all.begin() + (r + 1) * kQWidth);
    return rows;
}

}  // namespace

TEST_CASE("ATTENTION: causal GQA over a cache filled in steps, for every KV type, and rewinding") {
    std::mt19937 rng(21);
    const int n_pos = 9;
    std::vector<std::vector<float>> qs, ks, vs;
    for (int p = 0; p < n_pos; ++p) {
        qs.push_back(random_vector(kQWidth, rng));
        ks.push_back(random_vector(kKvWidth, rng));
        vs.push_back(random_vector(kKvWidth, rng, 2.0f));
    }
    AttentionGraph g;
    std::vector<std::vector<float>> f32_outputs;
    for (int32_t kv_type : {ER_KV_F32, ER_KV_F16, ER_KV_Q8}) {
        CAPTURE(kv_type);
        Session s(g.weights, context_params(kCtx, 8, kv_type, 2, kKvHeads, kDim, kDim));
        Plan plan(s.context, g.graph.view());
        std::vector<std::vector<float>> outs;
        for (auto [pos0, n] : {std::pair{0, 5}, {5, 1}, {6, 3}})
            for (auto& row : step(plan, g, qs, ks, vs, pos0, n)) outs.push_back(row);

        for (int p = 0; p < n_pos; ++p) {
            CAPTURE(p);
            // Against double math over exactly what the cache stores.
            const auto want = attend(qs, ks, vs, p, kv_type, kHeads / kKvHeads);
            CHECK(max_abs_diff(outs[p], want) <= 2e-5);
            // A wrong head mapping (h % n_head_kv) would be far off: the test can tell.
            CHECK(max_abs_diff(outs[p], attend(qs, ks, vs, p, kv_type, 0)) > 1e-2);
        }
        if (kv_type == ER_KV_F32) {
            // Position 0 sees only itself: the output is its own V row, bit for bit.
            for (int h = 0; h < kHeads; ++h)
                CHECK(std::memcmp(&outs[0][h * kDim], &vs[0][(h / 3) * kDim], kDim * sizeof(float)) == 0);
            f32_outputs = outs;
        } else {
            // Bounded by the cache's rounding: V off by at most half a step, scores by at
            // most delta = scale * sum|q| * (K step / 2), so p changes by a factor within e^(+-2 delta).
            for (int p = 0; p < n_pos; ++p)
                for (int h = 0; h < kHeads; ++h) {
                    const int kvh = h / 3;
                    double k_err = 0, v_err = 0, v_max = 0, q_abs = 0, e;
                    for (int j = 0; j <= p; ++j) {
                        stored(&ks[j][kvh * kDim], kDim, kv_type, &e);
                        k_err = std::max(k_err, e);
                        stored(&vs[j][kvh * kDim], kDim, kv_type, &e);
                        v_err = std::max(v_err, e);
                        for (int i = 0; i < kDim; ++i) v_max = std::max(v_max, double(std::fabs(vs[j][kvh * kDim + i])));
                    }
                    if (kv_type == ER_KV_F16) k_err = v_err = 0;  // half precision: covered by the check above
                    for (int i = 0; i < kDim; ++i) q_abs += std::fabs(qs[p][h * kDim + i]);
                    const double delta = q_abs * k_err / std::sqrt(double(kDim));
                    const double bound = (std::exp(2 * delta) - 1) * v_max + v_err + 1e-3 * v_max;
                    for (int i = 0; i < kDim; ++i)
                        CHECK(std::fabs(outs[p][h * kDim + i] - f32_outputs[p][h * kDim + i]) <= bound);
                }
        }

        // Rewind to position 3 with new tokens: positions 3 and 4 are replaced, 5.. are stale.
        auto qs2 = qs, ks2 = ks, vs2 = vs;
        for (int p = 3; p < 5; ++p) {
            qs2[p] = random_vector(kQWidth, rng);
            ks2[p] = random_vector(kKvWidth, rng);
            vs2[p] = random_vector(kKvWidth, rng);
        }
        const auto rewound = step(plan, g, qs2, ks2, vs2, 3, 2);
        for (int r = 0; r < 2; ++r) CHECK(max_abs_diff(rewound[r], attend(qs2, ks2, vs2, 3 + r, kv_type, 3)) <= 2e-5);
        // The cache now ends at 5: a step may not start past it.
        CHECK_THROWS_WITH(step(plan, g, qs2, ks2, vs2, 7, 1),
                          "executing step: step starts at position 7 but the cache holds only positions before 5");
    }
}

TEST_CASE("ATTENTION: steps beyond n_ctx are refused") {
    AttentionGraph g;
    Session s(g.weights, context_params(6, 8, ER_KV_F32, 2, kKvHeads, kDim, kDim));
    Plan plan(s.context, g.graph.view());
    std::mt19937 rng(3);
    std::vector<std::vector<float>> qs, ks, vs;
    for (int p = 0; p < 8; ++p) {
        qs.push_back(random_vector(kQWidth, rng));
        ks.push_back(random_vector(kKvWidth, rng));
        vs.push_back(random_vector(kKvWidth, rng));
    }
    step(plan, g, qs, ks, vs, 0, 4);
    CHECK_THROWS_WITH(step(plan, g, qs, ks, vs, 4, 3), "executing step: positions 4..6 do not fit the context of 6");
    CHECK_NOTHROW(step(plan, g, qs, ks, vs, 4, 2));
}
