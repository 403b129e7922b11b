// The bytes the launch profile counts per launch (plugins/cuda_orin/launch_profile.hpp),
// which its GB/s column and the Orin projection divide: checked against the formats'
// own sizes (GGUF block bytes, cache values), computed here independently.
#include <doctest/doctest.h>

#include "launch_profile.hpp"

#include <edgerun/dtype.hpp>

using namespace edgerun::cuda_orin;

namespace {

GemvOutput output(int32_t type, int32_t rows, int32_t cols) {
    GemvOutput o;
    o.w.type = type;
    o.w.n_rows = rows;
    o.w.n_cols = cols;
    return o;
}

Activation float_x(int32_t n) {
    Activation x{};
    x.n = n;
    x.n_pad = (n + 31) / 32 * 32;
    return x;
}

}  // namespace

TEST_CASE("a GEMV launch moves its weights once, x once and y") {
    const auto q4_k = int32_t(edgerun::DType::Q4_K), q8_0 = int32_t(edgerun::DType::Q8_0);
    GemvLaunch one{};
    one.x = float_x(512);
    one.n_x_rows = 1;
    one.n_outputs = 1;
    one.out[0] = output(q4_k, 256, 512);
    // Q4_K: 144 bytes per 256 weights; x floats; y floats.
    CHECK(gemv_kind(one).bytes == 256ull * 2 * 144 + 512 * 4 + 256 * 4);

    SUBCASE("8-bit activations: a byte per value and a word pair (scale, sum) per 16") {
        static uint8_t q[512];
        one.x.q8.q = q;
        CHECK(gemv_kind(one).bytes == 256ull * 2 * 144 + 512 + 512 / 16 * 8 + 256 * 4);
    }
    SUBCASE("gate and up with the SwiGLU epilogue: two weights, one y") {
        GemvLaunch swiglu = one;
        swiglu.n_outputs = 2;
        swiglu.epilogue = kEpilogueSwiGLU;
        swiglu.out[0] = output(q8_0, 1024, 512);
        swiglu.out[1] = output(q8_0, 1024, 512);
        // Q8_0: 34 bytes per 32 weights.
        CHECK(gemv_kind(swiglu).bytes == 2ull * 1024 * 16 * 34 + 512 * 4 + 1024 * 4);
        CHECK(gemv_kind(swiglu).out_rows == 2048);
    }
    SUBCASE("three rows of x, a residual read for each output value") {
        static float residual[3 * 256];
        GemvLaunch rows = one;
        rows.n_x_rows = 3;
        rows.out[0].residual = residual;
        CHECK(gemv_kind(rows).bytes == 256ull * 2 * 144 + 3 * 512 * 4 + 3 * 256 * (4 + 4));
    }
}

TEST_CASE("an attention launch moves the keys and values of the positions it reads, q and out") {
    AttentionParams p;
    p.cache.n_head_kv = 2;
    p.cache.head_dim = 64;
    p.n_head = 4;
    p.n_rows = 1;
    p.positions_read = 100;
    const uint64_t q_and_out = 2ull * 1 * 4 * 64 * 4;
    p.cache.type = kKvF16;
    CHECK(attention_kind(p).bytes == 2ull * 100 * 2 * 64 * 2 + q_and_out);
    // INT8: a byte per value and an fp16 scale per 32 values of one position and head.
    p.cache.type = kKvQ8;
    CHECK(attention_kind(p).bytes == 2ull * (100 * 2 * 64 + 100 * 2 * (64 / 32) * 2) + q_and_out);
    p.positions_read = 0;
    CHECK(attention_kind(p).bytes == q_and_out);
    LaunchKind more_bytes = attention_kind(p);  // bytes are not part of the key
    more_bytes.bytes += 1000;
    CHECK_FALSE(attention_kind(p) < more_bytes);
    CHECK_FALSE(more_bytes < attention_kind(p));
    CHECK(attention_kind(p).kernels() == 2);
    CHECK(attention_kind(p).label() == "attention (split + merge)");
    // On tensor cores: its own kind (and label) in the profile, the same bytes, a merge.
    p.mma = 1;
    CHECK(attention_kind(p).kernel == Kernel::attention_mma);
    CHECK(attention_kind(p).bytes == q_and_out);
    CHECK(attention_kind(p).kernels() == 2);
    CHECK(attention_kind(p).label() == "attention (split on mma + merge)");
    // Merged by the split kernel's last blocks: one kernel, a kind of its own.
    const LaunchKind with_merge_kernel = attention_kind(p);
    int32_t tickets[8] = {};
    p.merge_tickets = tickets;
    CHECK(attention_kind(p).kernels() == 1);
    CHECK(attention_kind(p).label() == "attention (split on mma)");
    CHECK((with_merge_kernel < attention_kind(p) || attention_kind(p) < with_merge_kernel));
}
