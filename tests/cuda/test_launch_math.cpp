// CPU tests of the cuda_orin launch planning and the small pieces of math the kernels
// share (split ranges, the online softmax merge, RoPE angles): the headers compiled as
// plain C++, checked against direct formulas and against the shapes of real GPUs.
#include <doctest/doctest.h>

#include "device_selection.hpp"
#include "kernel_params.hpp"
#include "launch_math.hpp"
#include "rope.hpp"
#include "softmax_merge.hpp"

#include <cmath>
#include <random>
#include <vector>

using namespace edgerun::cuda_orin;

TEST_CASE("GEMV rows per warp: fewer, fuller blocks where staging x costs, never an emptier wave") {
    // Qwen3-4B's gate/up (9728 rows, SwiGLU: one range) with x quantized in the stage:
    // on an H200 (132 SMs, 396 block slots) one row a warp takes 1216 blocks, 4 waves of
    // (1 + 1) passes = 8; 4 rows a warp, 304 blocks in one wave of 5 passes.
    const int64_t gate[] = {9728};
    CHECK(choose_rows_per_warp(gate, 1, 3, 132, kGemvQuantizeStageCost) == 4);
    // Its down projection (2560 rows) fills less than a wave at one row a warp: kept.
    const int64_t down[] = {2560};
    CHECK(choose_rows_per_warp(down, 1, 3, 132, kGemvQuantizeStageCost) == 1);
    // Launches whose staging is not costed (x read in place, or copied as floats: the
    // plan gives them no cost) keep one row a warp, whatever the shape.
    for (int sms : {8, 16, 132}) CHECK(choose_rows_per_warp(gate, 1, 3, sms, 0.0) == 1);
    // An Orin AGX (16 SMs) and its Q/K/V (4096 + 1024 + 1024 rows): the most rows a warp.
    const int64_t qkv[] = {4096, 1024, 1024};
    CHECK(choose_rows_per_warp(qkv, 3, 3, 16, kGemvQuantizeStageCost) == kGemvMaxRowsPerWarp);
    // plan_gemv: the same gate/up launch takes 4 rows a warp with x quantized in the
    // stage, 1 with x staged as floats.
    {
        alignas(256) static uint8_t plane[256];
        static float x[2560], y[1];
        GemvLaunch l;
        l.x.f = x;
        l.x.n = l.x.n_pad = 2560;
        l.n_outputs = 2;
        l.epilogue = kEpilogueSwiGLU;
        for (int i = 0; i < 2; ++i) {
            l.out[i].w.type = kQ4_K;
            l.out[i].w.n_rows = 9728;
            l.out[i].w.n_cols = 2560;
            l.out[i].w.blocks_per_row = 10;
            l.out[i].w.plane[0] = plane;
            l.out[i].y = y;
        }
        GemvLaunch quantized = l;
        quantized.quantize_x = 1;
        CHECK(plan_gemv(quantized, 132) == 304);
        CHECK(quantized.rows_per_warp == 4);
        CHECK(plan_gemv(l, 132) == 1216);
        CHECK(l.x_stage_bytes == 2560 * 4 + 2560 / 16 * 4);  // the floats, then a sum per segment (FloatStage)
        CHECK(l.rows_per_warp == 1);
        GemvLaunch fixed = l;
        fixed.rows_per_warp = 2;  // the option's value is kept
        CHECK(plan_gemv(fixed, 132) == 608);
        CHECK(fixed.rows_per_warp == 2);
        // Tasks loaded ahead (several in flight, or the first one): a row a warp, whatever
        // the plan would choose; no kernel takes them with several rows a warp.
        auto check_row_a_warp_only = [](GemvLaunch& launch) {
            launch.rows_per_warp = 0;
            CHECK(plan_gemv(launch, 132) == 1216);
            CHECK(launch.rows_per_warp == 1);
            launch.rows_per_warp = 2;
            CHECK(plan_gemv(launch, 132) == 0);
            launch.rows_per_warp = 1;
        };
        // Two tasks in flight; four are taken, three are not.
        GemvLaunch in_flight = quantized;
        in_flight.tasks_in_flight = 2;
        check_row_a_warp_only(in_flight);
        in_flight.tasks_in_flight = 4;
        CHECK(plan_gemv(in_flight, 132) == 1216);
        in_flight.tasks_in_flight = 3;
        CHECK(plan_gemv(in_flight, 132) == 0);
        in_flight.tasks_in_flight = 0;
        CHECK(plan_gemv(in_flight, 132) == 0);
        // The first task loaded ahead (one in flight); with several in flight it is what
        // they do anyway, so the flag is dropped.
        GemvLaunch ahead = quantized;
        ahead.load_ahead = 1;
        check_row_a_warp_only(ahead);
        CHECK(ahead.load_ahead == 1);
        ahead.tasks_in_flight = 4;
        CHECK(plan_gemv(ahead, 132) == 1216);
        CHECK(ahead.load_ahead == 0);
        // Rows in pairs: SwiGLU's gate and up kept where both matrices have one quantized
        // type, x is 8-bit and a lane walks one row with one task in flight; two rows of an
        // output a warp never for SwiGLU. Dropped otherwise.
        alignas(16) static uint8_t x_q[2560];
        alignas(16) static Words2 x_segments[2560 / 16];
        GemvLaunch pairs = l;
        pairs.x.q8 = {x_q, x_segments};
        pairs.swiglu_pairs = pairs.row_pairs = 1;
        CHECK(plan_gemv(pairs, 132) == 1216);
        CHECK(pairs.swiglu_pairs == 1);
        CHECK(pairs.row_pairs == 0);
        auto check_dropped = [](GemvLaunch launch, void (*vary)(GemvLaunch&)) {
            vary(launch);
            CHECK(plan_gemv(launch, 132) > 0);
            CHECK(launch.swiglu_pairs == 0);
            CHECK(launch.row_pairs == 0);
        };
        check_dropped(pairs, [](GemvLaunch& v) { v.out[1].w.type = kQ6_K; });
        // Rows one after another share a block's stage of x: with prepared 8-bit x, where
        // nothing is staged, a row a warp whatever is asked (and the pairs stay); with x
        // quantized as staged, several rows a warp, and no pairs.
        GemvLaunch prepared_rows = pairs;
        prepared_rows.rows_per_warp = 2;
        CHECK(plan_gemv(prepared_rows, 132) == 1216);
        CHECK(prepared_rows.rows_per_warp == 1);
        CHECK(prepared_rows.swiglu_pairs == 1);
        GemvLaunch staged_rows = pairs;
        staged_rows.x.q8 = {nullptr, nullptr};
        staged_rows.quantize_x = 1;
        staged_rows.rows_per_warp = 2;
        CHECK(plan_gemv(staged_rows, 132) == 608);
        CHECK(staged_rows.swiglu_pairs == 0);
        check_dropped(pairs, [](GemvLaunch& v) { v.tasks_in_flight = 2; });
        check_dropped(pairs, [](GemvLaunch& v) { v.load_ahead = 1; });
        check_dropped(pairs, [](GemvLaunch& v) { v.x.q8 = {nullptr, nullptr}; });  // float x
        check_dropped(pairs, [](GemvLaunch& v) {
            v.out[0].w.type = v.out[1].w.type = kF16;
            v.out[0].w.blocks_per_row = v.out[1].w.blocks_per_row = 80;
        });
        // Two rows of one output a warp: 16 rows a block, half the blocks; the plan's warps
        // a row are the same (2560 rows of 4096 on 132 SMs: two), whatever the pairs.
        GemvLaunch down = pairs;
        down.epilogue = kEpilogueStore;
        down.n_outputs = 1;
        down.out[0].w.n_rows = 2560;
        down.out[0].w.n_cols = down.x.n = down.x.n_pad = 4096;
        down.out[0].w.blocks_per_row = 16;
        down.row_pairs = 1;  // dropped above for SwiGLU
        CHECK(plan_gemv(down, 132) == 2560 / 8);
        CHECK(down.row_pairs == 1);
        CHECK(down.warps_per_row == 2);
        down.row_pairs = 0;
        CHECK(plan_gemv(down, 132) == 2560 / 4);
        // A ring of tasks (option gemv_ring): with pairs and prepared x only, as deep as
        // asked where a block's 48 KB hold it: SwiGLU's Q4_K slots are 1024 bytes (two
        // 16-byte loads of 32 lanes), three deep 48 KB; Q6_K's 1408 (two and three narrow
        // words), two deep only. Other depths are refused.
        GemvLaunch ringed = pairs;
        ringed.ring_depth = 3;
        CHECK(plan_gemv(ringed, 132) == 1216);
        CHECK(ringed.ring_depth == 3);
        CHECK(ringed.ring_slot_bytes == 1024);
        CHECK(ringed.shared_bytes == 48 * 1024);
        GemvLaunch ringed_q6 = ringed;
        ringed_q6.out[0].w.type = ringed_q6.out[1].w.type = kQ6_K;
        CHECK(plan_gemv(ringed_q6, 132) == 1216);
        CHECK(ringed_q6.ring_depth == 2);
        CHECK(ringed_q6.shared_bytes == 8 * 2 * 2 * 1408);
        for (int depth : {1, 4, -1}) {
            GemvLaunch refused = ringed;
            refused.ring_depth = depth;
            CHECK(plan_gemv(refused, 132) == 0);
        }
        for (void (*vary)(GemvLaunch&) : {+[](GemvLaunch& v) { v.swiglu_pairs = 0; },
                                          +[](GemvLaunch& v) { v.x.q8 = {nullptr, nullptr}; },  // float x: no pairs
                                          +[](GemvLaunch& v) {  // x quantized as staged: pairs, no ring
                                              v.x.q8 = {nullptr, nullptr};
                                              v.quantize_x = 1;
                                              v.rows_per_warp = 1;
                                          }}) {
            GemvLaunch dropped = ringed;
            vary(dropped);
            CHECK(plan_gemv(dropped, 132) > 0);
            CHECK(dropped.ring_depth == 0);
            CHECK(dropped.shared_bytes == dropped.x_stage_bytes);
        }
        down.row_pairs = 1;
        down.n_x_rows = 2;  // the multi-row kernel: no pairs
        down.out[0].y_row_stride = 2560;
        check_dropped(down, [](GemvLaunch&) {});
        // Warps a row asked for (the option gemv_warps_per_row): kept, a row a warp each,
        // as many blocks as the rows need at 8 / warps rows a block; 3 and 16 refused.
        GemvLaunch split = l;
        CHECK(split.warps_per_row == 1);  // the plan's own choice for 9728 rows on 132 SMs
        for (int warps : {1, 2, 4, 8}) {
            split.asked_warps_per_row = warps;
            split.rows_per_warp = 0;
            CHECK(plan_gemv(split, 132) == 9728 / (8 / warps));
            CHECK(split.warps_per_row == warps);
            CHECK(split.rows_per_warp == 1);
        }
        for (int warps : {3, 16, -1}) {
            split.asked_warps_per_row = warps;
            CHECK(plan_gemv(split, 132) == 0);
        }
    }
    // Against every R, on every shape: the choice is the cheapest by its own measure.
    for (int sms : {8, 16, 132})
        for (int64_t n : {64, 1000, 2560, 9728, 151936})
            for (double cost : {0.15, 1.0, 2.5}) {
                const int64_t r1[] = {n};
                const int chosen = choose_rows_per_warp(r1, 1, 3, sms, cost);
                auto time = [&](int r) {
                    const int64_t blocks = (n + 8 * r - 1) / (8 * r), slots = int64_t(sms) * 3;
                    return double((blocks + slots - 1) / slots) * (r + cost);
                };
                for (int r = 1; r <= kGemvMaxRowsPerWarp; ++r) CHECK(time(chosen) <= time(r));
            }
}

