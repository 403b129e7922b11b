// The cuda_orin kernels run on the CPU emulation of the CUDA execution model
// (emu/cuda_emulation.hpp) at small shapes, through the same checks the GPU driver runs.
// This executes the kernels' own code (indexing, shuffles, barriers, softmax merging);
// it is not a substitute for the GPU run (see the emulation header for what it misses).
#include "emu/cuda_emulation.hpp"

// The kernel sources themselves, compiled as C++ (their launchers need nvcc and drop out).
#include "attention.cu"
#include "attention_mma.cu"
#include "attention_tiles.cu"
#include "gemv.cu"
#include "prepare.cu"
#include "rope_append.cu"
#include "small_kernels.cu"

#include "emu/emulated_launches.hpp"

#include "guarded_bytes.hpp"
#include "kernel_checks_decode.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace edgerun::cuda_orin;
using namespace edgerun::cuda_orin::testing;

namespace {

class EmulatedDevice final : public DeviceApi {
public:
    // A small SM count makes the planner choose split-K for the smaller shapes too.
    static constexpr int kSms = 4;

    void* alloc(size_t bytes) override {
        void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
        std::memset(p, 0, (bytes + 255) / 256 * 256);
        blocks_.emplace_back(p, &std::free);
        return p;
    }
    void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
    void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
    void prepare(const PrepareParams& p) override {
        emulated::prepare(p);
    }
    void gemv(const GemvLaunch& launch) override {
        GemvLaunch l = launch;
        const int blocks = plan_gemv(l, kSms);
        REQUIRE(blocks > 0);
        last_warps_per_row = l.warps_per_row;
        emulated::gemv(l, blocks);
    }
    void rope_append(const RopeAppendParams& p) override {
        REQUIRE(valid_rope_append(p));
        emulated::rope_append(p);
    }
    void attention(const AttentionParams& p) override {
        const AttentionGrid g = plan_attention(p);
        REQUIRE(g.splits > 0);
        emulated::attention(p, g);
    }
    void widen_kv(const WidenKvParams& p) override {
        REQUIRE(valid(p));  // launch_widen_kv's check
        emulated::widen_kv(p);
    }
    void embed(const EmbedParams& p) override {
        REQUIRE(valid(p));  // launch_embed's check
        emulated::embed(p);
    }
    void advance(StepCounters* c) override {
        emu::launch(dim3(1), dim3(1), [&] { advance_step_kernel(c); });
    }
    void reset() override { blocks_.clear(); }

    int last_warps_per_row = 0;

private:
    std::vector<std::unique_ptr<void, decltype(&std::free)>> blocks_;
};

Report doctest_report() {
    return [](const CheckResult& r) {
        INFO(r.name << ": error " << r.error << " bound " << r.bound);
        MESSAGE(r.name << ": " << r.error << " (bound " << r.bound << ")");
        CHECK(r.pass());
    };
}

const int32_t kAllTypes[] = {kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kF32, kF16, kBF16};

}  // namespace

TEST_CASE("emulated: GEMV of every weight type, F32 and F16 in and out") {
    EmulatedDevice dev;
    uint32_t seed = 1;
    for (int32_t type : kAllTypes) {
        const int n_cols = plane_geometry(type).block_elems == 256 ? 512 : 96;
        check_gemv(dev, doctest_report(), type, 19, n_cols, false, false, false, seed++);
        check_gemv(dev, doctest_report(), type, 9, n_cols, true, true, true, seed++);
    }
    check_gemv(dev, doctest_report(), kF16, 5, 100, false, false, false, seed++);  // padded F16 rows
}

TEST_CASE("emulated: GEMV split across warps (few rows, long rows)") {
    EmulatedDevice dev;
    check_gemv(dev, doctest_report(), kQ4_K, 12, 4096, false, false, true, 40);
    CHECK(dev.last_warps_per_row == 4);
    check_gemv(dev, doctest_report(), kQ6_K, 16, 2048, false, false, false, 41);
    CHECK(dev.last_warps_per_row == 2);
}

