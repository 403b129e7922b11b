// Every graph op through the plugin ABI, against straightforward double-precision
// implementations written here.
#include "helpers.hpp"

#include <algorithm>
#include <functional>
#include <map>

using namespace cpu_ref_test;

namespace {

// One plan on a fresh session; inputs by value id.
struct OneGraph {
    Session session;
    Plan plan;
    OneGraph(const Weights& w, const Graph& g, const er_context_params& cp, int threads = 2)
        : session(w, cp, threads), plan(session.context, g.view()) {}

    std::vector<float> run(const std::map<int32_t, std::vector<float>>& inputs, int32_t n, int32_t out, int64_t width,
                           int32_t pos0 = 0, bool logits_all = false, int32_t out_rows = -1) {
        for (const auto& [value, data] : inputs) plan.set_input(value, data.data(), n);
        plan.execute(n, pos0, logits_all);
        const int32_t rows = out_rows < 0 ? n : out_rows;
        std::vector<float> result(static_cast<size_t>(rows * width));
        plan.get_output(out, result.data(), rows);
        return result;
    }
};

std::vector<double> ref_matmul(const std::vector<float>& x, int64_t n, int64_t k, const std::vector<float>& w,
                               int64_t rows, const std::vector<float>* bias, std::vector<double>* magnitude) {
    std::vector<double> out(n * rows);
    if (magnitude) magnitude->assign(n * rows, 0.0);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t r = 0; r < rows; ++r) {
            double s = bias ? (*bias)[r] : 0.0, m = bias ? std::fabs((*bias)[r]) : 0.0;
            for (int64_t j = 0; j < k; ++j) {
                s += double(x[i * k + j]) * w[r * k + j];
                m += std::fabs(double(x[i * k + j]) * w[r * k + j]);
            }
            out[i * rows + r] = s;
            if (magnitude) (*magnitude)[i * rows + r] = m;
        }
    return out;
}

// |got - want| <= rel * magnitude for every element (F32 dot products of width k).
void check_close(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& magnitude,
                 double rel) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        CAPTURE(got[i]);
        CAPTURE(want[i]);
        REQUIRE(std::fabs(got[i] - want[i]) <= rel * magnitude[i] + 1e-30);
    }
}

}  // namespace

TEST_CASE("MATMUL: every weight type, GEMV (1-3 rows) and BLAS tiles (4+ rows), with bias") {
    std::mt19937 rng(11);
    const int32_t types[] = {0, 1, 30, 2, 3, 6, 7, 8, 10, 11, 12, 13, 14};
    for (int32_t dtype : types) {
        const int block = edgerun::dtype_info(dtype)->block_elems;
        const int64_t k = block == 256 ? 512 : block == 32 ? 96 : 37;  // plain types: an odd width
        const int64_t rows = 150;  // tiles of 64, 64 and 22
        Weights w;
        const int32_t wi = w.add_random("w", dtype, k, rows, rng);
        const auto bias_values = random_vector(rows, rng);
        const int32_t bi = w.add_f32("b", rows, 1, bias_values);
        const WeightTable table = w.table();
        GraphBuilder b(table, 17);
        const int32_t x = b.input(k);
        const int32_t y = b.matmul(x, wi, bi);
        b.mark_output(y);
        OneGraph g(w, b.finish(), context_params(32, 17));
        const auto wf = w.dequantized(wi);
        for (int32_t n : {1, 2, 3, 4, 5, 17}) {
            CAPTURE(dtype);
            CAPTURE(n);
            const auto xs = random_vector(n * k, rng);
            std::vector<double> magnitude;
            const auto want = ref_matmul(xs, n, k, wf, rows, &bias_values, &magnitude);
            check_close(g.run({{x, xs}}, n, y, rows), want, magnitude, 2e-6 * std::sqrt(double(k)));
        }
    }
}