TEST_CASE("GEMV doing rope_append: outputs q, k and v of its RopeAppendParams, one row of x, the store epilogue") {
    // Qwen3-4B's Q/K/V: 32 query heads and 8 KV heads of 128.
    alignas(256) static uint8_t plane[256], cache[256];
    static float x[2560], q[4096], k[1024], v[1024];
    static int32_t pos, tickets[40];
    GemvLaunch l;
    l.x.f = x;
    l.x.n = l.x.n_pad = 2560;
    l.n_outputs = 3;
    float* ys[3] = {q, k, v};
    for (int i = 0; i < 3; ++i) {
        l.out[i].w.type = kQ4_K;
        l.out[i].w.n_rows = i == 0 ? 4096 : 1024;
        l.out[i].w.n_cols = 2560;
        l.out[i].w.blocks_per_row = 10;
        l.out[i].w.plane[0] = plane;
        l.out[i].y = ys[i];
    }
    RopeAppendParams& r = l.rope_append;
    r.q = q;
    r.k = k;
    r.v = v;
    r.n_head = 32;
    r.rope = {kRopeNeox, 128, 128, rope_theta_scale(1e6f, 128), 1.0f, nullptr};
    r.pos = &pos;
    r.cache = {kKvF16, cache, cache, nullptr, nullptr, 4096, 8, 128};
    l.rope_append_tickets = tickets;
    GemvLaunch planned = l;
    CHECK(plan_gemv(planned, 132) == 768);  // 6144 rows, 8 a block
    CHECK(planned.x_stage_bytes == 2560 * 4 + 2560 / 16 * 4);
    CHECK(planned.shared_bytes == planned.x_stage_bytes);  // the stage holds a head's row
    // x read in place: no stage, and the shared memory is the head's row and sums.
    planned = l;
    planned.stage_x = 0;
    CHECK(plan_gemv(planned, 132) == 768);
    CHECK(planned.x_stage_bytes == 0);
    CHECK(planned.shared_bytes == kRopeAppendSharedBytes);
    // Without the tickets the same launch is a plain one.
    planned = l;
    planned.rope_append_tickets = nullptr;
    planned.stage_x = 0;
    CHECK(plan_gemv(planned, 132) == 768);
    CHECK(planned.shared_bytes == 0);
    // Refused: outputs other than rope_append's q, k, v; a half or a residual output;
    // rows that are not the heads'; a second row of x; a head wider than a block.
    auto refused = [&](auto change) {
        GemvLaunch bad = l;
        change(bad);
        return plan_gemv(bad, 132) == 0;
    };
    CHECK(refused([&](GemvLaunch& b) { b.out[1].y = v; }));
    CHECK(refused([&](GemvLaunch& b) { b.out[2].y_is_f16 = 1; }));
    CHECK(refused([&](GemvLaunch& b) { b.out[0].residual = x; }));
    CHECK(refused([&](GemvLaunch& b) { b.rope_append.n_head = 16; }));
    CHECK(refused([&](GemvLaunch& b) { b.n_outputs = 2; }));
    CHECK(refused([&](GemvLaunch& b) { b.n_x_rows = 2; }));
    CHECK(refused([&](GemvLaunch& b) { b.rope_append.pos = nullptr; }));
    CHECK(refused([&](GemvLaunch& b) {
        b.rope_append.rope.head_dim = b.rope_append.cache.head_dim = 512;
        b.rope_append.n_head = 8;
        b.rope_append.cache.n_head_kv = 2;
    }));
}