// Rows long enough for several tasks a lane (80 or 79 tasks over a warp's 32 lanes:
// some lanes take three, some two), so that loading two or four tasks ahead
// (tasks_in_flight, which every check_gemv compares with one) has whole batches and
// partial last ones.
TEST_CASE("emulated: GEMV of rows of several tasks a lane, every weight type") {
    EmulatedDevice dev;
    uint32_t seed = 60;
    for (int32_t type : kAllTypes) {
        const int n_cols = plane_geometry(type).block_elems == 256 ? 2560 : 2528;
        check_gemv(dev, doctest_report(), type, 4 * 32 + 3, n_cols, false, false, true, seed++);
        CHECK(dev.last_warps_per_row == 1);
    }
    check_gemv_fused(dev, doctest_report(), {kQ4_K, kQ6_K}, {96, 40}, 2560, seed++);
    check_swiglu(dev, doctest_report(), kQ4_K, kQ6_K, 131, 2560, seed++);
}

TEST_CASE("emulated: fused Q/K/V of mixed types with RMSNorm folded in, and SwiGLU") {
    EmulatedDevice dev;
    check_gemv_fused(dev, doctest_report(), {kQ4_K, kQ4_K, kQ6_K}, {64, 16, 16}, 256, 50);
    check_gemv_fused(dev, doctest_report(), {kQ5_0, kQ8_0, kQ4_1, kF16}, {24, 8, 8, 3}, 64, 51);
    check_swiglu(dev, doctest_report(), kQ4_K, kQ4_K, 40, 256, 52);
    check_swiglu(dev, doctest_report(), kQ8_0, kQ5_0, 17, 96, 53);
}

// Groups of 32 rows over 4 to 32 blocks (8, 2 or 1 rows a block: one warp a row, four,
// eight), whole or not (70 and 131 rows: the bytes only, no weight type takes such an x);
// the types of Q4_K_M's layers, and two of 32-value blocks.
TEST_CASE("emulated: GEMV making the next GEMV's 8-bit x (prepare=gemv)") {
    EmulatedDevice dev;
    uint32_t seed = 70;
    for (int warps_per_row : {1, 4, 8}) {
        check_gemv_q8_out(dev, doctest_report(), kQ4_K, kQ4_K, 256, 256, 40, false, warps_per_row, seed++);
        check_gemv_q8_out(dev, doctest_report(), kQ6_K, kQ6_K, 512, 256, 24, true, warps_per_row, seed++);
        check_gemv_q8_out(dev, doctest_report(), kQ4_K, kQ4_K, 70, 256, 8, false, warps_per_row, seed++);
        check_gemv_q8_out(dev, doctest_report(), kQ6_K, kQ4_K, 131, 512, 8, true, warps_per_row, seed++);
    }
    check_gemv_q8_out(dev, doctest_report(), kQ4_K, kQ6_K, 256, 2560, 64, false, 0, seed++);
    check_gemv_q8_out(dev, doctest_report(), kQ8_0, kQ5_0, 96, 96, 17, true, 0, seed++);
    // Rows in pairs (16 rows a block at one warp a row): groups of 32 over two blocks, and
    // a pair whose second row is past the matrix (131 rows).
    for (int warps_per_row : {1, 4}) {
        check_gemv_q8_out(dev, doctest_report(), kQ4_K, kQ4_K, 256, 256, 40, false, warps_per_row, seed++, true);
        check_gemv_q8_out(dev, doctest_report(), kQ6_K, kQ4_K, 131, 512, 8, true, warps_per_row, seed++, true);
        check_gemv_q8_out(dev, doctest_report(), kQ6_K, kQ4_K, 131, 512, 8, false, warps_per_row, seed++, true);
    }
}

TEST_CASE("emulated: GEMV of several rows of x, every weight type, equal to the one-row kernel") {
    EmulatedDevice dev;
    uint32_t seed = 70;
    for (int32_t type : kAllTypes) {
        const int n_cols = plane_geometry(type).block_elems == 256 ? 512 : 96;
        check_gemv_rows(dev, doctest_report(), {type}, {19}, n_cols, 3, false, false, seed++);
        check_gemv_rows(dev, doctest_report(), {type}, {9}, n_cols, 5, true, true, seed++);
    }
}

