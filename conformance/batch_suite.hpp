// The batch level: several sequences of different lengths and positions stepped together
// (one context, er_step_row) against the same sequences each stepped alone, on the
// candidate itself. A row must come out as it would alone: bit for bit on the reference
// backend (cpu_ref promises that for steps of up to 16 rows, and every step here is
// one), within the teacher-forced thresholds on any other. A backend whose contexts hold
// one sequence (er_device_info.max_seqs <= 1) is run through the runtime's fallback, one
// context per sequence, and must match the same way.
#pragma once

#include "model_suite.hpp"

#include <string>
#include <vector>

namespace edgerun::conformance {

struct BatchComparison {
    std::string model;      // file name
    std::string candidate;  // "example kv=f32"
    std::string steps;      // "shared" or "one at a time" (the candidate has no multi-sequence contexts)
    bool exact = false;     // judged bit for bit
    int32_t sequences = 0;
    int32_t rows = 0;       // rows compared
    int32_t differing_rows = 0;
    int32_t non_finite_rows = 0;  // rows not finite alone: only checked for identical bits
    double worst_nmse = 0;  // over a row's logits
    SequenceSummary summary;
    std::string status;     // "pass", "FAIL", "missing", "error"
    std::vector<std::string> problems;
};

struct BatchLevelOptions {
    std::vector<int32_t> kv_types;  // the candidate's cache types; empty: the first it supports of f32, f16, q8
    bool exact = false;             // bit-identical rows required (the reference backend)
    int32_t n_batch = 16;
};

std::vector<BatchComparison> run_batch_level(const PluginRegistry& registry, const BackendSpec& candidate,
                                             const std::vector<ModelEntry>& models, const BatchLevelOptions& options);

void print_batch_report(const std::vector<BatchComparison>& comparisons, std::ostream& out);

}  // namespace edgerun::conformance
