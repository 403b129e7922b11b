// The suite's measures against values worked out by hand, and the golden trace format
// written, read and written again.
#include "golden.hpp"
#include "matrix.hpp"
#include "metrics.hpp"
#include "op_suite.hpp"
#include "thresholds.hpp"

#include <doctest/doctest.h>

#include "../check_throws.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace edgerun::conformance;

TEST_CASE("NMSE is the squared error over the whole output relative to the reference's energy") {
    const std::vector<float> ref{3, 4}, cand{3, 5};  // error 1, energy 25
    CHECK(compare_outputs(cand, ref).nmse == doctest::Approx(1.0 / 25));
    CHECK(compare_outputs(ref, ref).nmse == 0);
    const std::vector<float> nan{3, NAN};
    CHECK(compare_outputs(nan, ref).non_finite);
    CHECK(std::isinf(compare_outputs(nan, ref).nmse));
}

TEST_CASE("top-2: ties go to the lowest id, the gap is first minus second") {
    const Top2 t = top2(std::vector<float>{1, 5, 5, 2});
    CHECK(t.first == 1);
    CHECK(t.second == 2);
    CHECK(t.gap == 0);
    const Top2 u = top2(std::vector<float>{7, 1, 2});
    CHECK(u.first == 0);
    CHECK(u.second == 2);
    CHECK(u.gap == 5);
}

TEST_CASE("KL divergence of two softmaxes against a direct computation") {
    const std::vector<float> ref{0.0f, 1.0f, 2.0f}, cand{0.5f, 1.0f, 1.5f};
    auto softmax = [](const std::vector<float>& l) {
        double z = 0;
        for (float v : l) z += std::exp(double(v));
        std::vector<double> p;
        for (float v : l) p.push_back(std::exp(double(v)) / z);
        return p;
    };
    const auto p = softmax(ref), q = softmax(cand);
    double want = 0;
    for (size_t i = 0; i < p.size(); ++i) want += p[i] * std::log(p[i] / q[i]);
    const PositionStats s = compare_position(cand, ref);
    CHECK(s.kl == doctest::Approx(want).epsilon(1e-12));
    CHECK(s.max_abs_diff == doctest::Approx(0.5));
    CHECK(s.ref_top1 == 2);
    CHECK(s.cand_top1 == 2);
    CHECK(s.ref_gap == doctest::Approx(1.0));
    CHECK(compare_position(ref, ref).kl == doctest::Approx(0).epsilon(1e-15));

    // Against the top-k of the reference only: a lower bound, exact when k covers all.
    for (int k : {1, 2, 3}) {
        const PositionStats t = compare_position_topk(cand, top_k(ref, k), logit_sd(ref));
        CHECK(t.kl <= s.kl + 1e-12);
        if (k == 3) CHECK(t.kl == doctest::Approx(s.kl).epsilon(1e-9));
    }
}

TEST_CASE("sequence summaries count near-ties apart and find the first disagreement") {
    std::vector<PositionStats> positions(4);
    for (auto& p : positions) p.ref_top1 = p.cand_top1 = 7, p.ref_gap = 1.0, p.ref_sd = 2.0;
    positions[1].cand_top1 = 3, positions[1].ref_gap = 0.05;  // a near-tie: excused
    positions[2].cand_top1 = 4;                                // a real disagreement
    positions[3].kl = 0.5, positions[3].max_abs_diff = 1.0;
    const SequenceSummary s = summarize(positions, 0.1);
    CHECK(s.positions == 4);
    CHECK(s.agree == 2);
    CHECK(s.decisive == 3);
    CHECK(s.decisive_agree == 2);
    CHECK(s.first_disagreement == 2);
    CHECK(s.first_cand == 4);
    CHECK(s.max_kl_position == 3);
    CHECK(s.mean_kl == doctest::Approx(0.125));
    CHECK(s.max_diff_sd == doctest::Approx(0.5));
}

TEST_CASE("greedy runs: the first differing token with both margins") {
    const GreedyRun ref{{1, 2, 3, 4}, {1.0, 2.0, 0.05, 3.0}}, cand{{1, 2, 9, 9}, {1.1, 2.1, 0.06, 0.7}};
    const Divergence d = first_divergence(cand, ref);
    CHECK_FALSE(d.identical);
    CHECK(d.position == 2);
    CHECK(d.cand_token == 9);
    CHECK(d.ref_token == 3);
    CHECK(d.ref_margin == doctest::Approx(0.05));
    CHECK(first_divergence(ref, ref).identical);
    const ModelThresholds& t = model_thresholds(Comparison::Exact);
    CHECK(judge(SequenceSummary{}, d, t).empty());  // diverging at a near-tie passes
    Divergence clear = d;
    clear.ref_margin = 1.0;
    CHECK(judge(SequenceSummary{}, clear, t).size() == 1);
}