TEST_CASE("MATMUL_MULTI: one input, outputs of different weight types and widths") {
    std::mt19937 rng(12);
    Weights w;
    const int64_t k = 256;
    const int32_t a = w.add_random("a", 12, k, 40, rng), c = w.add_random("c", 8, k, 24, rng),
                  d = w.add_random("d", 1, k, 8, rng);
    const auto bias = random_vector(24, rng);
    const int32_t cb = w.add_f32("cb", 24, 1, bias);
    const WeightTable table = w.table();
    GraphBuilder b(table, 6);
    const int32_t x = b.input(k);
    const auto outs = b.matmul_multi(x, {{a}, {c, cb}, {d}});
    for (int32_t o : outs) b.mark_output(o);
    OneGraph g(w, b.finish(), context_params(8, 6));
    for (int32_t n : {1, 6}) {
        const auto xs = random_vector(n * k, rng);
        g.plan.set_input(x, xs.data(), n);
        g.plan.execute(n, 0, false);
        const int32_t ids[3] = {a, c, d};
        const int64_t widths[3] = {40, 24, 8};
        for (int i = 0; i < 3; ++i) {
            CAPTURE(n);
            CAPTURE(i);
            std::vector<float> got(n * widths[i]);
            g.plan.get_output(outs[i], got.data(), n);
            std::vector<double> magnitude;
            const auto want = ref_matmul(xs, n, k, w.dequantized(ids[i]), widths[i], i == 1 ? &bias : nullptr, &magnitude);
            check_close(got, want, magnitude, 4e-5);
        }
    }
}

TEST_CASE("LOGITS: the last row only, or every row when the step asks") {
    std::mt19937 rng(13);
    Weights w;
    const int32_t wi = w.add_random("out", 8, 64, 100, rng);
    const WeightTable table = w.table();
    GraphBuilder b(table, 8);
    const int32_t x = b.input(64);
    const int32_t y = b.logits(x, wi);
    OneGraph g(w, b.finish(), context_params(16, 8));
    const auto xs = random_vector(5 * 64, rng);
    std::vector<double> magnitude;
    const auto want = ref_matmul(xs, 5, 64, w.dequantized(wi), 100, nullptr, &magnitude);

    const auto last = g.run({{x, xs}}, 5, y, 100, 0, false, 1);
    check_close(last, std::vector<double>(want.begin() + 400, want.end()),
                std::vector<double>(magnitude.begin() + 400, magnitude.end()), 2e-5);
    std::vector<float> two(200);
    er_error err{};
    CHECK(g.session.backend.iface().plan_get_output(g.plan.raw(), y, two.data(), 2, &err) == ER_E_INVALID_ARGUMENT);
    CHECK(std::string(err.message).find("last step left 1") != std::string::npos);

    const auto all = g.run({{x, xs}}, 5, y, 100, 0, true);
    check_close(all, want, magnitude, 2e-5);
}

TEST_CASE("EMBED: rows of the table decoded exactly; ids outside the vocabulary are refused") {
    std::mt19937 rng(14);
    for (int32_t dtype : {8, 1, 14}) {
        Weights w;
        const int64_t width = dtype == 14 ? 256 : 64;
        const int32_t t = w.add_random("tok", dtype, width, 50, rng);
        const WeightTable table = w.table();
        GraphBuilder b(table, 4);
        const int32_t ids = b.tokens();
        const int32_t e = b.embed(ids, t);
        b.mark_output(e);
        OneGraph g(w, b.finish(), context_params(8, 4));
        const int32_t tokens[4] = {3, 0, 49, 3};
        g.plan.set_input(ids, tokens, 4);
        g.plan.execute(4, 0, false);
        std::vector<float> got(4 * width);
        g.plan.get_output(e, got.data(), 4);
        const auto table_values = w.dequantized(t);
        for (int r = 0; r < 4; ++r)
            CHECK(std::memcmp(&got[r * width], &table_values[tokens[r] * width], width * sizeof(float)) == 0);

        const int32_t bad[1] = {50};
        g.plan.set_input(ids, bad, 1);
        CHECK_THROWS_WITH(g.plan.execute(1, 0, false), "executing step: token id 50 is outside the vocabulary [0, 50)");
    }
}

TEST_CASE("RMS_NORM: whole rows and per head (group), odd widths") {
    std::mt19937 rng(15);
    for (auto [width, group] : {std::pair<int64_t, int32_t>{96, 96}, {96, 32}, {37, 37}, {105, 21}}) {
        Weights w;
        const auto gamma = random_vector(group, rng);
        const int32_t wi = w.add_f32("norm", group, 1, gamma);
        const WeightTable table = w.table();
        GraphBuilder b(table, 3);
        const int32_t x = b.input(width);
        const int32_t y = group == width ? b.rms_norm(x, wi, 1e-5f) : b.rms_norm_heads(x, wi, 1e-5f);
        b.mark_output(y);
        OneGraph g(w, b.finish(), context_params(8, 3));
        auto xs = random_vector(3 * width, rng, 3.0f);
        const auto got = g.run({{x, xs}}, 3, y, width);
        for (int64_t r = 0; r < 3; ++r)
            for (int64_t g0 = 0; g0 < width; g0 += group) {
                double ss = 0;
                for (int i = 0; i < group; ++i) ss += double(xs[r * width + g0 + i]) * xs[r * width + g0 + i];
                const double scale = 1.0 / std::sqrt(ss / group + 1e-5);
                for (int i = 0; i < group; ++i) {
                    const double want = xs[r * width + g0 + i] * scale * gamma[i];
                    CHECK(std::fabs(got[r * width + g0 + i] - want) <= 1e-6 * std::fabs(want) + 1e-7);
                }
            }
    }
}

