// A graph node built by hand, for tests that feed backends or their planners graphs of
// their own making.
#pragma once

#include <edgerun/abi.h>

#include <cstdint>
#include <vector>

namespace edgerun::testing {

// Unused inputs, outputs, weights and biases are -1, the ABI's "none".
inline er_node graph_node(int32_t op, const std::vector<int32_t>& in, const std::vector<int32_t>& out,
                          const std::vector<int32_t>& weights = {}) {
    er_node n{};
    n.op = op;
    n.layer = -1;
    n.n_inputs = int32_t(in.size());
    n.n_outputs = int32_t(out.size());
    for (int k = 0; k < ER_NODE_MAX_IO; ++k) n.inputs[k] = n.outputs[k] = n.weights[k] = n.biases[k] = -1;
    for (size_t k = 0; k < in.size(); ++k) n.inputs[k] = in[k];
    for (size_t k = 0; k < out.size(); ++k) n.outputs[k] = out[k];
    for (size_t k = 0; k < weights.size(); ++k) n.weights[k] = weights[k];
    return n;
}

}  // namespace edgerun::testing