TEST_CASE("every threshold is written down with its reason") {
    const auto lines = describe_thresholds();
    CHECK(lines.size() >= 10);
    for (const auto& line : lines) CHECK(line.find("  (") != std::string::npos);
    CHECK(op_threshold(ER_OP_MATMUL, 12, -1).max_nmse == doctest::Approx(5e-4));
    CHECK(op_threshold(ER_OP_MATMUL, 0, -1).max_nmse == doctest::Approx(1e-6));
}

TEST_CASE("the CI matrix holds the stress models, --stress multiplies the product and refuses unknown names") {
    const MatrixSpec ci = named_matrix("ci");
    int stress = 0;
    for (const MatrixEntry& e : ci.models)
        if (!e.stress.empty()) {
            ++stress;
            CHECK(e.preset == "qwen3-0.6b");
        }
    CHECK(stress == 2);
    CHECK(ci.models.size() == 36);
    const MatrixSpec product = product_matrix({"qwen3-0.6b", "qwen2.5-0.5b"}, {"Q4_K_M"}, {"small-activations"});
    REQUIRE(product.models.size() == 4);
    CHECK(product.models[0].stress.empty());
    CHECK(product.models[3].preset == "qwen2.5-0.5b");
    CHECK(product.models[3].stress == "small-activations");
    CHECK_THROWS(product_matrix({"qwen3-0.6b"}, {"Q4_K_M"}, {"tiny-activations"}));
}

TEST_CASE("the long ATTENTION cases reach every power of two from 32 to 4096 (8192 without grouping) one short, on it and one past") {
    for (int32_t kv : {ER_KV_F16, ER_KV_Q8}) {
        const auto cases = make_long_attention_cases(kv);
        REQUIRE(cases.size() == 3);
        CHECK(cases[0].query.head_dim == 64);
        CHECK(cases[1].query.head_dim == 128);
        CHECK(cases[2].query.head_dim == 64);
        for (size_t i = 0; i < cases.size(); ++i) {
            const OpCase& c = cases[i];
            const bool grouped = i < 2;
            const int32_t last = grouped ? 4096 : 8192;
            CHECK(c.judge_each_step);
            if (grouped) CHECK(c.context.n_head_kv < c.graph.nodes[0].params.attention.n_head);
            else CHECK(c.context.n_head_kv == c.graph.nodes[0].params.attention.n_head);
            std::vector<int32_t> single;
            int32_t filled = 0;  // positions are consecutive, each single-token one written twice
            for (const OpStep& s : c.steps) {
                CHECK(s.pos0 <= filled);
                filled = std::max(filled, s.pos0 + s.n_tokens);
                if (s.n_tokens == 1) single.push_back(s.pos0 + 1);
            }
            for (int32_t b = 32; b <= last; b *= 2)
                for (int32_t len : {b - 1, b, b + 1}) CHECK(std::count(single.begin(), single.end(), len) == 2);
            CHECK(filled == last + 1);
        }
    }
}

TEST_CASE("a golden trace reads back as written, byte for byte") {
    GoldenTrace t;
    t.model_file = "m.gguf", t.model_bytes = 1234, t.model_checksum = "0123456789abcdef";
    t.reference = "cpu_ref", t.device = "CPU", t.kv_type = ER_KV_F16, t.top_k = 3;
    t.sequence.teacher_tokens = 2, t.sequence.prompt_tokens = 1, t.sequence.greedy_tokens = 2, t.sequence.n_batch = 4;
    t.tokens = {5, 6};
    t.positions = {{{{1, 2, 0}, {3.25f, 0.1f, -1e-7f}, 3.5}, 0.7}, {{{2, 1, 0}, {1.0f / 3, 0.3f, 0.2f}, 1.25}, 0.3}};
    t.greedy = {{4, 8}, {0.5, 1.0 / 7}};
    const auto dir = std::filesystem::temp_directory_path() / "edgerun_trace_test";
    std::filesystem::create_directories(dir);
    write_trace(t, (dir / "a.json").string());
    const GoldenTrace back = read_trace((dir / "a.json").string());
    CHECK(back.tokens == t.tokens);
    CHECK(back.positions[1].top.logits == t.positions[1].top.logits);  // floats exactly
    CHECK(back.greedy.margins == t.greedy.margins);
    CHECK(back.kv_type == ER_KV_F16);
    write_trace(back, (dir / "b.json").string());
    auto slurp = [](const std::filesystem::path& p) {
        std::ifstream in(p);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    };
    CHECK(slurp(dir / "a.json") == slurp(dir / "b.json"));

    std::ofstream(dir / "bad.json") << "{\"format\": \"edgerun-golden-trace\", \"version\": 9}";
    CHECK_THROWS_CONTAINING_AS(read_trace((dir / "bad.json").string()), "version 9", edgerun::Error);
    std::filesystem::remove_all(dir);
}
