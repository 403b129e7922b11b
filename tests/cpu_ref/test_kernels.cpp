// cpu_ref's row kernels and KV cache, tested directly (below the ABI).
#include "helpers.hpp"

#include "dequantize_generic.hpp"
#include "kernels.hpp"
#include "kv_cache.hpp"
#include "thread_pool.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include <edgerun/quant/blocks.hpp>

using namespace edgerun::cpu_ref;
using cpu_ref_test::Weights;

namespace {

const int32_t kAllTypes[] = {0, 1, 30, 2, 3, 6, 7, 8, 10, 11, 12, 13, 14};

std::vector<int64_t> widths_for(int32_t dtype) {
    const int block = edgerun::dtype_info(dtype)->block_elems;
    if (block == 1) return {1, 7, 31, 32, 33, 64, 100, 576};  // tails of every length
    if (block == 32) return {32, 96, 576};
    return {256, 768};
}

}  // namespace

TEST_CASE("lane_sum adds the 32 lanes in the documented tree order") {
    // Values whose sum depends on the order: 1e8 + 1 - 1e8 loses the 1 unless paired first.
    float lanes[32] = {};
    lanes[0] = 1e8f;
    lanes[8] = 1.0f;
    lanes[16] = -1e8f;
    lanes[24] = 1.0f;
    // Documented: (a[0] + a[8]) + (a[16] + a[24]) = 1e8 + (-1e8 + 1) = 1e8 - 1e8 (in F32) = 0.
    CHECK(lane_sum(lanes) == (1e8f + 1.0f) + (-1e8f + 1.0f));
    float seq[32];
    for (int i = 0; i < 32; ++i) seq[i] = float(i + 1) * 0.1f;
    float r8[8], r4[4];
    for (int j = 0; j < 8; ++j) r8[j] = (seq[j] + seq[j + 8]) + (seq[j + 16] + seq[j + 24]);
    for (int j = 0; j < 4; ++j) r4[j] = r8[j] + r8[j + 4];
    CHECK(lane_sum(seq) == (r4[0] + r4[2]) + (r4[1] + r4[3]));
}

TEST_CASE("dot, dequant and axpy: SIMD and portable kernels give the same bits, close to double math") {
    std::mt19937 rng(7);
    for (int32_t dtype : kAllTypes) {
        for (int64_t width : widths_for(dtype)) {
            CAPTURE(dtype);
            CAPTURE(width);
            Weights w;
            const int32_t id = w.add_random("w", dtype, width, 3, rng);
            const auto values = w.dequantized(id);
            const auto& desc = w.descs()[id];
            const uint64_t row_size = *edgerun::row_bytes(dtype, width);
            const auto x = cpu_ref_test::random_vector(width, rng);
            for (int64_t r = 0; r < 3; ++r) {
                const void* row = static_cast<const uint8_t*>(desc.data) + r * row_size;
                double want = 0, magnitude = 0;
                for (int64_t i = 0; i < width; ++i) {
                    want += double(values[r * width + i]) * x[i];
                    magnitude += std::fabs(double(values[r * width + i]) * x[i]);
                }
                const RowKernels* generic = row_kernels(dtype, Isa::Generic);
                const float got = generic->dot(row, x.data(), width);
                // F32 accumulation over 32 lanes: error well under width * 2^-24 * sum|w x|.
                CHECK(std::fabs(got - want) <= 1e-6 * magnitude * std::sqrt(double(width)) + 1e-30);

                std::vector<float> deq(width), axpy_out(width, 0.25f), want_axpy(width);
                generic->dequant(row, deq.data(), width);
                CHECK(std::memcmp(deq.data(), &values[r * width], width * sizeof(float)) == 0);
                generic->axpy(-0.75f, row, axpy_out.data(), width);
                for (int64_t i = 0; i < width; ++i) want_axpy[i] = std::fma(-0.75f, values[r * width + i], 0.25f);
                CHECK(cpu_ref_test::bit_equal(axpy_out, want_axpy));

                if (!isa_available(Isa::Avx2)) continue;
                const RowKernels* simd = row_kernels(dtype, Isa::Avx2);
                REQUIRE(simd != generic);
                const float simd_dot = simd->dot(row, x.data(), width);
                CHECK(std::memcmp(&simd_dot, &got, sizeof got) == 0);
                std::vector<float> simd_deq(width), simd_axpy(width, 0.25f);
                simd->dequant(row, simd_deq.data(), width);
                CHECK(cpu_ref_test::bit_equal(simd_deq, deq));
                simd->axpy(-0.75f, row, simd_axpy.data(), width);
                CHECK(cpu_ref_test::bit_equal(simd_axpy, axpy_out));
            }
        }
    }
}

