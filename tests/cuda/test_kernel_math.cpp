// CPU tests of the cuda_orin kernels' math: the headers the kernels are built from,
// compiled as plain C++ and checked against the PyPI package gguf (vectors written by
// gen_kernel_vectors.py) and against direct double-precision formulas.
#include <doctest/doctest.h>

#include "activation.hpp"
#include "device_selection.hpp"
#include "embed_rows.hpp"
#include "kernel_params.hpp"
#include "launch_math.hpp"
#include "quant_tasks.hpp"
#include "rope.hpp"
#include "softmax_merge.hpp"
#include "weight_layout.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace edgerun::cuda_orin;

namespace {

const char* vectors_dir() {
    const char* env = std::getenv("EDGERUN_CUDA_VECTORS");
    return env ? env : EDGERUN_CUDA_VECTORS_DIR;
}

struct WeightVectors {
    int32_t type = 0, n_rows = 0, n_cols = 0;
    std::vector<uint8_t> gguf;
    std::vector<float> values;  // what gguf dequantizes the bytes to
};

WeightVectors load_weights(const std::string& name) {
    const std::string path = std::string(vectors_dir()) + "/weights_" + name + ".bin";
    std::ifstream f(path, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), "missing " << path << " (run gen_kernel_vectors.py)");
    WeightVectors v;
    f.read(reinterpret_cast<char*>(&v.type), 4);
    f.read(reinterpret_cast<char*>(&v.n_rows), 4);
    f.read(reinterpret_cast<char*>(&v.n_cols), 4);
    v.gguf.resize(gguf_matrix_bytes(v.type, v.n_rows, v.n_cols));
    v.values.resize(size_t(v.n_rows) * v.n_cols);
    f.read(reinterpret_cast<char*>(v.gguf.data()), std::streamsize(v.gguf.size()));
    f.read(reinterpret_cast<char*>(v.values.data()), std::streamsize(v.values.size() * 4));
    REQUIRE(f.good());
    return v;
}

// A packed copy kept in a 256-byte aligned buffer, as on the device.
struct Packed {
    std::vector<uint8_t> storage;
    PackedMatrix view;
};

Packed pack(const WeightVectors& v) {
    const PackedLayout layout = packed_layout(v.type, v.n_rows, v.n_cols);
    REQUIRE(layout.total_bytes > 0);
    Packed p;
    p.storage.resize(layout.total_bytes + kPlaneAlign);
    auto addr = reinterpret_cast<uintptr_t>(p.storage.data());
    uint8_t* base = p.storage.data() + (align_up(addr, kPlaneAlign) - addr);
    REQUIRE(repack_matrix(v.type, v.gguf.data(), v.n_rows, v.n_cols, base));
    p.view = packed_view(layout, v.type, v.n_rows, v.n_cols, base);
    return p;
}

Task dequantize_any(const PackedMatrix& w, int row, int task) {
    switch (w.type) {
        case kQ4_0: return dequantize_task<kQ4_0>(w, row, task);
        case kQ4_1: return dequantize_task<kQ4_1>(w, row, task);
        case kQ5_0: return dequantize_task<kQ5_0>(w, row, task);
        case kQ5_1: return dequantize_task<kQ5_1>(w, row, task);
        case kQ8_0: return dequantize_task<kQ8_0>(w, row, task);
        case kQ2_K: return dequantize_task<kQ2_K>(w, row, task);
        case kQ3_K: return dequantize_task<kQ3_K>(w, row, task);
        case kQ4_K: return dequantize_task<kQ4_K>(w, row, task);
        case kQ5_K: return dequantize_task<kQ5_K>(w, row, task);
        case kQ6_K: return dequantize_task<kQ6_K>(w, row, task);
    }
    FAIL("no dequantizer for type " << w.type);
    return {};
}

float dot_any(const PackedMatrix& w, int row, int task, const Activation& x) {
    switch (w.type) {
        case kQ4_0: return task_dot<kQ4_0>(w, row, task, x.q8);
        case kQ4_1: return task_dot<kQ4_1>(w, row, task, x.q8);
        case kQ5_0: return task_dot<kQ5_0>(w, row, task, x.q8);
        case kQ5_1: return task_dot<kQ5_1>(w, row, task, x.q8);
        case kQ8_0: return task_dot<kQ8_0>(w, row, task, x.q8);
        case kQ2_K: return task_dot<kQ2_K>(w, row, task, x.q8);
        case kQ3_K: return task_dot<kQ3_K>(w, row, task, x.q8);
        case kQ4_K: return task_dot<kQ4_K>(w, row, task, x.q8);
        case kQ5_K: return task_dot<kQ5_K>(w, row, task, x.q8);
        case kQ6_K: return task_dot<kQ6_K>(w, row, task, x.q8);
        case kF32: return task_dot_plain<kF32>(w, row, task, GlobalFloatX{x.f});
        case kF16: return task_dot_plain<kF16>(w, row, task, GlobalFloatX{x.f});
        case kBF16: return task_dot_plain<kBF16>(w, row, task, GlobalFloatX{x.f});
    }
    FAIL("no dot for type " << w.type);
    return 0;
}

