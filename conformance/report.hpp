// The suite's verdict: a readable table on standard output and the same facts as JSON.
#pragma once

#include "batch_suite.hpp"
#include "long_suite.hpp"
#include "model_suite.hpp"
#include "op_suite.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace edgerun::conformance {

struct SuiteReport {
    std::string candidate, candidate_device, reference, reference_device;
    bool ops_run = false;
    OpReport ops;
    bool models_run = false;
    SequenceSettings sequence;
    std::vector<ModelComparison> models;
    bool batch_run = false;
    std::vector<BatchComparison> batch;
    bool long_run = false;      // the long level: long-context ATTENTION cases and model runs
    OpReport long_ops;
    LongSettings long_settings;
    std::vector<LongComparison> long_models;
    bool require_full = false;  // missing coverage fails the run

    // Top-1 agreement over every decisive position of the synthesized models' like-for-
    // like comparisons: the bar the CUDA backend is held to.
    double pooled_top1(int32_t* decisive = nullptr) const;
    std::vector<std::string> problems() const;  // empty: the candidate passes
    int32_t missing_count() const;
};

void print_report(const SuiteReport& report, std::ostream& out, bool verbose);
void write_json_report(const SuiteReport& report, const std::string& path);

// One comparison as a table row and its problems; for `check`.
void print_comparisons(const std::vector<ModelComparison>& comparisons, std::ostream& out);

}  // namespace edgerun::conformance
