// The ops level: every op the candidate says it supports, for every weight type (or KV
// cache type and head size), over a spread of shapes including tiny and odd ones, run
// through the ABI on the candidate and the reference alike and compared by the NMSE of
// each whole output.
#pragma once

#include "weight_set.hpp"

#include <edgerun/engine.hpp>
#include <edgerun/graph.hpp>
#include <edgerun/host_api.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace edgerun::conformance {

// A backend as the suite uses it: the plugin, its options, its thread budget.
struct BackendSpec {
    const Plugin* plugin = nullptr;
    std::string options;
    int32_t threads = 0;

    std::string name() const { return std::string(plugin->name()); }
    Backend create() const;
    // What an Engine on this backend is given: its name, options and threads, and these.
    EngineOptions engine_options(int32_t kv_type, int32_t n_batch, int32_t n_ctx) const;
};

// One step of an op test: rows of each input, then the step's positions.
struct OpStep {
    int32_t n_tokens = 1;
    int32_t pos0 = 0;
    bool logits_all = true;
    std::vector<std::pair<int32_t, std::vector<float>>> inputs;
    std::vector<std::pair<int32_t, std::vector<int32_t>>> token_inputs;
};

struct OpCase {
    std::string label;  // "MATMUL Q4_K [768 x 7], 5 tokens"
    er_op_query query{};
    std::shared_ptr<WeightSet> weights;
    Graph graph;
    er_context_params context{};
    std::vector<OpStep> steps;
    std::vector<int32_t> outputs;  // compared after every step
    // Judge every step on its own as well as the whole output: in a case of thousands of
    // positions, one wrong single-token step is far below the whole output's NMSE bar.
    bool judge_each_step = false;
};

// The cases of one op for one weight type (ops with a weight), KV cache type
// (ATTENTION), or -1 (the rest).
std::vector<OpCase> make_cases(int32_t op, int32_t variant);

// The op's variants: weight types, KV cache types, or {-1}.
std::vector<int32_t> op_variants(int32_t op);

// The long level's ATTENTION cases for one KV cache type: caches filled past every power
// of two from 32 to 4096, single-token steps at each boundary's KV lengths (one short, on
// it, one past), head sizes 64 and 128, grouped heads.
std::vector<OpCase> make_long_attention_cases(int32_t kv_type);

struct OpResult {
    std::string label;
    int32_t op = 0;
    std::string status;      // "pass", "FAIL", "error"
    double nmse = 0, threshold = 0, max_abs = 0;
    bool non_finite = false;
    std::string message;     // why it failed
    std::string first_failing_step;  // "1 token at position 512 (KV length 513)"; empty: none alone
    std::vector<int32_t> kv_lengths;  // ATTENTION: the KV lengths its single-token steps read
};

struct OpReport {
    std::vector<OpResult> results;
    std::vector<std::string> missing;        // the candidate says it does not run these
    std::vector<std::string> not_referenced; // the reference does not run these: not tested

    int32_t failures() const;
};

// Which cases: the ops level's, or the long level's (long-context ATTENTION only).
enum class OpCases { Standard, Long };

// `only_ops`: op names to run (empty: all).
OpReport run_op_level(const BackendSpec& candidate, const BackendSpec& reference,
                      const std::vector<std::string>& only_ops = {}, OpCases which = OpCases::Standard);

// Runs one case on one backend: the outputs of every step, concatenated; `step_ends`
// (when given) gets where each step's outputs end.
std::vector<float> run_case(const Backend& backend, const OpCase& c, std::vector<size_t>* step_ends = nullptr);

}  // namespace edgerun::conformance