TEST_CASE("emulated: GEMV of 2-16 rows of x, mixed-type outputs, in launches of up to kGemvMaxRows rows") {
    static_assert(16 % kGemvMaxRows == 0 && kGemvMaxRows < 16, "the counts below cross the bound");
    EmulatedDevice dev;
    // Q/K/V of Q4_K_M (Q4_K, Q4_K, Q6_K) with biases and residuals; 2..16 rows, which
    // includes counts that are not a multiple of the bound (9..15: a full launch and a tail).
    for (int n_x = 2; n_x <= 16; ++n_x) {
        CAPTURE(n_x);
        check_gemv_rows(dev, doctest_report(), {kQ4_K, kQ4_K, kQ6_K}, {24, 8, 8}, 256, n_x, false, n_x % 2 == 0,
                        uint32_t(80 + n_x));
    }
    check_gemv_rows(dev, doctest_report(), {kQ5_0, kF16}, {17, 3}, 64, 11, true, true, 97);
    // Split across warps: the slices' sums meet in shared memory, per row of x.
    check_gemv_rows(dev, doctest_report(), {kQ4_K}, {12}, 4096, 10, false, true, 98);
    CHECK(dev.last_warps_per_row == 4);
}

TEST_CASE("emulated: GEMV of float activations, staged in shared memory and in place, every weight type") {
    EmulatedDevice dev;
    uint32_t seed = 200;
    for (int32_t type : kAllTypes) {
        const int n_cols = plane_geometry(type).block_elems == 256 ? 512 : 96;
        check_gemv_float_x(dev, doctest_report(), type, 19, n_cols, 1, true, seed++);
        check_gemv_float_x(dev, doctest_report(), type, 9, n_cols, 3, true, seed++);
    }
    // Split across warps, and rows too wide to stage (one row of 12544 values: 50176 bytes;
    // eight rows of 2048: 64 KiB).
    check_gemv_float_x(dev, doctest_report(), kQ4_K, 12, 4096, 1, true, seed++);
    check_gemv_float_x(dev, doctest_report(), kQ6_K, 3, 12544, 1, false, seed++);
    check_gemv_float_x(dev, doctest_report(), kQ4_K, 5, 2048, 8, false, seed++);
    check_gemv_float_x(dev, doctest_report(), kF16, 5, 100, 2, true, seed++);  // padded rows
    for (int32_t type : {kQ4_K, kQ6_K, kQ8_0, kF16, kF32})
        check_gemv_norm(dev, doctest_report(), type, 21, type == kQ4_K || type == kQ6_K ? 1024 : 320, seed++);
}

TEST_CASE("emulated: GEMV of x quantized as the block stages it, every quantized type") {
    EmulatedDevice dev;
    uint32_t seed = 260;
    for (int32_t type : kAllTypes) {
        if (plain_value_bytes(type)) continue;
        const int n_cols = plane_geometry(type).block_elems == 256 ? 512 : 96;
        check_gemv_quantize_x(dev, doctest_report(), {type}, {19}, n_cols, 1, false, seed++);
        check_gemv_quantize_x(dev, doctest_report(), {type}, {9}, n_cols, 3, false, seed++);
        check_gemv_quantize_x(dev, doctest_report(), {type}, {9}, n_cols, 1, true, seed++);
    }
    // Q/K/V of mixed types over eight rows; rows split across warps; a row of 31872 values
    // (a stage of 47936 bytes, near its 48128) and rows of several 16-unit groups plus a part.
    check_gemv_quantize_x(dev, doctest_report(), {kQ4_K, kQ4_K, kQ6_K}, {24, 8, 8}, 256, 8, false, seed++);
    check_gemv_quantize_x(dev, doctest_report(), {kQ4_K}, {12}, 4096, 1, true, seed++);
    check_gemv_quantize_x(dev, doctest_report(), {kQ8_0}, {2}, 31872, 1, false, seed++);
    check_gemv_quantize_x(dev, doctest_report(), {kQ5_1}, {5}, 288, 2, false, seed++);
    check_swiglu(dev, doctest_report(), kQ4_K, kQ6_K, 40, 256, seed++, true);
}

