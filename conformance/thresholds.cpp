#include "thresholds.hpp"

#include <edgerun/dtype.hpp>
#include <edgerun/graph.hpp>

#include <cstdio>

namespace edgerun::conformance {

namespace {

constexpr const char* kExactF32 =
    "F32 arithmetic on both sides: only the order of summation differs (about 1e-7 relative); "
    "llama.cpp's test-backend-ops default";
constexpr const char* kPlainMatmul =
    "F32/F16 weights: sums in another order, or activations rounded to F16 inside the product "
    "(NMSE about 1e-7), pass; anything that changes a weight or drops a term does not";
constexpr const char* kBf16Matmul =
    "BF16 weights: activations may be rounded to BF16 for BF16 products (8-bit mantissa: NMSE "
    "about 1e-6)";
constexpr const char* kQuantMatmul =
    "quantized weights: backends may round activations to 8-bit blocks of 32 for integer dot "
    "products (llama.cpp's Q8_1, cuda_orin): NMSE about 4e-5 on Gaussian activations; "
    "test-backend-ops allows 5e-4 for mul_mat for the same reason. A wrong scale or nibble in "
    "one block in 16 gives 1e-2 or more";
constexpr const char* kRope =
    "angles are F32 products of the position and the pair's frequency: at positions up to 4096 "
    "the fastest pairs carry about 2e-4 rad of rounding, NMSE about 1e-8; a wrong frequency or "
    "pairing gives 1e-2 to 1";
constexpr const char* kAttention =
    "attention kernels may keep Q, K or the softmax weights in F16 or 8 bits inside their dot "
    "products (flash attention); test-backend-ops allows 5e-4 for flash_attn_ext. A wrong KV "
    "head, a missing position or an overflow gives 1e-2 or more, or non-finite values";

}  // namespace

OpThreshold op_threshold(int32_t op, int32_t weight_dtype, int32_t /*kv_type*/) {
    switch (op) {
        case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI: case ER_OP_LOGITS:
            if (weight_dtype == int32_t(DType::F32) || weight_dtype == int32_t(DType::F16)) return {1e-6, kPlainMatmul};
            if (weight_dtype == int32_t(DType::BF16)) return {1e-5, kBf16Matmul};
            return {5e-4, kQuantMatmul};
        case ER_OP_ROPE: return {1e-6, kRope};
        case ER_OP_ATTENTION: return {5e-4, kAttention};
        default: return {1e-7, kExactF32};  // EMBED, RMS_NORM, SWIGLU, ADD
    }
}

const ModelThresholds& model_thresholds(Comparison comparison) {
    // tests/conformance/check_bounds_admit_llamacpp.py (ctest conformance_bounds_admit_llamacpp)
    // measures llama.cpp's own rounding against these bounds and fails if one would call it
    // a fault.
    static const ModelThresholds exact{
        0.995, 3e-3, 2e-2, 0.6, 0.1,
        "same weights and cache type: backends differ only by rounding (sum order, F16 or 8-bit activations "
        "inside products). The top-1 bar is the one the CUDA backend is held to. cpu_ref's F16 cache against "
        "its F32 cache measures a mean KL of 3e-8 (synthesized) to 4e-7 (SmolLM2) and logit errors of 0.004 sd. "
        "8-bit activations are the larger noise: llama.cpp's CPU build against cpu_ref on the synthesized "
        "matrix measures a mean KL up to 8e-4, a KL up to 3e-3 at one position and logit errors up to 0.37 sd "
        "(K-quants, dotted against 256-value 8-bit blocks; 0.12-0.19 sd with 32-value blocks, as cuda_orin's "
        "activations=q8 does, which measures up to 0.25 sd); the bounds leave 1.6-7x over that, where a wrong "
        "weight, position or head moves logits by whole sds. Positions whose reference top-2 gap is under 0.1 "
        "are near-ties (issue 4's gap): either token is right there"};
    static const ModelThresholds kv_quantized{
        0.98, 5e-3, 2e-2, 0.75, 0.5,
        "an INT8 cache against F16 measures the cache's own quantization (one scale per 32 values), with the "
        "activations' rounding on top. cpu_ref's INT8 cache against its F16 cache measures a mean KL of 2e-5 "
        "(synthesized) to 5e-4 (SmolLM2), at most 2e-3 at one position, and logit errors up to 0.11 sd; "
        "llama.cpp with its INT8 (q8_0) cache and 8-bit activations against cpu_ref's F16 cache up to 7e-4, "
        "4e-3 and 0.37 sd. The bounds leave 2-7x over that, and a gap under 0.5 (what that noise on two "
        "logits can close) counts as a near-tie"};
    return comparison == Comparison::Exact ? exact : kv_quantized;
}

std::vector<std::string> describe_thresholds() {
    std::vector<std::string> out;
    char line[256];
    const int32_t ops[] = {ER_OP_EMBED, ER_OP_RMS_NORM, ER_OP_SWIGLU, ER_OP_ADD, ER_OP_ROPE, ER_OP_ATTENTION};
    for (int32_t op : ops) {
        const OpThreshold t = op_threshold(op, 0, ER_KV_F32);
        const char* scope = op == ER_OP_ATTENTION ? "every KV cache type"
                            : (op == ER_OP_EMBED || op == ER_OP_RMS_NORM) ? "every weight type" : "-";
        std::snprintf(line, sizeof line, "ops    %-13s %-22s NMSE <= %.0e", op_name(op), scope, t.max_nmse);
        out.push_back(std::string(line) + "  (" + t.reason + ")");
    }
    const std::pair<const char*, int32_t> matmul_types[] = {{"F32, F16", 0}, {"BF16", 30}, {"quantized", 2}};
    for (const auto& [label, dtype] : matmul_types) {
        const OpThreshold t = op_threshold(ER_OP_MATMUL, dtype, -1);
        std::snprintf(line, sizeof line, "ops    %-13s %-22s NMSE <= %.0e", "MATMUL/LOGITS", label, t.max_nmse);
        out.push_back(std::string(line) + "  (" + t.reason + ")");
    }
    const std::pair<const char*, Comparison> kinds[] = {{"same cache type", Comparison::Exact},
                                                       {"INT8 vs F16 cache", Comparison::KvQuantized}};
    for (const auto& [label, kind] : kinds) {
        const ModelThresholds& t = model_thresholds(kind);
        std::snprintf(line, sizeof line,
                      "models %-36s top-1 >= %.1f%%, mean KL <= %.0e, max KL <= %.0e, max |dlogit| <= %.2f sd, "
                      "near-tie gap < %.1f",
                      label, 100 * t.min_top1, t.max_mean_kl, t.max_kl, t.max_logit_diff, t.tie_gap);
        out.push_back(std::string(line) + "  (" + t.reason + ")");
    }
    return out;
}

}  // namespace edgerun::conformance
