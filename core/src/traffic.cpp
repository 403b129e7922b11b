#include <edgerun/dtype.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/kv_type.hpp>
#include <edgerun/traffic.hpp>

namespace edgerun {

StepTraffic decode_traffic(const Graph& graph, const WeightTable& weights, int64_t kv_len, int32_t kv_type) {
    StepTraffic step;
    for (int32_t n = 0; n < int32_t(graph.nodes.size()); ++n) {
        const er_node& node = graph.nodes[n];
        auto record = [&](int32_t output, int32_t weight, bool whole) {
            OpTraffic t;
            t.node = n;
            t.op = node.op;
            t.layer = node.layer;
            t.output = output;
            if (weight >= 0) {
                const er_tensor_desc& w = weights[weight];
                t.tensor = to_string(w.name);
                t.dtype = w.dtype;
                t.cols = w.ne[0];
                t.rows = w.n_dims >= 2 ? w.ne[1] : 1;
                // An embedding lookup reads one row; everything else reads the whole tensor.
                t.weight_bytes = whole ? w.nbytes : row_bytes(w.dtype, w.ne[0]).value_or(0);
            }
            return t;
        };
        switch (node.op) {
            case ER_OP_EMBED: step.ops.push_back(record(0, node.weights[0], false)); break;
            case ER_OP_ATTENTION: {
                OpTraffic t = record(0, -1, true);
                const auto& a = node.params.attention;
                t.kv_bytes = uint64_t(double(kv_len) * a.n_head_kv * (a.head_dim_k + a.head_dim_v) *
                                      kv_bytes_per_value(kv_type));
                step.ops.push_back(t);
                break;
            }
            default:
                for (int32_t i = 0; i < std::max(node.n_outputs, 1); ++i) {
                    OpTraffic t = record(i, node.weights[i], true);
                    if (node.biases[i] >= 0) t.weight_bytes += weights[node.biases[i]].nbytes;
                    step.ops.push_back(t);
                }
        }
    }
    for (const OpTraffic& t : step.ops) {
        step.weight_bytes += t.weight_bytes;
        step.kv_bytes += t.kv_bytes;
    }
    return step;
}

}  // namespace edgerun