TEST_CASE("ROPE: normal and NeoX, n_rot < head_dim, freq_scale, frequency factors, positions from pos0") {
    std::mt19937 rng(16);
    const int32_t head_dim = 16, n_rot = 12, heads = 3, n = 4, pos0 = 5;
    const int64_t width = head_dim * heads;
    for (int32_t mode : {ER_ROPE_NORMAL, ER_ROPE_NEOX}) {
        for (bool with_factors : {false, true}) {
            CAPTURE(mode);
            CAPTURE(with_factors);
            Weights w;
            std::vector<float> factors(n_rot / 2);
            for (int k = 0; k < n_rot / 2; ++k) factors[k] = 1.0f + 0.75f * k;
            const int32_t fi = w.add_f32("rope_freqs", n_rot / 2, 1, factors);
            const WeightTable table = w.table();
            GraphBuilder b(table, n);
            const int32_t x = b.input(width);
            const er_rope_params p{mode, head_dim, n_rot, 10000.0f, 0.5f};
            const int32_t y = b.rope(x, p, with_factors ? fi : -1);
            b.mark_output(y);
            OneGraph g(w, b.finish(), context_params(16, n));
            const auto xs = random_vector(n * width, rng);
            const auto got = g.run({{x, xs}}, n, y, width, pos0);
            for (int r = 0; r < n; ++r)
                for (int h = 0; h < heads; ++h) {
                    const float* in = &xs[r * width + h * head_dim];
                    const float* out = &got[r * width + h * head_dim];
                    for (int k = 0; k < n_rot / 2; ++k) {
                        const double theta = (pos0 + r) * std::pow(10000.0, -2.0 * k / n_rot) * 0.5 /
                                             (with_factors ? factors[k] : 1.0);
                        const int i0 = mode == ER_ROPE_NEOX ? k : 2 * k, i1 = mode == ER_ROPE_NEOX ? k + n_rot / 2 : 2 * k + 1;
                        const double want0 = in[i0] * std::cos(theta) - in[i1] * std::sin(theta);
                        const double want1 = in[i0] * std::sin(theta) + in[i1] * std::cos(theta);
                        CHECK(std::fabs(out[i0] - want0) <= 4e-6 * (std::fabs(in[i0]) + std::fabs(in[i1])) + 1e-7);
                        CHECK(std::fabs(out[i1] - want1) <= 4e-6 * (std::fabs(in[i0]) + std::fabs(in[i1])) + 1e-7);
                    }
                    for (int i = n_rot; i < head_dim; ++i) CHECK(out[i] == in[i]);  // not rotated
                }
        }
    }
}

TEST_CASE("SWIGLU and ADD") {
    std::mt19937 rng(17);
    Weights w;
    w.add_f32("unused", 4, 1, {0, 0, 0, 0});
    const WeightTable table = w.table();
    GraphBuilder b(table, 3);
    const int32_t gate = b.input(45), up = b.input(45);
    const int32_t s = b.swiglu(gate, up), a = b.add(gate, up);
    b.mark_output(s);
    b.mark_output(a);
    OneGraph g(w, b.finish(), context_params(8, 3));
    auto gs = random_vector(3 * 45, rng, 4.0f), us = random_vector(3 * 45, rng);
    gs[0] = -100.0f;  // silu underflows to -0
    gs[1] = 100.0f;
    g.plan.set_input(gate, gs.data(), 3);
    g.plan.set_input(up, us.data(), 3);
    g.plan.execute(3, 0, false);
    std::vector<float> got_s(3 * 45), got_a(3 * 45);
    g.plan.get_output(s, got_s.data(), 3);
    g.plan.get_output(a, got_a.data(), 3);
    for (int i = 0; i < 3 * 45; ++i) {
        const double want = gs[i] / (1.0 + std::exp(-double(gs[i]))) * us[i];
        CHECK(std::fabs(got_s[i] - want) <= 1e-6 * std::fabs(want) + 1e-30);
        CHECK(got_a[i] == gs[i] + us[i]);
    }
}