TEST_CASE("emulated: activation prepare (residual, RMSNorm, q8)") {
    EmulatedDevice dev;
    check_prepare(dev, doctest_report(), 100, false, PrepareResidual::kInPlace, 60);
    check_prepare(dev, doctest_report(), 1536, true, PrepareResidual::kInPlace, 61);
    // A residual add over more values than one batch of loads a thread (4096 in the one
    // block) and more groups than one batch a warp (16), the last of each partial; and
    // one batch, its last group partial.
    check_prepare(dev, doctest_report(), 4100, false, PrepareResidual::kInPlace, 65);
    check_prepare(dev, doctest_report(), 2570, true, PrepareResidual::kInPlace, 66);
    // Without a residual add: one block (100 values), 6 (1536), 38 with a partial last
    // block's groups and a padded last group (9720: Qwen3-4B's FFN width less 8).
    check_prepare(dev, doctest_report(), 100, false, PrepareResidual::kNone, 62);
    check_prepare(dev, doctest_report(), 1536, true, PrepareResidual::kNone, 63);
    check_prepare(dev, doctest_report(), 9720, false, PrepareResidual::kNone, 64);
}

TEST_CASE("emulated: RoPE and KV append, both modes, both caches") {
    EmulatedDevice dev;
    uint32_t seed = 70;
    for (int32_t kv : {kKvF16, kKvQ8})
        for (int mode : {kRopeNormal, kRopeNeox}) {
            check_rope_append(dev, doctest_report(), {4, 2, 64, 64, mode, false, false, kv, 5, 9}, seed++);
            check_rope_append(dev, doctest_report(), {2, 1, 128, 64, mode, true, true, kv, 130, 131}, seed++);
            check_rope_append(dev, doctest_report(), {2, 1, 64, 0, mode, false, true, kv, 7, 9}, seed++);  // no rotation
        }
}

TEST_CASE("emulated: rope_append in the Q/K/V GEMV's last blocks, bit for bit") {
    EmulatedDevice dev;
    uint32_t seed = 75;
    // Heads of 64 rows: 8 rows a block (the plan's or asked), 24 (three rows a warp: heads
    // end inside blocks), one (eight warps a row); heads of 128 with partial rotation.
    const RopeCase qwen_like{4, 2, 64, 64, kRopeNeox, false, true, kKvF16, 5, 9};
    const RopeCase llama_like{3, 1, 128, 64, kRopeNormal, true, false, kKvQ8, 130, 132};
    check_rope_append_in_gemv(dev, doctest_report(), {qwen_like, 256, kQ4_K, kQ6_K, "the plan's shape"}, [](GemvLaunch&) {}, seed++);
    check_rope_append_in_gemv(dev, doctest_report(), {qwen_like, 256, kQ4_K, kQ6_K, "one warp a row"},
                              [](GemvLaunch& g) { g.asked_warps_per_row = 1; }, seed++);
    check_rope_append_in_gemv(dev, doctest_report(), {qwen_like, 256, kQ4_K, kQ6_K, "three rows a warp, x quantized as staged"},
                              [](GemvLaunch& g) { g.asked_warps_per_row = 1, g.rows_per_warp = 3, g.quantize_x = 1; },
                              seed++);
    check_rope_append_in_gemv(dev, doctest_report(), {qwen_like, 256, kQ4_K, kQ6_K, "eight warps a row"},
                              [](GemvLaunch& g) { g.asked_warps_per_row = 8; }, seed++);
    check_rope_append_in_gemv(dev, doctest_report(), {qwen_like, 256, kQ4_K, kQ6_K, "rows in pairs"},
                              [](GemvLaunch& g) { g.row_pairs = 1; }, seed++);
    check_rope_append_in_gemv(dev, doctest_report(), {llama_like, 96, kQ8_0, kQ5_0, "rows in pairs, two warps a row"},
                              [](GemvLaunch& g) { g.row_pairs = 1, g.asked_warps_per_row = 2; }, seed++);
    for (int32_t kv : {kKvF16, kKvQ8}) {
        RopeCase rc = llama_like;
        rc.kv_type = kv;
        check_rope_append_in_gemv(dev, doctest_report(), {rc, 96, kQ8_0, kQ5_0, "two tasks in flight"},
                                  [](GemvLaunch& g) { g.tasks_in_flight = 2; }, seed++);
    }
}