// Host form of the activation buffers: float and q8 copies, padded to 32 with zeros.
struct HostActivation {
    std::vector<float> f;
    std::vector<int8_t> q;
    std::vector<float> d;
    Activation view{};
};

HostActivation quantize_activation(const std::vector<float>& x) {
    HostActivation a;
    const int n_pad = (int(x.size()) + 31) / 32 * 32;
    a.f.assign(n_pad, 0.0f);
    std::copy(x.begin(), x.end(), a.f.begin());
    a.q.assign(n_pad, 0);
    a.d.assign(n_pad / 32, 0.0f);
    for (int g = 0; g < n_pad / 32; ++g) a.d[g] = activation_q8_quantize_group(&a.f[32 * g], &a.q[32 * g]);
    a.view.q8 = {reinterpret_cast<const uint8_t*>(a.q.data()), a.d.data()};
    a.view.f = a.f.data();
    a.view.n = int(x.size());
    a.view.n_pad = n_pad;
    return a;
}

const char* kTypes[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "F32", "F16", "BF16"};

}  // namespace

TEST_CASE("repacked planes hold exactly the GGUF bytes, aligned for vector loads") {
    for (const std::string name : kTypes) {
        CAPTURE(name);
        const WeightVectors v = load_weights(name);
        const PackedLayout layout = packed_layout(v.type, v.n_rows, v.n_cols);
        for (int p = 0; p < layout.geometry.n_planes; ++p) CHECK(layout.plane_offset[p] % kPlaneAlign == 0);
        const Packed packed = pack(v);
        std::vector<uint8_t> back(v.gguf.size(), 0xAB);
        REQUIRE(unpack_matrix(v.type, packed.view.plane[0], v.n_rows, v.n_cols, back.data()));
        CHECK(back == v.gguf);
        // Bytes per weight are the file's (plain types pad rows to 32 values).
        uint64_t plane_sum = 0;
        for (int p = 0; p < layout.geometry.n_planes; ++p) plane_sum += layout.geometry.plane_bytes[p];
        CHECK(plane_sum == uint64_t(layout.geometry.gguf_block_bytes));
    }
}

TEST_CASE("repack refuses what the kernels cannot read") {
    std::vector<uint8_t> buf(4096);
    CHECK_FALSE(repack_matrix(kQ4_K, buf.data(), 1, 100, buf.data()));  // not whole blocks
    CHECK_FALSE(repack_matrix(9 /* Q8_1 */, buf.data(), 1, 32, buf.data()));
    CHECK(packed_layout(kQ4_0, 0, 32).total_bytes == 0);
}

TEST_CASE("the kernels' per-task decode gives gguf's values bit for bit") {
    for (const std::string name : kTypes) {
        if (name == "F32" || name == "F16" || name == "BF16") continue;  // nothing to dequantize: read as values
        CAPTURE(name);
        const WeightVectors v = load_weights(name);
        const Packed packed = pack(v);
        const int n_tasks = tasks_per_row(packed.view);
        REQUIRE(n_tasks * 32 == v.n_cols);
        std::vector<int> seen(v.n_cols);
        int mismatches = 0;
        for (int row = 0; row < v.n_rows; ++row) {
            std::fill(seen.begin(), seen.end(), 0);
            for (int t = 0; t < n_tasks; ++t) {
                const Task task = dequantize_any(packed.view, row, t);
                for (const Segment& s : task.seg)
                    for (int i = 0; i < 16; ++i) {
                        const int col = s.pos + i;
                        REQUIRE(col >= 0);
                        REQUIRE(col < v.n_cols);
                        ++seen[col];
                        const float expect = v.values[size_t(row) * v.n_cols + col];
                        if (segment_weight(s, i) != expect && mismatches++ < 5)
                            FAIL_CHECK("row " << row << " col " << col << ": " << segment_weight(s, i)
                                              << " != gguf " << expect);
                    }
            }
            // Every weight of the row belongs to exactly one segment.
            for (int col = 0; col < v.n_cols; ++col) REQUIRE(seen[col] == 1);
        }
        CHECK(mismatches == 0);
    }
}

