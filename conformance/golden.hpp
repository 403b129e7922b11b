// Golden traces: what the reference produced on one model, small enough to keep in a
// repository or copy to a device where the reference is too slow or absent. A trace
// holds the model's checksum, the settings, the token sequence, the top-k logits (and
// the softmax normaliser) of every teacher-forced position, and the reference's greedy
// continuation with its margins. `check` compares any backend against it.
#pragma once

#include "model_suite.hpp"

#include <string>
#include <vector>

namespace edgerun::conformance {

struct GoldenPosition {
    TopK top;       // the reference's top-k ids and logits, and log of its normaliser
    double sd = 0;  // standard deviation of all its logits
};

struct GoldenTrace {
    std::string model_file;   // the file name it was recorded on, for messages
    uint64_t model_bytes = 0;
    std::string model_checksum;  // FNV-1a 64 of the whole file, hex
    std::string reference;    // backend name
    std::string device;
    int32_t kv_type = ER_KV_F32;
    SequenceSettings sequence;
    int32_t top_k = 16;
    std::vector<int32_t> tokens;
    std::vector<GoldenPosition> positions;
    GreedyRun greedy;
};

std::string file_checksum(const std::string& path, uint64_t* bytes = nullptr);

GoldenTrace record_trace(const PluginRegistry& registry, const BackendSpec& reference, const std::string& model_path,
                         int32_t kv_type, const SequenceSettings& settings, int32_t k);

void write_trace(const GoldenTrace& trace, const std::string& path);
// Throws Error naming the file and what is wrong with it.
GoldenTrace read_trace(const std::string& path);

// The candidate against a trace: teacher-forced over the trace's tokens (KL against the
// top-k with the rest of the mass lumped, a lower bound of the full KL) and greedy from
// the trace's prompt. `kv_type` -1: the trace's. Throws Error when the model file is not
// the one the trace was recorded on.
ModelComparison check_trace(const PluginRegistry& registry, const BackendSpec& candidate, const GoldenTrace& trace,
                            const std::string& model_path, int32_t kv_type);

}  // namespace edgerun::conformance