TEST_CASE("emulated: split flash-decode attention against a double softmax") {
    EmulatedDevice dev;
    uint32_t seed = 80;
    for (int32_t kv : {kKvF16, kKvQ8}) {
        check_attention(dev, doctest_report(), 4, 2, 64, 1, 64, kv, 3, seed++);     // one key; empty splits
        check_attention(dev, doctest_report(), 4, 1, 64, 77, 96, kv, 3, seed++);    // ragged tail
        check_attention(dev, doctest_report(), 6, 2, 128, 200, 256, kv, 2, seed++); // GQA 3
        check_attention(dev, doctest_report(), 10, 1, 64, 40, 64, kv, 1, seed++);   // 10 heads: 3 chunks
        // More splits than the merge loads at once (8): 11 full ones (the last ragged),
        // and 10 of 20 holding keys.
        check_attention(dev, doctest_report(), 4, 2, 64, 700, 768, kv, 11, seed++);
        check_attention(dev, doctest_report(), 4, 2, 64, 300, 768, kv, 20, seed++);
    }
    check_attention_q8_vs_f16(dev, doctest_report(), 4, 2, 64, 150, 2, seed++);
    // Steps of several rows: a prompt's rows under their causal lengths in sequence 1, and
    // rows of sequence 0 (a batch), some splits empty for the short rows.
    for (int32_t kv : {kKvF16, kKvQ8}) {
        check_attention_rows(dev, doctest_report(), 4, 2, 64, 96, kv, {1, 1, 1, 0, 0}, {5, 6, 7, 96, 1}, 2, seed++);
        check_attention_rows(dev, doctest_report(), 6, 2, 128, 64, kv, {0, 1, 0}, {64, 33, 2}, 1, seed++);
        // A row of no keys (every split empty): zeros, whichever way the splits are merged.
        check_attention_rows(dev, doctest_report(), 4, 2, 64, 96, kv, {0, 1}, {0, 40}, 3, seed++);
    }
}

TEST_CASE("emulated: split flash-decode attention on tensor cores (mma) against a double softmax") {
    EmulatedDevice dev;
    uint32_t seed = 700;
    const auto mma = AttentionKernel::mma;
    for (int32_t kv : {kKvF16, kKvQ8}) {
        check_attention(dev, doctest_report(), 4, 2, 64, 1, 64, kv, 3, seed++, mma);       // one key; empty splits
        check_attention(dev, doctest_report(), 4, 1, 64, 77, 96, kv, 3, seed++, mma);      // group 4, ragged tail
        check_attention(dev, doctest_report(), 8, 2, 128, 200, 256, kv, 2, seed++, mma);   // group 4, dim 128
        check_attention(dev, doctest_report(), 6, 2, 128, 130, 256, kv, 1, seed++, mma);   // group 3, one split
        check_attention(dev, doctest_report(), 10, 1, 64, 40, 64, kv, 1, seed++, mma);     // 10 heads: 3 chunks
        check_attention(dev, doctest_report(), 3, 3, 128, 300, 320, kv, 2, seed++, mma);   // no GQA
        check_attention(dev, doctest_report(), 8, 2, 128, 700, 768, kv, 11, seed++, mma);  // splits past a merge batch
        check_attention(dev, doctest_report(), 4, 2, 64, 1000, 1024, kv, 2, seed++, mma);  // several tiles a warp
        // A prompt's rows under their causal lengths in sequence 1 and rows of sequence 0.
        check_attention_rows(dev, doctest_report(), 4, 2, 64, 96, kv, {1, 1, 1, 0, 0}, {5, 6, 7, 96, 1}, 2, seed++, mma);
        check_attention_rows(dev, doctest_report(), 6, 2, 128, 64, kv, {0, 1, 0}, {64, 33, 2}, 1, seed++, mma);
        check_attention_rows(dev, doctest_report(), 4, 2, 64, 96, kv, {0, 1}, {0, 40}, 3, seed++, mma);  // no keys
    }
}

// A prompt chunk of `n` rows of sequence `seq` at positions first..first+n-1 (causal
// lengths), after `others` decode rows of the other sequence at its length other_len.
static void prompt_rows(int n, int seq, int first, int others, int other_len, std::vector<int32_t>& seqs,
                        std::vector<int32_t>& lengths) {
    for (int r = 0; r < others; ++r) {
        seqs.push_back(1 - seq);
        lengths.push_back(other_len + r);
    }
    for (int r = 0; r < n; ++r) {
        seqs.push_back(seq);
        lengths.push_back(first + r + 1);
    }
}