TEST_CASE("dot_multi: every vector's result has the bits of dot() of that vector alone, on every kernel set") {
    std::mt19937 rng(11);
    for (int32_t dtype : kAllTypes) {
        for (int64_t width : widths_for(dtype)) {
            CAPTURE(dtype);
            CAPTURE(width);
            Weights w;
            const int32_t id = w.add_random("w", dtype, width, 2, rng);
            const uint64_t row_size = *edgerun::row_bytes(dtype, width);
            // kMaxDotRows vectors a row apart with a gap, so a stride mix-up shows.
            const int64_t stride = width + 3;
            const auto x = cpu_ref_test::random_vector(stride * kMaxDotRows, rng);
            for (Isa isa : {Isa::Generic, Isa::Avx2}) {
                if (!isa_available(isa)) continue;
                CAPTURE(isa_name(isa));
                const RowKernels* k = row_kernels(dtype, isa);
                for (int64_t r = 0; r < 2; ++r) {
                    const void* row = static_cast<const uint8_t*>(w.descs()[id].data) + r * row_size;
                    for (int32_t n_x : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, kMaxDotRows}) {
                        std::vector<float> got(size_t(n_x) * 2, -1.0f), want(size_t(n_x) * 2, -1.0f);
                        std::vector<float> scratch(size_t(width), 0.0f);
                        k->dot_multi(row, x.data(), stride, n_x, width, got.data(), 2, scratch.data());
                        for (int32_t i = 0; i < n_x; ++i) want[size_t(i) * 2] = k->dot(row, x.data() + i * stride, width);
                        CAPTURE(n_x);
                        CHECK(cpu_ref_test::bit_equal(got, want));  // odd slots untouched: still -1
                    }
                }
            }
        }
    }
}

TEST_CASE("the portable half conversion equals blocks.hpp for all 65536 halves") {
    int mismatches = 0, first = -1;
    for (uint32_t h = 0; h < 65536; ++h) {
        const float a = generic::half_to_float(uint16_t(h)), b = edgerun::quant::fp16_to_fp32(uint16_t(h));
        if (std::memcmp(&a, &b, 4) != 0 && mismatches++ == 0) first = int(h);
    }
    CAPTURE(first);
    CHECK(mismatches == 0);
}

TEST_CASE("types without kernels are refused") {
    CHECK(row_kernels(16) == nullptr);  // IQ2_XXS
    CHECK_FALSE(dtype_supported(16));
    CHECK_FALSE(dtype_supported(9));    // Q8_1 is an activation format, not a weight format
    CHECK(dtype_supported(14));
}

TEST_CASE("KV cache layout: [layer][sequence][position][head] rows, K and V apart, Q8 rows are Q8_0 blocks") {
    auto p = cpu_ref_test::context_params(8, 4, ER_KV_Q8, 3, 2, 64, 32);
    KvCache kv(p);
    CHECK(kv.row_dtype() == 8);
    CHECK(kv.n_seqs() == 1);
    CHECK(kv.k_row_bytes() == 2 * 34);
    CHECK(kv.v_row_bytes() == 34);
    CHECK(kv.bytes() == 3u * 8 * 2 * (68 + 34));
    // Row addresses step by head, then position, then layer.
    CHECK(kv.k_row(0, 0, 0, 1) - kv.k_row(0, 0, 0, 0) == 68);
    CHECK(kv.k_row(0, 0, 1, 0) - kv.k_row(0, 0, 0, 0) == 2 * 68);
    CHECK(kv.k_row(1, 0, 0, 0) - kv.k_row(0, 0, 0, 0) == 8 * 2 * 68);
    CHECK(kv.v_row(2, 0, 7, 1) - kv.v_row(0, 0, 0, 0) == ((2 * 8 + 7) * 2 + 1) * 34);
    // Several sequences: each layer holds every sequence's n_ctx positions in turn.
    auto p3 = p;
    p3.n_seqs = 3;
    KvCache kv3(p3);
    CHECK(kv3.n_seqs() == 3);
    CHECK(kv3.bytes() == 3u * kv.bytes());
    CHECK(kv3.k_row(0, 1, 0, 0) - kv3.k_row(0, 0, 0, 0) == 8 * 2 * 68);
    CHECK(kv3.k_row(1, 0, 0, 0) - kv3.k_row(0, 0, 0, 0) == 3 * 8 * 2 * 68);
    CHECK(kv3.v_row(2, 1, 7, 1) - kv3.v_row(0, 0, 0, 0) == (((2 * 3 + 1) * 8 + 7) * 2 + 1) * 34);
    // Never-written rows read as zeros.
    float zeros[64];
    kv.kernels().dequant(kv.k_row(2, 0, 7, 1), zeros, 64);
    for (float z : zeros) CHECK(z == 0.0f);

    // Encoding a row writes llama.cpp's Q8_0 blocks: d = amax / 127, q = round(x / d).
    float row[64];
    for (int i = 0; i < 64; ++i) row[i] = i < 32 ? float(i - 16) * 0.5f : (i == 40 ? -63.5f : 1.0f);
    kv.encode_row(row, 64, kv.k_row(1, 0, 3, 1));
    edgerun::quant::BlockQ8_0 b[2];
    std::memcpy(b, kv.k_row(1, 0, 3, 1), sizeof b);
    // Block 0: amax = 8 (x = -8 at i = 0), d = 8/127; q_i = round((i - 16) * 0.5 * 127 / 8).
    CHECK(b[0].d == edgerun::quant::fp32_to_fp16(8.0f / 127.0f));
    CHECK(b[0].qs[0] == -127);
    CHECK(b[0].qs[16] == 0);
    CHECK(b[0].qs[17] == 8);   // 0.5 * 127 / 8 = 7.94 -> 8
    CHECK(b[0].qs[31] == 119); // 7.5 * 15.875 = 119.06 -> 119
    // Block 1: amax = 63.5 -> d = 0.5 exactly; ones become 2, -63.5 becomes -127.
    CHECK(b[1].d == 0x3800);
    CHECK(b[1].qs[0] == 2);
    CHECK(b[1].qs[8] == -127);
    // The neighbour rows are untouched.
    kv.kernels().dequant(kv.k_row(1, 0, 3, 0), zeros, 64);
    for (float z : zeros) CHECK(z == 0.0f);
}