void dequantize_exact_any(const PackedMatrix& w, int row, int task, float* out_row) {
    switch (w.type) {
        case kQ4_0: return dequantize_task_exact<kQ4_0>(w, row, task, out_row);
        case kQ4_1: return dequantize_task_exact<kQ4_1>(w, row, task, out_row);
        case kQ5_0: return dequantize_task_exact<kQ5_0>(w, row, task, out_row);
        case kQ5_1: return dequantize_task_exact<kQ5_1>(w, row, task, out_row);
        case kQ8_0: return dequantize_task_exact<kQ8_0>(w, row, task, out_row);
        case kQ2_K: return dequantize_task_exact<kQ2_K>(w, row, task, out_row);
        case kQ3_K: return dequantize_task_exact<kQ3_K>(w, row, task, out_row);
        case kQ4_K: return dequantize_task_exact<kQ4_K>(w, row, task, out_row);
        case kQ5_K: return dequantize_task_exact<kQ5_K>(w, row, task, out_row);
        case kQ6_K: return dequantize_task_exact<kQ6_K>(w, row, task, out_row);
        case kF32: return dequantize_task_exact<kF32>(w, row, task, out_row);
        case kF16: return dequantize_task_exact<kF16>(w, row, task, out_row);
        case kBF16: return dequantize_task_exact<kBF16>(w, row, task, out_row);
    }
    FAIL("no exact dequantizer for type " << w.type);
}

TEST_CASE("the embedding's rows from the packed layout are gguf's values bit for bit, every type") {
    for (const std::string name : kTypes) {
        CAPTURE(name);
        const WeightVectors v = load_weights(name);
        const Packed packed = pack(v);
        const float sentinel = edgerun::quant::bits_to_float(0x7FC0ABCDu);  // shows a value no task wrote
        std::vector<float> row_values(size_t(v.n_cols) + 32);
        int differing = 0;
        for (int row = 0; row < v.n_rows; ++row) {
            std::fill(row_values.begin(), row_values.end(), sentinel);
            for (int t = 0; t < tasks_per_row(packed.view); ++t) dequantize_exact_any(packed.view, row, t, row_values.data());
            for (int col = 0; col < v.n_cols; ++col) {
                const float expect = v.values[size_t(row) * v.n_cols + col], got = row_values[size_t(col)];
                if (edgerun::quant::float_to_bits(got) != edgerun::quant::float_to_bits(expect) && differing++ < 5)
                    FAIL_CHECK("row " << row << " col " << col << ": " << got << " != gguf " << expect);
            }
            // A padded plain row's tail is not written (it is not part of the row).
            for (size_t col = size_t(v.n_cols); col < row_values.size(); ++col)
                CHECK(edgerun::quant::float_to_bits(row_values[col]) == edgerun::quant::float_to_bits(sentinel));
        }
        CHECK(differing == 0);
    }
}

TEST_CASE("task dot products equal the double dot of gguf's weights and the q8 activations") {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const std::string name : kTypes) {
        CAPTURE(name);
        const WeightVectors v = load_weights(name);
        const Packed packed = pack(v);
        std::vector<float> x(v.n_cols);
        for (float& e : x) e = normal(rng);
        const HostActivation a = quantize_activation(x);
        double err2 = 0, ref2 = 0;
        for (int row = 0; row < v.n_rows; ++row) {
            float y = 0;
            for (int t = 0; t < tasks_per_row(packed.view); ++t) y += dot_any(packed.view, row, t, a.view);
            // Reference over the same activations the kernel sees: q8 values for quantized
            // weights, floats for F16; and the unquantized x for the accuracy bound.
            double exact = 0, magnitude = 0, true_x = 0;
            for (int c = 0; c < v.n_cols; ++c) {
                const double w = v.values[size_t(row) * v.n_cols + c];
                const double xk = plain_value_bytes(v.type) ? double(x[c]) : double(a.d[c / 32]) * a.q[c];
                exact += w * xk;
                magnitude += std::fabs(w * xk);
                true_x += w * x[c];
            }
            // Float accumulation over the row's tasks: a few ulps of the sum of magnitudes.
            CHECK(std::fabs(y - exact) <= 1e-5 * magnitude + 1e-30);
            err2 += (y - true_x) * (y - true_x);
            ref2 += true_x * true_x;
        }
        // Quantizing x to 8 bits per 32 costs relative noise of about (amax/127)^2/12 per
        // element, ~3e-5 relative for Gaussian x and centred weights; these random-byte
        // blocks have large minimums (cancellation in w.x), so the bound here is looser.
        const double nmse = err2 / ref2;
        MESSAGE(name << ": nmse against unquantized x " << nmse);
        CHECK(nmse < (plain_value_bytes(v.type) ? 1e-10 : 1e-3));
    }
}

