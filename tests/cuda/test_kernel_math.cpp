// CPU tests of the cuda_orin kernels' weight and activation math: the headers the kernels
// are built from, compiled as plain C++ and checked against the PyPI package gguf (vectors
// written by gen_kernel_vectors.py) and against direct double-precision formulas. Launch
// planning and the shared softmax/RoPE math: test_launch_math.cpp.
#include <doctest/doctest.h>

#include "activation.hpp"
#include "embed_rows.hpp"
#include "kernel_params.hpp"
#include "quant_tasks.hpp"
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
    const GlobalQ8X q8{x.q8};
    switch (w.type) {
        case kQ4_0: return task_dot<kQ4_0>(w, row, task_index(task), q8);
        case kQ4_1: return task_dot<kQ4_1>(w, row, task_index(task), q8);
        case kQ5_0: return task_dot<kQ5_0>(w, row, task_index(task), q8);
        case kQ5_1: return task_dot<kQ5_1>(w, row, task_index(task), q8);
        case kQ8_0: return task_dot<kQ8_0>(w, row, task_index(task), q8);
        case kQ2_K: return task_dot<kQ2_K>(w, row, task_index(task), q8);
        case kQ3_K: return task_dot<kQ3_K>(w, row, task_index(task), q8);
        case kQ4_K: return task_dot<kQ4_K>(w, row, task_index(task), q8);
        case kQ5_K: return task_dot<kQ5_K>(w, row, task_index(task), q8);
        case kQ6_K: return task_dot<kQ6_K>(w, row, task_index(task), q8);
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
    std::vector<Words2> segments;
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
    for (int s = 0; s < n_pad / 16; ++s) a.segments.push_back(q8_segment_words_of(a.d[s / 2], &a.q[16 * s]));
    a.view.q8 = {reinterpret_cast<const uint8_t*>(a.q.data()), a.segments.data()};
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
        int mismatches = 0, negative_quants = 0;
        const bool unsigned_quants = packed.view.type != kQ8_0;
        for (int row = 0; row < v.n_rows; ++row) {
            std::fill(seen.begin(), seen.end(), 0);
            for (int t = 0; t < n_tasks; ++t) {
                const Task task = dequantize_any(packed.view, row, t);
                for (const Segment& s : task.seg)
                    for (int i = 0; i < 16; ++i) {
                        // The float dot reads these types' quants as unsigned bytes below 128
                        // (dp4a as signed ones: the same values), less the type's zero.
                        REQUIRE(s.zero == quant_zero(packed.view.type));
                        if (unsigned_quants && ((s.q[i / 4] >> (8 * (i % 4))) & 0x80u)) ++negative_quants;
                        const int col = s.pos() + i;
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
        CHECK(negative_quants == 0);
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
        for (int part = 0; part < 4; ++part) units.push_back(s.pos() / 4 + part);
    return units;
}

TEST_CASE("a thread's tasks keep their place in a group of 256 weights: what depends on it is computed once") {
    // The GEMV loops walk TaskIndex::group with `sub` fixed (task_walk): every task it
    // visits is one the plain loop over t = first, first + stride, ... visits, in order.
    for (int n_tasks : {0, 1, 3, 8, 9, 40, 96, 131})
        for (int stride : {8, 32, 64, 256})
            for (int first = 0; first < stride; first += 3) {
                std::vector<int> plain, walked;
                for (int t = first; t < n_tasks; t += stride) plain.push_back(t);
                const TaskWalk walk = task_walk(first, stride, n_tasks);
                for (TaskIndex k = walk.first; k.group < walk.end; k.group += walk.groups) walked.push_back(8 * k.group + k.sub);
                CAPTURE(n_tasks);
                CAPTURE(stride);
                CAPTURE(first);
                REQUIRE(walked == plain);
            }
    // Every segment lies in its task's group, at an offset of whole segments.
    for (const std::string name : kTypes) {
        CAPTURE(name);
        const Packed packed = pack(load_weights(name));
        if (plain_value_bytes(packed.view.type)) continue;
        for (int t = 0; t < tasks_per_row(packed.view); ++t)
            for (const Segment& s : dequantize_any(packed.view, 0, t).seg) {
                REQUIRE(s.group == t / 8);
                REQUIRE(s.offset % 16 == 0);
                REQUIRE(s.offset >= 0);
                REQUIRE(s.offset < 256);
            }
    }
    // The stages' swizzles move a unit only inside its group, so a reader may swizzle the
    // offset alone (StagedFloatX, StagedQ8X).
    for (int group = 0; group < 64; ++group) {
        for (int v = 0; v < 64; ++v) REQUIRE(staged_unit(64 * group + v) == 64 * group + staged_unit(v));
        for (int v = 0; v < 16; ++v) REQUIRE(staged_q8_unit(16 * group + v) == 16 * group + staged_q8_unit(v));
    }
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
        CHECK(stage.segments_offset == 3 * n_units * 16);
        CHECK(stage.bytes == stage.segments_offset + 3 * (n_pad / 16) * 8);
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
                    const int unit = dequantize_any(packed.view, 0, t0 + lane).seg[s].pos() / 16;
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
