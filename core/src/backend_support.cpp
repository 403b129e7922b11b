#include <edgerun/backend_support.hpp>
#include <edgerun/dtype.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/kv_type.hpp>

#include <set>

namespace edgerun {

namespace {

// The queries that decide whether a backend runs `node`: one per weight type involved.
std::vector<er_op_query> queries_for(const er_node& node, const WeightTable& weights, int32_t kv_type) {
    std::vector<er_op_query> out;
    auto base = sized<er_op_query>();
    base.op = node.op;
    base.weight_dtype = -1;
    base.kv_type = -1;
    base.head_dim = 0;
    if (node.op == ER_OP_ATTENTION) {
        base.kv_type = kv_type;
        base.head_dim = node.params.attention.head_dim_k;
    } else if (node.op == ER_OP_ROPE) {
        base.head_dim = node.params.rope.head_dim;
    } else if (node.op == ER_OP_RMS_NORM) {
        base.head_dim = node.params.rms_norm.group;
    }
    bool any_weight = false;
    for (int i = 0; i < ER_NODE_MAX_IO; ++i) {
        if (node.weights[i] < 0 || node.op == ER_OP_ROPE) continue;
        auto q = base;
        q.weight_dtype = weights[node.weights[i]].dtype;
        out.push_back(q);
        any_weight = true;
    }
    if (!any_weight) out.push_back(base);
    return out;
}

}  // namespace

std::string describe_op_query(const er_op_query& q) {
    std::string text = op_name(q.op);
    if (q.weight_dtype >= 0) text += " with " + std::string(dtype_name(static_cast<DType>(q.weight_dtype))) + " weights";
    if (q.op == ER_OP_ATTENTION) {
        text += std::string(q.kv_type == ER_KV_F32 || q.kv_type == ER_KV_F16 ? " with an " : " with a ") +
                kv_type_label(q.kv_type) + " KV cache";
    }
    if (q.head_dim > 0 && q.op != ER_OP_RMS_NORM) text += ", head_dim " + std::to_string(q.head_dim);
    if (q.op == ER_OP_RMS_NORM && q.head_dim > 0) text += ", groups of " + std::to_string(q.head_dim);
    return text;
}

std::vector<std::string> unsupported_ops(const Backend& backend, const Graph& graph, const WeightTable& weights,
                                         int32_t kv_type) {
    std::set<std::string> missing;
    for (const er_node& node : graph.nodes)
        for (const er_op_query& q : queries_for(node, weights, kv_type))
            if (!backend.supports(q)) missing.insert(describe_op_query(q));
    return {missing.begin(), missing.end()};
}

std::vector<uint32_t> weight_usage(const WeightTable& weights, std::initializer_list<const Graph*> graphs) {
    std::vector<uint32_t> usage(weights.size(), 0);
    for (const Graph* graph : graphs) {
        for (const er_node& node : graph->nodes) {
            uint32_t use = node.op == ER_OP_EMBED ? ER_USE_EMBED
                         : (node.op == ER_OP_MATMUL || node.op == ER_OP_MATMUL_MULTI || node.op == ER_OP_LOGITS)
                             ? ER_USE_MATMUL
                             : ER_USE_VECTOR;
            for (int i = 0; i < ER_NODE_MAX_IO; ++i) {
                if (node.weights[i] >= 0) usage[node.weights[i]] |= use;
                if (node.biases[i] >= 0) usage[node.biases[i]] |= ER_USE_VECTOR;
            }
        }
    }
    return usage;
}

}  // namespace edgerun