TEST_CASE("split ranges cover the KV sequence once, with a fixed number of splits") {
    for (int n_splits : {1, 3, 8, 33, 64}) {
        for (int kv_len : {0, 1, 2, 31, 32, 33, 100, 1000, 4096, 4100, 32768}) {
            int covered = 0, prev_end = 0, nonempty = 0;
            for (int s = 0; s < n_splits; ++s) {
                int b, e;
                split_range(kv_len, n_splits, 32, s, &b, &e);
                CHECK(b == prev_end);
                CHECK(e >= b);
                if (e > b && e < kv_len) CHECK((e - b) % 32 == 0);
                if (e > b) CHECK(nonempty++ == s);  // the splits with keys come first
                covered += e - b;
                prev_end = e;
            }
            CHECK(covered == kv_len);
            CHECK(nonempty_splits(kv_len, n_splits, 32) == nonempty);
        }
    }
}

TEST_CASE("split softmax merged online equals a plain softmax") {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    const int dim = 8;
    for (int kv_len : {1, 5, 32, 77, 1000}) {
        for (int n_splits : {1, 4, 16}) {
            std::vector<float> s(kv_len), v(size_t(kv_len) * dim);
            for (float& e : s) e = normal(rng);
            for (float& e : v) e = normal(rng);
            // Plain softmax in double (natural log domain; the kernel uses log2: s*log2e).
            double mx = -1e300, denom = 0;
            for (float e : s) mx = std::max(mx, double(e));
            std::vector<double> ref(dim, 0.0);
            for (int t = 0; t < kv_len; ++t) {
                const double p = std::exp(double(s[t]) - mx);
                denom += p;
                for (int d = 0; d < dim; ++d) ref[d] += p * v[size_t(t) * dim + d];
            }
            // The kernel's way: splits of 32-key tiles, online rescaling, then merging.
            SoftmaxPartial total = empty_partial();
            std::vector<float> out(dim, 0.0f);
            for (int sp = 0; sp < n_splits; ++sp) {
                int b, e;
                split_range(kv_len, n_splits, 32, sp, &b, &e);
                SoftmaxPartial part = empty_partial();
                std::vector<float> o(dim, 0.0f);
                for (int t0 = b; t0 < e; t0 += 32) {
                    const int t1 = std::min(t0 + 32, e);
                    float tile_max = -INFINITY;
                    for (int t = t0; t < t1; ++t) tile_max = std::max(tile_max, s[t] * kLog2e);
                    const float factor = online_softmax_rescale(&part.m, tile_max);
                    part.l *= factor;
                    for (float& e2 : o) e2 *= factor;
                    for (int t = t0; t < t1; ++t) {
                        const float p = exp2f(s[t] * kLog2e - part.m);
                        part.l += p;
                        for (int d = 0; d < dim; ++d) o[d] += p * v[size_t(t) * dim + d];
                    }
                }
                float wa, wb;
                total = merge_partials(total, part, &wa, &wb);
                for (int d = 0; d < dim; ++d) out[d] = out[d] * wa + o[d] * wb;
            }
            for (int d = 0; d < dim; ++d) CHECK(out[d] / total.l == doctest::Approx(ref[d] / denom).epsilon(1e-4));
        }
    }
}

