// Every pass/fail threshold of the suite, each with the reason for its value. The
// numbers live here only; the report prints them, and docs/conformance.md tabulates them.
#pragma once

#include <edgerun/abi.h>

#include <string>
#include <vector>

namespace edgerun::conformance {

// ------------------------------------------------------------------- ops --

// Normalised mean squared error over a whole output, as llama.cpp's test-backend-ops:
// sum((candidate - reference)^2) / sum(reference^2).
struct OpThreshold {
    double max_nmse;
    const char* reason;
};

// For one op and (for ops with a weight) the weight's GGUF type id, or (for ATTENTION)
// the KV cache type.
OpThreshold op_threshold(int32_t op, int32_t weight_dtype, int32_t kv_type);

// --------------------------------------------------------------- models --

// Two kinds of model comparison: like with like (the same KV cache type, or an F16 cache
// against F32, whose rounding is far below what changes a token), and an INT8 (Q8) cache
// against F16, where the cache's own quantization is part of what is measured.
enum class Comparison { Exact, KvQuantized };

struct ModelThresholds {
    double min_top1;            // top-1 agreement over decisive positions (gap >= tie_gap)
    double max_mean_kl;         // mean over positions of KL(reference || candidate), nats
    double max_kl;              // at any one position
    double max_logit_diff;      // max |candidate - reference| over a position's logits, in units
                                // of that position's reference logit standard deviation
    double tie_gap;             // a reference top-2 gap below this is a near-tie: either token is right
    const char* reason;
};

const ModelThresholds& model_thresholds(Comparison comparison);

// One line per threshold, for the report and the docs: "MATMUL Q4_K  nmse <= 5e-4  (reason)".
std::vector<std::string> describe_thresholds();

}  // namespace edgerun::conformance
