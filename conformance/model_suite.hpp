// The model levels: teacher-forced runs (both backends consume the same tokens; every
// position's logits are compared) and free-running greedy generation (each backend feeds
// back its own tokens; the first divergence is judged by the reference's top-2 gap).
#pragma once

#include "metrics.hpp"
#include "op_suite.hpp"
#include "thresholds.hpp"

#include <edgerun/model.hpp>
#include <edgerun/plugin_registry.hpp>

#include <map>
#include <string>
#include <vector>

namespace edgerun::conformance {

struct SequenceSettings {
    int32_t teacher_tokens = 48;  // positions compared teacher-forced
    int32_t prompt_tokens = 16;   // greedy: the prompt (the first tokens of the same text)
    int32_t greedy_tokens = 16;   // greedy: tokens generated
    int32_t n_batch = 16;         // prefill steps of this many tokens (several per sequence)
};

// The token sequence a model is run on: a fixed English text through the model's own
// tokenizer (repeated until long enough), so real models see real text.
std::vector<int32_t> sequence_tokens(const Model& model, int32_t n);

// What one backend produced on one model with one KV cache type.
struct BackendRun {
    int64_t n_vocab = 0;
    std::vector<float> logits;  // teacher_tokens x n_vocab
    GreedyRun greedy;
    std::string device;
};

// Throws Error (code ER_E_UNSUPPORTED with the exact list) when the backend lacks ops.
BackendRun run_model(const PluginRegistry& registry, const BackendSpec& backend, const std::string& model_path,
                     int32_t kv_type, const SequenceSettings& settings, const std::vector<int32_t>& tokens);

struct ModelComparison {
    std::string model;       // file name
    bool synthesized = false;
    std::string candidate;   // "simple kv=f16"
    std::string reference;   // "cpu_ref kv=f32"
    Comparison kind = Comparison::Exact;
    std::string status;      // "pass", "FAIL", "missing", "error"
    bool partial = false;    // "missing", but other KV cache types of the model did run
    std::vector<std::string> problems;  // why it failed, or what is missing
    SequenceSummary teacher;
    Divergence greedy;
    int32_t greedy_tokens = 0;
};

// Judges a teacher-forced summary and a greedy divergence against the thresholds;
// returns the problems found (empty: pass).
std::vector<std::string> judge(const SequenceSummary& teacher, const Divergence& greedy, const ModelThresholds& t);

struct ModelEntry {
    std::string path;
    bool synthesized = false;
};

struct ModelLevelOptions {
    std::vector<int32_t> kv_types;  // the candidate's cache types to run; empty: every one it supports
    int32_t reference_kv = -1;      // -1: the same type as the candidate's
    SequenceSettings sequence;
};

// The candidate's KV cache types (of those asked for) that it runs the model with; what it
// lacks for the others is added to `missing`.
std::vector<int32_t> supported_kv_types(const Backend& backend, const Model& model, const ModelLevelOptions& options,
                                        std::vector<std::string>& missing);

std::vector<ModelComparison> run_model_level(const PluginRegistry& registry, const BackendSpec& candidate,
                                             const BackendSpec& reference, const std::vector<ModelEntry>& models,
                                             const ModelLevelOptions& options);

}  // namespace edgerun::conformance