TEST_CASE("merging with empty partials is harmless") {
    float wa, wb;
    const SoftmaxPartial a{2.0f, 3.0f};
    const SoftmaxPartial r = merge_partials(a, empty_partial(), &wa, &wb);
    CHECK(r.m == 2.0f);
    CHECK(r.l == 3.0f);
    CHECK(wa == 1.0f);
    CHECK(wb == 0.0f);
    const SoftmaxPartial e = merge_partials(empty_partial(), empty_partial(), &wa, &wb);
    CHECK(e.l == 0.0f);
    CHECK(!std::isnan(wa));
}

TEST_CASE("RoPE angles follow pos * base^(-2i/n_rot) / factor * scale") {
    const float factors[4] = {1.0f, 2.0f, 4.0f, 8.0f};
    for (float base : {10000.0f, 500000.0f, 1000000.0f}) {
        for (int n_rot : {64, 128}) {
            RopeConfig c{kRopeNeox, n_rot, n_rot, rope_theta_scale(base, n_rot), 0.5f, nullptr};
            for (int pos : {0, 1, 17, 4095, 32767}) {
                for (int i : {0, 1, 3, n_rot / 4, n_rot / 2 - 1}) {
                    const float ff = factors[i % 4];
                    const double expect = 0.5 * pos * std::pow(double(base), -2.0 * i / n_rot) / ff;
                    // Repeated float multiplication loses ~1 ulp per step.
                    CHECK(rope_angle(c, pos, i, ff) == doctest::Approx(expect).epsilon(2e-5));
                }
            }
        }
    }
    RopeConfig normal{kRopeNormal, 64, 32, 0.5f, 1.0f, nullptr}, neox = normal;
    neox.mode = kRopeNeox;
    int a, b;
    rope_pair_dims(normal, 3, &a, &b);
    CHECK((a == 6 && b == 7));
    rope_pair_dims(neox, 3, &a, &b);
    CHECK((a == 3 && b == 19));
}