TEST_CASE("emulated: tiled attention (mma) against a double softmax") {
    EmulatedDevice dev;
    uint32_t seed = 900;
    struct Case {
        int n_head, n_head_kv, dim, n_ctx, rows, first, others, splits;
    };
    const Case cases[] = {
        {8, 2, 64, 96, 40, 0, 0, 1},     // group 4: 16 rows a tile, a ragged last tile, causal from 0
        {8, 2, 64, 96, 20, 50, 3, 3},    // behind three decode rows of the other sequence; splits
        {6, 2, 128, 80, 30, 17, 2, 2},   // group 3: 21 rows a tile, vectors of a row across warps
        {2, 2, 64, 100, 70, 5, 1, 1},    // no GQA: 64 rows a tile
        {14, 2, 128, 48, 12, 20, 0, 4},  // group 7 (Qwen2.5): 9 rows a tile; splits past short rows
        {8, 2, 64, 640, 10, 600, 2, 10}, // more splits than the merge loads at once
    };
    for (int32_t kv : {kKvF16, kKvQ8})
        for (const Case& c : cases) {
            std::vector<int32_t> seqs, lengths;
            prompt_rows(c.rows, 1, c.first, c.others, c.n_ctx - c.others, seqs, lengths);
            check_attention_rows(dev, doctest_report(), c.n_head, c.n_head_kv, c.dim, c.n_ctx, kv, seqs, lengths,
                                 c.splits, seed++, AttentionKernel::tiled);
        }
    // Rows of the two sequences interleaved (a batch of decode rows and one of a prompt
    // each): tiles gather each sequence's rows.
    for (int32_t kv : {kKvF16, kKvQ8})
        check_attention_rows(dev, doctest_report(), 8, 2, 64, 64, kv, {0, 1, 0, 1, 1, 0}, {7, 30, 8, 31, 32, 9}, 2,
                             seed++, AttentionKernel::tiled);
    // Rows of one sequence out of order, the longest neither first nor last (the INT8
    // cache's widening covers the longest row's keys, wherever that row is).
    for (int32_t kv : {kKvF16, kKvQ8})
        check_attention_rows(dev, doctest_report(), 8, 2, 128, 320, kv, {1, 1, 1, 1, 1, 1}, {30, 9, 301, 8, 12, 7}, 1,
                             seed++, AttentionKernel::tiled);
}

TEST_CASE("emulated: embedding rows of every weight type from the packed layout, bit for bit") {
    EmulatedDevice dev;
    uint32_t seed = 90;
    for (int32_t type : kAllTypes) {
        CAPTURE(weight_type_name(type));
        const int n_cols = plane_geometry(type).block_elems == 256 ? 512 : plain_value_bytes(type) ? 100 : 96;
        // Token ids in device memory, repeated and out of range on both sides (zeros).
        check_embed(dev, doctest_report(), EmbedForm::packed, type, 6, n_cols, {5, 0, -1, 3, 6, 3, 1 << 30}, seed++);
    }
}

TEST_CASE("emulated: embedding rows from the GGUF table (types the GEMV layout cannot hold)") {
    EmulatedDevice dev;
    check_embed(dev, doctest_report(), EmbedForm::table, kQ8_1, 5, 96, {4, 0, 5, -2}, 104);
    check_embed(dev, doctest_report(), EmbedForm::table, kQ8_K, 3, 512, {2, 1, 3}, 105);
    // The kernel reads any type blocks.hpp dequantizes, the GEMV types too.
    check_embed(dev, doctest_report(), EmbedForm::table, kQ6_K, 5, 512, {3, 0}, 100);
    check_embed(dev, doctest_report(), EmbedForm::table, kQ4_0, 4, 96, {0}, 101);
    check_embed(dev, doctest_report(), EmbedForm::table, kF16, 3, 40, {2, -1, 1}, 102);
    check_embed(dev, doctest_report(), EmbedForm::table, kQ8_0, 3, 64, {7}, 103);  // out of range: zeros
}