// The 16-byte units of x a task reads, in the order its thread loads them: for the
// shared-memory bank check of the staged activations.
std::vector<int> x_units_of_task(const PackedMatrix& w, int task) {
    std::vector<int> units;
    if (plain_value_bytes(w.type)) {
        for (int part = 0; part < 8; ++part) units.push_back(8 * task + part);
        return units;
    }
    const Task t = dequantize_any(w, 0, task);
    for (const Segment& s : t.seg)
        for (int part = 0; part < 4; ++part) units.push_back(s.pos / 4 + part);
    return units;
}

TEST_CASE("staged activations: the eight lanes of a quarter-warp load from eight different bank groups") {
    // staged_unit permutes the units inside each 128-byte row and nothing else.
    for (int row = 0; row < 64; ++row) {
        std::vector<int> seen(8, 0);
        for (int u = 8 * row; u < 8 * row + 8; ++u) {
            REQUIRE(staged_unit(u) / 8 == row);
            ++seen[size_t(staged_unit(u) % 8)];
        }
        for (int n : seen) REQUIRE(n == 1);
    }
    // A 16-byte shared load is served eight lanes at a time; lanes 8q..8q+7 of a warp hold
    // tasks t0..t0+7 with t0 a multiple of 8 (gemv.cu: task = slice * 32 + lane + k * 32 *
    // warps_per_row). Each load of the task order of every type must spread them over the
    // eight groups of four banks (unit % 8); in place, without the permutation, most
    // types put all eight on one or two groups.
    for (const std::string name : kTypes) {
        CAPTURE(name);
        const Packed packed = pack(load_weights(name));
        // Plain rows: task t reads units 8t..8t+7 whatever the row's length (the test
        // vectors' plain rows are short), so a row of 64 tasks is checked.
        const int n_tasks = plain_value_bytes(packed.view.type) ? 64 : tasks_per_row(packed.view);
        REQUIRE(n_tasks >= 8);
        int worst_staged = 0, worst_in_place = 0;
        for (int t0 = 0; t0 < n_tasks; t0 += 8) {
            std::vector<std::vector<int>> lane_units;  // the lanes past the row's end load nothing
            for (int lane = 0; lane < 8 && t0 + lane < n_tasks; ++lane)
                lane_units.push_back(x_units_of_task(packed.view, t0 + lane));
            for (size_t load = 0; load < lane_units[0].size(); ++load) {
                std::vector<int> staged(8, 0), in_place(8, 0);
                for (const std::vector<int>& units : lane_units) {
                    ++staged[size_t(staged_unit(units[load]) % 8)];
                    ++in_place[size_t(units[load] % 8)];
                }
                worst_staged = std::max(worst_staged, *std::max_element(staged.begin(), staged.end()));
                worst_in_place = std::max(worst_in_place, *std::max_element(in_place.begin(), in_place.end()));
            }
        }
        MESSAGE(name << ": lanes per bank group at worst, staged " << worst_staged << ", unpermuted " << worst_in_place);
        CHECK(worst_staged == 1);
        CHECK(worst_in_place >= 2);
    }
}

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
        CHECK(l.x_stage_bytes == 2560 * 4);
        CHECK(l.rows_per_warp == 1);
        GemvLaunch fixed = l;
        fixed.rows_per_warp = 2;  // the option's value is kept
        CHECK(plan_gemv(fixed, 132) == 608);
        CHECK(fixed.rows_per_warp == 2);
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