TEST_CASE("launch shapes depend on sizes only and stay within limits") {
    // Plenty of rows: one warp per row. Few rows: split, but never below 32 tasks a slice.
    CHECK(choose_warps_per_row(9728, 80, 132) == 1);
    CHECK(choose_warps_per_row(1024, 80, 132) == 2);
    CHECK(choose_warps_per_row(1024, 1024, 132) == 8);
    CHECK(choose_warps_per_row(1024, 16, 132) == 1);
    CHECK(choose_warps_per_row(512, 256, 8) == 1);
    for (int n_ctx : {64, 512, 4096, 32768})
        for (int sms : {8, 16, 132}) {
            const int s = choose_kv_splits(n_ctx, 8, sms);
            CHECK(s >= 1);
            CHECK(s <= std::max(1, n_ctx / (4 * kAttentionTile)));
        }
    CHECK(choose_kv_splits(32768, 8, 132) == 66);
    CHECK(attention_workspace_floats(32, 128, 66) == int64_t(32) * 66 * 130);
    // A float stage holds each row's values and a sum per 16 of them (FloatStage), within
    // the GEMV's share of the 48 KiB a launch gets: 4.25 bytes a value.
    CHECK(float_stage(2, 64).sums_offset == 2 * 64 * 4);
    CHECK(float_stage(2, 64).bytes == 2 * 64 * 4 + 2 * 4 * 4);
    CHECK(gemv_stage_fits(1, 11296));
    CHECK_FALSE(gemv_stage_fits(1, 11328));
    CHECK(gemv_stage_fits(2, 5632));
    CHECK_FALSE(gemv_stage_fits(2, 5664));
    CHECK_FALSE(gemv_stage_fits(1, 100));  // rows are padded to 32 values
}