TEST_CASE("emulated: an embedding launch the kernels cannot run is refused") {
    EmbedParams p;
    p.type = kQ4_K;
    p.n_rows = 4;
    p.n_cols = 256;
    const int32_t token = 0;
    float out[256];
    p.token = &token;
    p.out = out;
    CHECK_FALSE(valid(p));  // neither form
    alignas(256) static uint8_t planes[4096];
    const PackedLayout layout = packed_layout(kQ4_K, 4, 256);
    REQUIRE(layout.total_bytes <= sizeof planes);
    p.packed = packed_view(layout, kQ4_K, 4, 256, planes);
    CHECK(valid(p));
    p.type = kQ6_K;  // the view's type is another
    CHECK_FALSE(valid(p));
    p.type = kQ4_K;
    p.n_tokens = 0;
    CHECK_FALSE(valid(p));
    p.n_tokens = 65536;  // past the grid's y limit
    CHECK_FALSE(valid(p));
}

TEST_CASE("emulated: the step counters advance on the device") {
    StepCounters c{41, 42, 7};
    emu::launch(dim3(1), dim3(1), [&] { advance_step_kernel(&c); });
    CHECK(c.pos == 42);
    CHECK(c.kv_len == 43);
    CHECK(c.token == 7);
}

TEST_CASE("emulated: a whole decode step, several steps, against a double-precision decode") {
    EmulatedDevice dev;
    for (int32_t kv : {kKvF16, kKvQ8})
        check_decode_chain(dev, doctest_report(), {256, 4, 2, 64, 512, 64, 6}, kv, 100 + kv);
    check_decode_chain(dev, doctest_report(), {96, 3, 1, 32 * 2, 160, 20, 4}, kKvQ8, 110);  // Q5_0/Q8_0 widths
}

// ------------------------------------------------- programmatic dependent launch --

TEST_CASE("emulated: every kernel of a decode step waits for the prior grids (pdl=1)") {
    emu::RequirePriorGridWaits require(true);
    EmulatedDevice dev;
    for (int32_t kv : {kKvF16, kKvQ8})
        check_decode_chain(dev, doctest_report(), {256, 4, 2, 64, 512, 64, 3}, kv, 120 + kv);
    check_swiglu(dev, doctest_report(), kQ4_K, kQ4_K, 40, 256, 130);
    check_gemv_rows(dev, doctest_report(), {kQ4_K, kQ6_K}, {24, 8}, 256, 3, false, true, 131);
    StepCounters c{1, 2, 3};
    CHECK_NOTHROW(dev.advance(&c));
}

// ------------------------------------------------------------ L2 prefetch --

