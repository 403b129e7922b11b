// GPU tests of the cuda_orin kernels: every kernel against double-precision CPU
// references over a spread of shapes, the real ones of Qwen3-4B, Llama-3.2-1B and
// SmolLM2 included, plus odd sizes. Prints one line per check and a closing
// "N passed, M failed" line; exit 0 when all pass.
//
//   cuda_kernel_gpu_tests [--quick] [--filter SUBSTRING]
//     --quick   a few small shapes per kernel (for compute-sanitizer runs)
//
// Without a CUDA device it prints "skipped: no CUDA device" and exits 0 (ctest shows
// the test as skipped).
#include "cuda_device.hpp"
#include "device_matrix.hpp"
#include "kernel_checks_decode.hpp"

#include <cstring>
#include <string>

using namespace edgerun::cuda_orin;
using namespace edgerun::cuda_orin::testing;

namespace {

struct Shape {
    const char* model;
    int n_embd, n_q, n_kv, n_ff, head_dim;
};

const Shape kModels[] = {
    {"Qwen3-4B", 2560, 4096, 1024, 9728, 128},
    {"Llama-3.2-1B", 2048, 2048, 512, 8192, 64},
    {"SmolLM2-135M", 576, 576, 192, 1536, 64},
};

const int32_t kTypes[] = {kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kF32, kF16, kBF16};

bool k_quant(int32_t t) { return plane_geometry(t).block_elems == 256; }

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    std::string filter;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--quick] [--filter SUBSTRING]\n", argv[0]);
            return 2;
        }
    }
    if (!cuda_device_present()) {
        std::printf("skipped: no CUDA device\n");
        return 0;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("device: %s, sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);

    CudaDevice dev;
    int passed = 0, failed = 0;
    const Report report = [&](const CheckResult& r) {
        if (!filter.empty() && r.name.find(filter) == std::string::npos) return;
        std::printf("%s  %-80s error %.3g (bound %.3g)\n", r.pass() ? "PASS" : "FAIL", r.name.c_str(), r.error, r.bound);
        (r.pass() ? passed : failed) += 1;
    };
    uint32_t seed = 1;

    // --- GEMV: every type at the models' projection shapes and odd sizes ---------
    for (int32_t type : kTypes) {
        if (quick) {
            check_gemv(dev, report, type, 37, k_quant(type) ? 512 : 96, false, false, true, seed++);
            continue;
        }
        for (const Shape& s : kModels) {
            if (k_quant(type) && (s.n_embd % 256 || s.n_ff % 256)) continue;  // as in real files
            check_gemv(dev, report, type, s.n_q, s.n_embd, false, false, false, seed++);   // attention q / o
            check_gemv(dev, report, type, s.n_kv, s.n_embd, true, true, false, seed++);    // k / v, f16 in+out
            check_gemv(dev, report, type, s.n_ff, s.n_embd, false, false, false, seed++);  // gate / up
            check_gemv(dev, report, type, s.n_embd, s.n_ff, false, false, true, seed++);   // down + residual
        }
        const int block = k_quant(type) ? 256 : 32;
        check_gemv(dev, report, type, 1, block, false, false, false, seed++);
        check_gemv(dev, report, type, 97, 3 * block, false, true, true, seed++);
        check_gemv(dev, report, type, 5, 61 * block, true, false, false, seed++);
    }
    check_gemv(dev, report, kF16, 33, 1000, false, false, false, seed++);  // row length not a multiple of 32

    // --- several rows of x (steps of 2-16 rows): against the reference and bit for bit
    // against the one-row kernel, both activation paths ---------------------------------
    for (int32_t type : kTypes) {
        check_gemv_rows(dev, report, {type}, {37}, k_quant(type) ? 512 : 96, 5, false, true, seed++);
        check_gemv_rows(dev, report, {type}, {37}, k_quant(type) ? 512 : 96, 3, true, false, seed++);
    }
    for (const Shape& s : kModels) {
        if (quick && s.n_embd > 600) continue;
        const std::vector<int32_t> qkv = s.n_embd % 256 == 0 ? std::vector<int32_t>{kQ4_K, kQ4_K, kQ6_K}
                                                              : std::vector<int32_t>{kQ5_0, kQ5_0, kQ8_0};
        for (int n_x : {2, 8, 13, 16})
            check_gemv_rows(dev, report, qkv, {s.n_q, s.n_kv, s.n_kv}, s.n_embd, n_x, false, false, seed++);
    }

    // --- float activations staged in shared memory against read in place ----------------
    for (int32_t type : kTypes) {
        for (const Shape& s : kModels) {
            if (quick && s.n_embd > 600) continue;
            if (k_quant(type) && (s.n_embd % 256 || s.n_ff % 256)) continue;
            check_gemv_float_x(dev, report, type, s.n_q, s.n_embd, 1, true, seed++);
            check_gemv_float_x(dev, report, type, s.n_embd, s.n_ff, 1, gemv_stage_fits(1, padded_length(s.n_ff)), seed++);
            check_gemv_norm(dev, report, type, s.n_q, s.n_embd, seed++);
        }
        check_gemv_float_x(dev, report, type, 37, k_quant(type) ? 512 : 96, 5, true, seed++);
    }

    // --- x quantized by the GEMV as it stages it (activations=q8): bit for bit against
    // prepare's 8-bit rows, and after a fused norm against the reference -----------------
    for (int32_t type : kTypes) {
        if (plain_value_bytes(type)) continue;
        for (const Shape& s : kModels) {
            if (quick && s.n_embd > 600) continue;
            if (k_quant(type) && (s.n_embd % 256 || s.n_ff % 256)) continue;
            check_gemv_quantize_x(dev, report, {type}, {s.n_q}, s.n_embd, 1, true, seed++);
            check_gemv_quantize_x(dev, report, {type}, {s.n_embd}, s.n_ff, 1, false, seed++);
        }
        check_gemv_quantize_x(dev, report, {type}, {37}, k_quant(type) ? 512 : 96, 5, false, seed++);
    }
    for (const Shape& s : kModels) {
        if (quick && s.n_embd > 600) continue;
        const bool k = s.n_embd % 256 == 0;
        check_gemv_quantize_x(dev, report, k ? std::vector<int32_t>{kQ4_K, kQ4_K, kQ6_K} : std::vector<int32_t>{kQ5_0, kQ5_0, kQ8_0},
                              {s.n_q, s.n_kv, s.n_kv}, s.n_embd, 8, false, seed++);
        check_swiglu(dev, report, k ? kQ4_K : kQ5_0, k ? kQ4_K : kQ5_0, s.n_ff, s.n_embd, seed++, true);
    }

    // --- fused multi-output, SwiGLU, prepare ----------------------------------------
    for (const Shape& s : kModels) {
        if (quick && s.n_embd > 600) continue;
        if (s.n_embd % 256 == 0) {
            check_gemv_fused(dev, report, {kQ4_K, kQ4_K, kQ6_K}, {s.n_q, s.n_kv, s.n_kv}, s.n_embd, seed++);
            check_swiglu(dev, report, kQ4_K, kQ4_K, s.n_ff, s.n_embd, seed++);
        } else {  // SmolLM2's Q4_K_M falls back to Q5_0 / Q8_0 at width 576
            check_gemv_fused(dev, report, {kQ5_0, kQ5_0, kQ8_0}, {s.n_q, s.n_kv, s.n_kv}, s.n_embd, seed++);
            check_swiglu(dev, report, kQ5_0, kQ5_0, s.n_ff, s.n_embd, seed++);
        }
        check_prepare(dev, report, s.n_embd, false, PrepareResidual::kInPlace, seed++);
        check_prepare(dev, report, s.n_ff, true, PrepareResidual::kInPlace, seed++);
        check_prepare(dev, report, s.n_embd, false, PrepareResidual::kNone, seed++);  // several blocks
        check_prepare(dev, report, s.n_ff, false, PrepareResidual::kNone, seed++);
    }
    check_gemv_fused(dev, report, {kQ8_0, kF16, kQ4_1, kQ5_K}, {100, 7, 64, 300}, 512, seed++);
    // A GEMV making the next one's 8-bit x (option prepare=gemv), at the layer's shapes:
    // down (+ residual, the next attention norm) then Q, gate/up (SwiGLU) then down, O
    // (+ residual, the FFN norm) then gate; a row split over four warps too.
    for (const Shape& s : kModels) {
        if (quick && s.n_embd > 600) continue;
        const int32_t t = s.n_embd % 256 == 0 ? kQ4_K : kQ5_0, t6 = s.n_embd % 256 == 0 ? kQ6_K : kQ8_0;
        check_gemv_q8_out(dev, report, t6, t, s.n_embd, s.n_ff, s.n_q, false, 0, seed++);
        check_gemv_q8_out(dev, report, t, t6, s.n_ff, s.n_embd, s.n_embd, true, 0, seed++);
        check_gemv_q8_out(dev, report, t, t, s.n_embd, s.n_q, s.n_ff, false, 4, seed++);
    }

    // --- RoPE + append --------------------------------------------------------------
    for (int32_t kv : {kKvF16, kKvQ8})
        for (int mode : {kRopeNormal, kRopeNeox}) {
            check_rope_append(dev, report, {32, 8, 128, 128, mode, false, true, kv, 4000, 4096}, seed++);  // Qwen3-4B
            check_rope_append(dev, report, {32, 8, 64, 64, mode, true, false, kv, 31, 128}, seed++);      // Llama-3.2-1B
            check_rope_append(dev, report, {9, 3, 64, 32, mode, false, false, kv, 0, 16}, seed++);        // partial rotation
            if (!quick) check_rope_append(dev, report, {16, 8, 128, 128, mode, false, true, kv, 32767, 32768}, seed++);
        }
    // The Q/K/V GEMV doing rope_append (option rope_append=gemv): bit for bit against the
    // GEMV and rope_append_kernel, tickets back at 0, with the plan's shape and others.
    for (int32_t kv : {kKvF16, kKvQ8}) {
        const RopeCase qwen3_4b{32, 8, 128, 128, kRopeNeox, false, true, kv, 4000, 4096};
        const RopeCase llama_1b{32, 8, 64, 64, kRopeNormal, true, false, kv, 31, 128};
        check_rope_append_in_gemv(dev, report, {qwen3_4b, 2560, kQ4_K, kQ6_K, "the plan's shape"}, [](GemvLaunch&) {}, seed++);
        check_rope_append_in_gemv(dev, report, {llama_1b, 2048, kQ4_K, kQ6_K, "the plan's shape"}, [](GemvLaunch&) {}, seed++);
        check_rope_append_in_gemv(dev, report, {llama_1b, 2048, kQ4_K, kQ6_K, "three rows a warp"},
                                  [](GemvLaunch& g) { g.asked_warps_per_row = 1, g.rows_per_warp = 3; }, seed++);
        check_rope_append_in_gemv(dev, report, {qwen3_4b, 2560, kQ4_K, kQ6_K, "four tasks in flight"},
                                  [](GemvLaunch& g) { g.tasks_in_flight = 4; }, seed++);
        check_rope_append_in_gemv(dev, report, {qwen3_4b, 2560, kQ4_K, kQ6_K, "eight warps a row"},
                                  [](GemvLaunch& g) { g.asked_warps_per_row = 8; }, seed++);
    }

    // --- attention ------------------------------------------------------------------
    struct AttentionCase {
        int n_head, n_head_kv, dim, kv_len, n_ctx;
    };
    const AttentionCase cases[] = {
        {32, 8, 128, 1, 4096},      {32, 8, 128, 1000, 4096},  {32, 8, 128, 32768, 32768},  // Qwen3-4B
        {32, 8, 64, 4097, 8192},    {9, 3, 64, 777, 2048},     {16, 8, 128, 33, 64},
        {28, 4, 128, 300, 512},  // group of 7: two query-head chunks
    };
    for (const AttentionCase& c : cases) {
        if (quick && c.n_ctx > 4096) continue;
        for (int32_t kv : {kKvF16, kKvQ8}) {
            const int splits = choose_kv_splits(c.n_ctx, c.n_head_kv, dev.n_sms());
            check_attention(dev, report, c.n_head, c.n_head_kv, c.dim, c.kv_len, c.n_ctx, kv, splits, seed++);
            // The same on tensor cores (attention_mma.cu; its fragment use first checked here).
            check_attention(dev, report, c.n_head, c.n_head_kv, c.dim, c.kv_len, c.n_ctx, kv, splits, seed++,
                            AttentionKernel::mma);
        }
    }
    check_attention(dev, report, 8, 2, 64, 500, 512, kKvF16, 1, seed++);  // a single split
    // A prompt of 512 rows of one sequence under causal lengths, and a batch of 16 rows of
    // two sequences, in one launch each.
    for (int32_t kv : {kKvF16, kKvQ8}) {
        std::vector<int32_t> seqs(512, 1), lengths(512);
        for (int r = 0; r < 512; ++r) lengths[size_t(r)] = 100 + r;
        check_attention_rows(dev, report, 32, 8, 128, 1024, kv, seqs, lengths, 1, seed++);
        std::vector<int32_t> batch_seqs(16), batch_lengths(16);
        for (int r = 0; r < 16; ++r) {
            batch_seqs[size_t(r)] = r % 2;
            batch_lengths[size_t(r)] = 1 + 61 * r;
        }
        check_attention_rows(dev, report, 9, 3, 64, 1024, kv, batch_seqs, batch_lengths, 4, seed++);
        // The tiled kernel (tensor-core mma; its fragment layout checked here against the
        // hardware for the first time): the same prompt, one split and several, and the
        // batch of two sequences.
        check_attention_rows(dev, report, 32, 8, 128, 1024, kv, seqs, lengths, 1, seed++, AttentionKernel::tiled);
        check_attention_rows(dev, report, 32, 8, 128, 1024, kv, seqs, lengths, 3, seed++, AttentionKernel::tiled);
        check_attention_rows(dev, report, 9, 3, 64, 1024, kv, batch_seqs, batch_lengths, 4, seed++, AttentionKernel::tiled);
        check_attention_rows(dev, report, 9, 3, 64, 1024, kv, batch_seqs, batch_lengths, 4, seed++, AttentionKernel::mma);
    }
    check_attention_q8_vs_f16(dev, report, 32, 8, 128, quick ? 1000 : 8192, 16, seed++);
    check_attention_q8_vs_f16(dev, report, 9, 3, 64, 2000, 4, seed++);

    // --- embedding ------------------------------------------------------------------
    for (int32_t type : {kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kF32, kF16, kBF16}) {
        const int n_cols = plane_geometry(type).block_elems == 256 ? 2048 : plain_value_bytes(type) ? 2050 : 576;
        check_embed(dev, report, EmbedForm::packed, type, 100, n_cols, {42, 0, 99, -1, 100, 42}, seed++);
    }
    check_embed(dev, report, EmbedForm::table, kQ8_1, 100, 576, {42, -1, 7}, seed++);
    check_embed(dev, report, EmbedForm::table, kQ8_K, 100, 2048, {42, 100, 0}, seed++);
    check_embed(dev, report, EmbedForm::table, kQ6_K, 100, 2560, {42}, seed++);
    check_embed(dev, report, EmbedForm::table, kQ8_0, 50, 576, {49, 3}, seed++);
    check_embed(dev, report, EmbedForm::table, kF16, 10, 100, {3}, seed++);
    check_embed(dev, report, EmbedForm::table, kQ4_K, 10, 256, {-1}, seed++);

    // --- the kernels composed into decode steps -------------------------------------
    for (int32_t kv : {kKvF16, kKvQ8}) {
        if (quick) check_decode_chain(dev, report, {256, 4, 2, 64, 512, 64, 4}, kv, seed++);
        else check_decode_chain(dev, report, {2048, 32, 8, 64, 8192, 256, 20}, kv, seed++);  // Llama-3.2-1B layer
    }

    // --- loading: the packed copy on the device, then the file's pages released ---------
    {
        std::mt19937 rng(seed++);
        const std::vector<uint8_t> gguf = make_weights(kQ6_K, 64, 2560, rng);
        struct Released {
            const void* data = nullptr;
            uint64_t bytes = 0;
            int calls = 0;
        } released;
        DeviceMatrix m;
        cuda_check(upload_matrix(kQ6_K, gguf.data(), 64, 2560, &m,
                                 [](void* user, const void* data, uint64_t bytes) {
                                     auto* r = static_cast<Released*>(user);
                                     r->data = data;
                                     r->bytes = bytes;
                                     ++r->calls;
                                 },
                                 &released),
                   "upload_matrix");
        std::vector<uint8_t> packed(m.bytes), expect(m.bytes);
        dev.download(packed.data(), m.storage, m.bytes);
        repack_matrix(kQ6_K, gguf.data(), 64, 2560, expect.data());
        const bool ok = released.calls == 1 && released.data == gguf.data() && released.bytes == gguf.size() &&
                        packed == expect;
        report({"upload_matrix: device bytes equal the repack, release called once on the file bytes", ok ? 0.0 : 1.0, 0.0});
        free_matrix(&m);
    }

    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