TEST_CASE("launch planning for GPUs of 8, 16 and 132 SMs (Orin Nano/NX, AGX, H100/H200)") {
    struct Shape {
        const char* name;
        int n_embd, n_ff, n_vocab, q_width, kv_width;
    };
    const Shape shapes[] = {{"SmolLM2-135M", 576, 1536, 49152, 576, 192},
                            {"Qwen3-0.6B", 1024, 3072, 151936, 2048, 1024},
                            {"Llama-3.2-1B", 2048, 8192, 128256, 2048, 512}};
    alignas(256) static uint8_t plane[256];
    float y[1];
    for (int sms : {8, 16, 132})
        for (const Shape& s : shapes)
            for (int32_t type : {kQ4_K, kQ6_K, kQ8_0, kF16}) {
                // Each GEMV of a layer and the logits: (rows, cols).
                const int mats[][2] = {{s.q_width, s.n_embd}, {s.kv_width, s.n_embd}, {s.n_embd, s.q_width},
                                       {s.n_ff, s.n_embd}, {s.n_embd, s.n_ff}, {s.n_vocab, s.n_embd}};
                for (const auto& m : mats) {
                    CAPTURE(sms);
                    CAPTURE(s.name);
                    CAPTURE(m[0]);
                    CAPTURE(m[1]);
                    if (m[1] % plane_geometry(type).block_elems) continue;  // no such file
                    GemvLaunch l;
                    l.x.n = m[1];
                    l.n_outputs = 1;
                    l.out[0].w.type = type;
                    l.out[0].w.n_rows = m[0];
                    l.out[0].w.n_cols = m[1];
                    l.out[0].w.blocks_per_row = m[1] / plane_geometry(type).block_elems;
                    l.out[0].w.plane[0] = plane;
                    l.out[0].y = y;
                    const int blocks = plan_gemv(l, sms);
                    const int rows_per_block = kGemvWarps / l.warps_per_row * l.rows_per_warp;
                    REQUIRE(blocks > 0);
                    CHECK(l.rows_per_warp >= 1);
                    CHECK(l.rows_per_warp <= kGemvMaxRowsPerWarp);
                    if (l.warps_per_row > 1) CHECK(l.rows_per_warp == 1);
                    // Every row in exactly one block, no block without rows.
                    CHECK(int64_t(blocks) * rows_per_block >= m[0]);
                    CHECK(int64_t(blocks - 1) * rows_per_block < m[0]);
                    // Split-K only where it leaves each slice 32 tasks or more, and only
                    // when the rows alone would not fill the device.
                    const int tasks = m[1] / 32;
                    if (l.warps_per_row > 1) {
                        CHECK(tasks >= 32 * l.warps_per_row);
                        CHECK(int64_t(m[0]) * (l.warps_per_row / 2) < int64_t(sms) * 32);
                    }
                    // Several rows of x: the same split (so each row's sum is the one-row
                    // kernel's), a row per warp, up to kGemvMaxRows rows, each output row strided.
                    GemvLaunch rows = l;
                    rows.out[0].y_row_stride = m[0];
                    for (int n_x : {2, kGemvMaxRows}) {
                        rows.n_x_rows = n_x;
                        const int rows_per_pass = kGemvWarps / l.warps_per_row;
                        CHECK(plan_gemv(rows, sms) == (m[0] + rows_per_pass - 1) / rows_per_pass);
                        CHECK(rows.warps_per_row == l.warps_per_row);
                        CHECK(rows.rows_per_warp == 1);
                    }
                    rows.n_x_rows = kGemvMaxRows + 1;
                    CHECK(plan_gemv(rows, sms) == 0);
                    rows.n_x_rows = 0;
                    CHECK(plan_gemv(rows, sms) == 0);
                    rows.n_x_rows = 2;
                    rows.out[0].y_row_stride = m[0] - 1;  // rows of y would overlap
                    CHECK(plan_gemv(rows, sms) == 0);
                }
            }
    // Attention: enough blocks for the device at long contexts, fewer SMs never more
    // splits, and no split shorter than 4 tiles of keys.
    for (const Shape& s : shapes) {
        const int kv_heads = s.kv_width / 64;
        for (int n_ctx : {256, 4096, 32768}) {
            int previous = 0;
            for (int sms : {8, 16, 132}) {
                const int splits = choose_kv_splits(n_ctx, kv_heads, sms);
                CHECK(splits >= previous);
                previous = splits;
                CHECK(splits <= std::max(1, n_ctx / (4 * kAttentionTile)));
                if (n_ctx == 32768) CHECK(int64_t(splits) * kv_heads >= 4 * sms);
            }
        }
    }
}

