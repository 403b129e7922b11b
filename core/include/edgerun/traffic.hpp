// What one decode step reads from memory, op by op, from the graph itself: the numbers
// behind `--trace`, `bench`'s achieved bandwidth and the roofline (bytes per token =
// weights read + KV cache read + activations).
#pragma once

#include <edgerun/graph.hpp>

#include <string>
#include <vector>

namespace edgerun {

struct OpTraffic {
    int32_t node = 0;
    int32_t op = 0;
    int32_t layer = -1;
    int32_t output = 0;      // which output of a multi-output node, else 0
    std::string tensor;      // the weight read, empty for none
    int32_t dtype = -1;      // GGUF type id of that weight
    int64_t rows = 0;        // M: outputs
    int64_t cols = 0;        // K: inputs
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;
};

struct StepTraffic {
    std::vector<OpTraffic> ops;
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;
    uint64_t total() const { return weight_bytes + kv_bytes; }
};

// The traffic of one decode step of `graph` (built for one token) with `kv_len`
// positions in the cache.
StepTraffic decode_traffic(const Graph& graph, const WeightTable& weights, int64_t kv_len, int32_t kv_type);

}  // namespace edgerun