namespace {

// A matrix of zeros whose every plane lies in its own guarded buffer, exactly its bytes.
struct GuardedMatrix {
    PackedMatrix view;
    std::vector<std::unique_ptr<GuardedBytes>> planes;
};
GuardedMatrix guarded_matrix(int32_t type, int n_rows, int n_cols, bool at_end) {
    const PackedLayout layout = packed_layout(type, n_rows, n_cols);
    REQUIRE(layout.total_bytes > 0);
    GuardedMatrix m;
    m.view = packed_view(layout, type, n_rows, n_cols, nullptr);
    for (int p = 0; p < layout.geometry.n_planes; ++p) {
        const size_t bytes = size_t(n_rows) * layout.blocks_per_row * layout.geometry.plane_bytes[p];
        m.planes.push_back(std::make_unique<GuardedBytes>(bytes, at_end));
        m.view.plane[p] = m.planes.back()->data();
    }
    return m;
}

// One GEMV launch (prefetch on) over guarded matrices; the outputs are thrown away.
void guarded_gemv(const std::vector<int32_t>& types, const std::vector<int>& rows, int n_cols, int n_x, bool swiglu,
                  bool at_end) {
    std::vector<GuardedMatrix> matrices;
    const int n_pad = padded_length(n_cols);
    std::vector<float> x(size_t(n_x) * n_pad, 0.5f);
    std::vector<std::vector<float>> y;
    GemvLaunch l;
    l.x.q8 = {nullptr, nullptr};
    l.x.f = x.data();
    l.x.n = n_cols;
    l.x.n_pad = n_pad;
    l.n_x_rows = n_x;
    l.n_outputs = int32_t(types.size());
    l.epilogue = swiglu ? kEpilogueSwiGLU : kEpilogueStore;
    l.prefetch = 1;
    for (size_t i = 0; i < types.size(); ++i) {
        matrices.push_back(guarded_matrix(types[i], rows[i], n_cols, at_end));
        y.emplace_back(size_t(rows[i]) * n_x);
        l.out[i].w = matrices.back().view;
        l.out[i].y = y.back().data();
        l.out[i].y_row_stride = rows[i];
    }
    const int blocks = plan_gemv(l, EmulatedDevice::kSms);
    if (blocks == 0) std::_Exit(3);
    emulated::gemv(l, blocks);
}

// One launch of the split attention on tensor cores with next tiles prefetched, over a
// cache whose every plane lies in its own guarded buffer and whose every row is read
// (kv_len = n_ctx): a prefetch past the rows, or before them, faults. Output thrown away.
void guarded_attention(int32_t type, int dim, int n_head_kv, int n_ctx, int n_splits, bool at_end) {
    KvCacheLayer c;
    c.type = type;
    c.n_ctx = n_ctx;
    c.n_head_kv = n_head_kv;
    c.head_dim = dim;
    std::vector<std::unique_ptr<GuardedBytes>> planes;
    const auto guarded = [&](uint64_t bytes) {
        planes.push_back(std::make_unique<GuardedBytes>(bytes, at_end));
        return const_cast<uint8_t*>(planes.back()->data());
    };
    c.k = guarded(kv_values_bytes(c));
    c.v = guarded(kv_values_bytes(c));
    if (type == kKvQ8) {
        c.k_scales = reinterpret_cast<uint16_t*>(guarded(kv_scales_bytes(c)));
        c.v_scales = reinterpret_cast<uint16_t*>(guarded(kv_scales_bytes(c)));
    }
    const int n_head = 4 * n_head_kv;
    EmulatedDevice dev;
    AttentionParams p;
    run_attention(dev, c, std::vector<float>(size_t(n_head) * dim, 0.5f), n_head, n_ctx, n_splits, AttentionKernel::mma, &p);
    p.prefetch_next_tile = 1;
    dev.attention(p);
}

}  // namespace

TEST_CASE("emulated: the split attention's prefetch of next tiles stays inside the rows it reads") {
    for (bool at_end : {true, false}) {
        CAPTURE(at_end);
        CHECK(runs_cleanly([&] {
            for (int32_t type : {kKvF16, kKvQ8})
                for (int dim : {64, 128}) {
                    guarded_attention(type, dim, 1, 300, 1, at_end);  // a warp's next tiles, the last one ragged
                    guarded_attention(type, dim, 2, 520, 3, at_end);  // KV head 1's rows end the planes
                }
        }, false));
    }
}

TEST_CASE("emulated: a GEMV's L2 prefetch stays inside the weights it reads, every plane of every output") {
    for (bool at_end : {true, false}) {
        CAPTURE(at_end);
        CHECK(runs_cleanly([&] {
            for (int32_t type : kAllTypes) {
                const int n_cols = plane_geometry(type).block_elems == 256 ? 512 : 96;
                guarded_gemv({type}, {19}, n_cols, 1, false, at_end);
                guarded_gemv({type}, {9}, n_cols, 3, false, at_end);  // the multi-row kernel
            }
            guarded_gemv({kQ4_K}, {12}, 4096, 1, false, at_end);  // split across warps
            guarded_gemv({kF16}, {5}, 100, 1, false, at_end);     // padded plain rows
            guarded_gemv({kQ4_K, kQ4_K, kQ6_K}, {24, 8, 8}, 256, 1, false, at_end);
            guarded_gemv({kQ4_K, kQ6_K}, {17, 17}, 256, 1, true, at_end);  // SwiGLU: gate and up
        }, false));
    }
    // The check itself: a prefetch one byte past a buffer, or starting one byte before
    // it, is a fault the test sees.
    GuardedBytes tail(300, true), head(300, false);
    CHECK(runs_cleanly([&] { prefetch_l2(tail.data(), 300, 0, 1); }, true));
    CHECK_FALSE(runs_cleanly([&] { prefetch_l2(tail.data() + 200, 101, 0, 1); }, true));
    CHECK(runs_cleanly([&] { prefetch_l2(head.data(), 300, 0, 1); }, true));
    CHECK_FALSE(runs_cleanly([&] { prefetch_l2(head.data() - 1, 2, 0, 1); }, true));
}