TEST_CASE("a GPU is usable when the build carries SASS it runs or PTX the driver compiles for it") {
    const CudaArchitectures orin_and_h100 = parse_cuda_architectures("87;90");
    CHECK(orin_and_h100.sass == std::vector<int>{87, 90});
    CHECK(orin_and_h100.ptx == std::vector<int>{87, 90});
    CHECK(unusable_reason(8, 7, orin_and_h100).empty());   // Orin: sm_87 SASS
    CHECK(unusable_reason(9, 0, orin_and_h100).empty());   // H100/H200: sm_90 SASS
    CHECK(unusable_reason(12, 0, orin_and_h100).empty());  // later GPUs: compute_90 PTX
    CHECK(unusable_reason(8, 9, orin_and_h100).empty());   // sm_87 SASS runs on 8.9
    const std::string ampere = unusable_reason(8, 6, orin_and_h100);  // RTX 30xx
    CHECK(ampere.find("sm_86") != std::string::npos);
    CHECK(ampere.find("sm_87, sm_90, compute_87 PTX, compute_90 PTX") != std::string::npos);

    const CudaArchitectures ptx_only = parse_cuda_architectures("87-virtual");
    CHECK(ptx_only.sass.empty());
    CHECK(unusable_reason(9, 0, ptx_only).empty());  // the Orin path JIT-compiled on an H200
    CHECK_FALSE(unusable_reason(8, 0, ptx_only).empty());

    const CudaArchitectures sass_only = parse_cuda_architectures("87-real,90-real");
    CHECK(sass_only.ptx.empty());
    CHECK_FALSE(unusable_reason(10, 0, sass_only).empty());  // no PTX: a newer major cannot run it
    CHECK(parse_cuda_architectures("").sass.empty());
}