TEST_CASE("x quantized as staged: the eight lanes of a quarter-warp load from eight different bank groups") {
    // staged_q8_unit permutes units (16 bytes) inside each group of 16, and a row's stage
    // holds whole groups (q8_stage_row_units), so no unit leaves its row.
    for (int n_pad : {32, 96, 160, 256, 288, 4096, 9728}) {
        const int n_units = q8_stage_row_units(n_pad);
        REQUIRE(n_units % 16 == 0);
        REQUIRE(n_units >= n_pad / 16);
        std::vector<int> seen(size_t(n_units), 0);
        for (int u = 0; u < n_units; ++u) {
            REQUIRE(staged_q8_unit(u) / 16 == u / 16);
            ++seen[size_t(staged_q8_unit(u))];
        }
        for (int n : seen) REQUIRE(n == 1);
        const Q8Stage stage = q8_stage(3, n_pad);
        CHECK(stage.meta_offset == 3 * n_units * 16);
        CHECK(stage.bytes == stage.meta_offset + 3 * (n_pad / 16) * 8);
        CHECK(stage.bytes % 16 == 0);
    }
    // A segment's 16 bytes are one unit; lanes 8q..8q+7 load tasks t0..t0+7 (t0 a multiple
    // of 8), one unit per segment.
    for (const std::string name : kTypes) {
        CAPTURE(name);
        const Packed packed = pack(load_weights(name));
        if (plain_value_bytes(packed.view.type)) continue;
        const int n_tasks = tasks_per_row(packed.view);
        REQUIRE(n_tasks >= 8);
        int worst_staged = 0, worst_in_place = 0;
        for (int t0 = 0; t0 + 8 <= n_tasks; t0 += 8)
            for (int s = 0; s < 2; ++s) {
                std::vector<int> staged(8, 0), in_place(8, 0);
                for (int lane = 0; lane < 8; ++lane) {
                    const int unit = dequantize_any(packed.view, 0, t0 + lane).seg[s].pos / 16;
                    ++staged[size_t(staged_q8_unit(unit) % 8)];
                    ++in_place[size_t(unit % 8)];
                }
                worst_staged = std::max(worst_staged, *std::max_element(staged.begin(), staged.end()));
                worst_in_place = std::max(worst_in_place, *std::max_element(in_place.begin(), in_place.end()));
            }
        MESSAGE(name << ": lanes per bank group at worst, staged " << worst_staged << ", unpermuted " << worst_in_place);
        CHECK(worst_staged == 1);
        CHECK(worst_in_place >= 2);
    }
}

TEST_CASE("INT8 KV and activation quantization match gguf's Q8_0 byte for byte") {
    const std::string path = std::string(vectors_dir()) + "/q8_groups.bin";
    std::ifstream f(path, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), "missing " << path);
    int32_t n_groups = 0;
    f.read(reinterpret_cast<char*>(&n_groups), 4);
    std::vector<float> x(size_t(n_groups) * 32);
    std::vector<uint8_t> blocks(size_t(n_groups) * 34);
    f.read(reinterpret_cast<char*>(x.data()), std::streamsize(x.size() * 4));
    f.read(reinterpret_cast<char*>(blocks.data()), std::streamsize(blocks.size()));
    REQUIRE(f.good());
    int bad = 0;
    for (int g = 0; g < n_groups; ++g) {
        const uint8_t* block = &blocks[size_t(g) * 34];
        uint16_t expect_d;
        std::memcpy(&expect_d, block, 2);
        int8_t q[32];
        const uint16_t d = kv_q8_quantize_group(&x[size_t(g) * 32], q);
        if (d != expect_d || std::memcmp(q, block + 2, 32) != 0) ++bad;
        int8_t qa[32];
        const float da = activation_q8_quantize_group(&x[size_t(g) * 32], qa);
        CHECK(std::memcmp(qa, block + 2, 32) == 0);
        CHECK(edgerun::quant::fp32_to_fp16(da) == expect_d);
        // Dequantized KV value: fp16 scale times the byte.
        CHECK(kv_q8_value(q[5], d) == edgerun::quant::fp16_to_fp32(expect_d) * float(int8_t(block[2 + 5])));
    }
    CHECK(bad == 0);
}

TEST_CASE("split ranges cover the KV sequence once, with a fixed number of splits") {
    for (int n_splits : {1, 3, 8, 64}) {
        for (int kv_len : {1, 2, 31, 32, 33, 100, 1000, 4096, 32768}) {
            int covered = 0, prev_end = 0;
            for (int s = 0; s < n_splits; ++s) {
                int b, e;
                split_range(kv_len, n_splits, 32, s, &b, &e);
                CHECK(b == prev_end);
                CHECK(e >= b);
                if (e > b && e < kv_len) CHECK((e - b) % 32 == 0);
                covered += e - b;
                prev_end = e;
            }
            CHECK(covered == kv_len);
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