TEST_CASE("the Q8 cache refuses head dims that are not whole blocks") {
    auto p = cpu_ref_test::context_params(8, 4, ER_KV_Q8, 1, 1, 80, 80);
    CHECK_THROWS(KvCache(p));
    p.kv_type = ER_KV_F16;
    KvCache f16(p);
    CHECK(f16.k_row_bytes() == 160);
}

TEST_CASE("dot_rows and weighted_sum are exactly the loops they batch, on every kernel set") {
    std::mt19937 rng(8);
    for (int32_t dtype : {0, 1, 30, 8, 12, 3}) {
        for (int64_t width : widths_for(dtype)) {
            CAPTURE(dtype);
            CAPTURE(width);
            const int64_t n_rows = 13, gap = 2;  // rows of one head are `gap` rows apart, as in the cache
            Weights w;
            const int32_t id = w.add_random("rows", dtype, width, n_rows * gap, rng);
            const auto& desc = w.descs()[id];
            const uint64_t stride = *edgerun::row_bytes(dtype, width) * gap;
            const auto x = cpu_ref_test::random_vector(width, rng);
            const auto weights = cpu_ref_test::random_vector(n_rows, rng);
            const auto start = cpu_ref_test::random_vector(width, rng);
            for (Isa isa : {Isa::Generic, Isa::Avx2}) {
                if (!isa_available(isa)) continue;
                const RowKernels* k = row_kernels(dtype, isa);
                std::vector<float> scores(n_rows), want_scores(n_rows);
                k->dot_rows(desc.data, stride, n_rows, x.data(), width, 0.125f, scores.data());
                std::vector<float> sum = start, want_sum = start;
                k->weighted_sum(desc.data, stride, weights.data(), n_rows, sum.data(), width);
                for (int64_t j = 0; j < n_rows; ++j) {
                    const auto* row = static_cast<const uint8_t*>(desc.data) + j * stride;
                    want_scores[j] = k->dot(row, x.data(), width) * 0.125f;
                    k->axpy(weights[j], row, want_sum.data(), width);
                }
                CHECK(cpu_ref_test::bit_equal(scores, want_scores));
                CHECK(cpu_ref_test::bit_equal(sum, want_sum));
                // And the SIMD set equals the portable one.
                const RowKernels* g = row_kernels(dtype, Isa::Generic);
                std::vector<float> generic_scores(n_rows), generic_sum = start;
                g->dot_rows(desc.data, stride, n_rows, x.data(), width, 0.125f, generic_scores.data());
                g->weighted_sum(desc.data, stride, weights.data(), n_rows, generic_sum.data(), width);
                CHECK(cpu_ref_test::bit_equal(scores, generic_scores));
                CHECK(cpu_ref_test::bit_equal(sum, generic_sum));
            }
        }
    }
}

TEST_CASE("thread pool: every task runs exactly once, for any thread count and job size") {
    for (int threads : {1, 2, 3, 5}) {
        ThreadPool pool(threads);
        CHECK(pool.size() == threads);
        std::vector<std::atomic<int>> hits(64);
        std::atomic<int> bad_thread{0};
        for (int round = 0; round < 3000; ++round) {
            const int n = 1 + round % 64;
            for (int i = 0; i < n; ++i) hits[i].store(0);
            pool.run(n, [&](int64_t i, int thread) {
                hits[i].fetch_add(1);
                if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
            });
            int wrong = 0;
            for (int i = 0; i < n; ++i) wrong += hits[i].load() != 1;
            REQUIRE(wrong == 0);
        }
        CHECK(bad_thread.load() == 0);
        // Workers really take part: 64 slow tasks (12.8 ms in all) are not all left to the caller.
        std::atomic<int> on_workers{0};
        pool.run(64, [&](int64_t, int thread) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            if (thread != 0) on_workers.fetch_add(1);
        });
        CHECK((on_workers.load() > 0) == (threads > 1));
    }
    // Two callers sharing one pool take turns.
    ThreadPool pool(3);
    std::atomic<long> total{0};
    auto caller = [&] {
        for (int round = 0; round < 500; ++round) pool.run(17, [&](int64_t, int) { total.fetch_add(1); });
    };
    std::thread a(caller), b(caller);
    a.join();
    b.join();
    CHECK(total.load() == 2 * 500 * 17);
}
