// The long level: what the ops and models levels are too short or too regular to reach.
// A model fed one token per step (the decode plan) past a thousand positions, the same
// tokens fed in chunks of 1, 2, 3, 7, 16 and 33 (so steps start at positions that are no
// multiple of any tile), and a rewind (feed 300, step back to 250, feed other tokens):
// each compared position by position with the reference fed one token per step.
#pragma once

#include "model_suite.hpp"

#include <string>
#include <vector>

namespace edgerun::conformance {

struct LongSettings {
    int32_t positions = 1100;                             // the decode and chunked runs
    std::vector<int32_t> chunks = {1, 2, 3, 7, 16, 33};   // the chunked run's step sizes, in turn
    int32_t rewind_from = 300, rewind_to = 250;           // the rewind run
};

// One candidate run of one model, against the reference's one-token-per-step run.
struct LongComparison {
    std::string model;       // file name
    std::string run;         // "decode", "chunks", "rewind"
    std::string schedule;    // how the run was fed, in words
    std::string candidate;   // "simple kv=f16"
    std::string reference;   // "cpu_ref kv=f32 one token per step"
    Comparison kind = Comparison::Exact;
    std::string status;      // "pass", "FAIL", "missing", "error"
    std::vector<std::string> problems;
    SequenceSummary summary;
    int32_t positions = 0;       // positions compared (0..positions - 1)
    int32_t steps = 0;           // steps the candidate ran
    int32_t max_kv_length = 0;   // the longest cache an attention step read
    std::vector<int32_t> step_sizes;  // the distinct step sizes, ascending
    int32_t first_failing = -1;  // the first position past any per-position threshold
    std::string first_failing_step;  // the step it was in, in words
};

// The coverage of the long level per model, for the report.
struct LongCoverage {
    std::string model;
    int32_t positions = 0, max_kv_length = 0, steps = 0;
    std::vector<int32_t> step_sizes;
};

std::vector<LongComparison> run_long_level(const PluginRegistry& registry, const BackendSpec& candidate,
                                           const BackendSpec& reference, const std::vector<ModelEntry>& models,
                                           const ModelLevelOptions& options, const LongSettings& settings);

std::vector<LongCoverage> long_coverage(const std::vector<LongComparison>& comparisons);

}  // namespace edgerun::conformance
