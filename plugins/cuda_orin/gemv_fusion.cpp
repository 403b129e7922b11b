#include "gemv_fusion.hpp"

#include <algorithm>

namespace edgerun::cuda_orin {

std::vector<GemvFusion> find_gemv_fusions(const er_graph& graph) {
    const int32_t n_nodes = graph.n_nodes, n_values = graph.n_values;
    std::vector<int32_t> producer(size_t(n_values), -1), readers(size_t(n_values), 0), reader(size_t(n_values), -1);
    for (int32_t i = 0; i < n_nodes; ++i) {
        const er_node& node = graph.nodes[i];
        for (int32_t k = 0; k < node.n_outputs; ++k) producer[size_t(node.outputs[k])] = i;
        for (int32_t k = 0; k < node.n_inputs; ++k) {
            ++readers[size_t(node.inputs[k])];
            reader[size_t(node.inputs[k])] = i;
        }
    }
    // The one node that reads v, if v is read once and not by the host.
    auto only_reader = [&](int32_t v) {
        return readers[size_t(v)] == 1 && !(graph.values[v].flags & ER_VALUE_OUTPUT) ? reader[size_t(v)] : -1;
    };

    std::vector<GemvFusion> fusions(static_cast<size_t>(n_nodes));
    for (int32_t i = 0; i < n_nodes; ++i) {
        const er_node& node = graph.nodes[i];
        if (node.op != ER_OP_MATMUL && node.op != ER_OP_MATMUL_MULTI) continue;
        const int32_t j = only_reader(node.outputs[0]);
        if (j < 0) continue;
        const er_node& consumer = graph.nodes[j];
        if (node.n_outputs == 1 && consumer.op == ER_OP_ADD) {
            const int32_t v = node.outputs[0];
            const int32_t other = consumer.inputs[0] == v ? consumer.inputs[1] : consumer.inputs[0];
            if (other == v || producer[size_t(other)] >= i) continue;  // the residual must exist before the GEMV
            fusions[size_t(i)] = {GemvFusion::kResidual, j, other};
        } else if (node.n_outputs == 2 && consumer.op == ER_OP_SWIGLU && consumer.inputs[0] == node.outputs[0] &&
                   consumer.inputs[1] == node.outputs[1] && only_reader(node.outputs[1]) == j) {
            fusions[size_t(i)] = {GemvFusion::kSwiGLU, j, -1};
        }
    }
    return fusions;
}

std::vector<int32_t> extend_fused_lifetimes(const er_graph& graph, const std::vector<GemvFusion>& fusions,
                                            std::vector<int32_t> last_use) {
    for (size_t i = 0; i < fusions.size(); ++i) {
        if (fusions[i].kind == GemvFusion::kNone) continue;
        int32_t& end = last_use[size_t(graph.nodes[i].inputs[0])];
        end = std::max(end, fusions[i].consumer);
    }
    return last_use;
}

}  // namespace edgerun::cuda_orin
