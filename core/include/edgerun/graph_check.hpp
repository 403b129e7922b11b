// The checks every backend makes of a graph at plan_create, written once (header-only
// like the rest of the SDK): the value table, each node's arity, value types, widths,
// weight shapes and op parameters, against the model's weights and the context's KV
// geometry. A backend hands over its view of the weights and gets back what it needs to
// know of a valid graph; an invalid one throws sdk::Failure naming the node or value.
//
//   const auto checked = edgerun::sdk::check_graph(*graph, ctx.params, model.weights.size(),
//       [&](int32_t index, const std::string& node) {
//           const MyWeight& w = model.weights[index];
//           if (!can_run(w.dtype)) throw Failure(ER_E_UNSUPPORTED, node + ": cannot run " + ...);
//           return edgerun::sdk::WeightShape{w.name, w.dtype, w.rows, w.cols};
//       });
//
// What stays the backend's: which weight types it runs (its weight callback refuses the
// others), and what it does with a valid graph.
#pragma once

#include <edgerun/abi.h>
#include <edgerun/plugin_sdk.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::sdk {

// A weight as the checks see it: rows of `cols` values (cols = ne[0], rows = the product
// of the other dimensions).
struct WeightShape {
    std::string_view name;
    int32_t dtype = -1;
    int64_t rows = 0;
    int64_t cols = 0;
};

// What a valid graph tells its backend.
struct CheckedGraph {
    bool has_attention = false;
    // Per value: the node that computes it (-1 for host inputs).
    std::vector<int32_t> producer;
    // Per value: the last node that reads it (-1 when none does).
    std::vector<int32_t> last_use;
};

inline std::string node_label(const er_node& node, int32_t index) {
    return "node " + std::to_string(index) + " (" + er_op_name(node.op) + ")";
}

namespace graph_check_detail {

struct ValueState {
    int32_t type = ER_VALUE_F32;
    uint32_t flags = 0;
    int64_t width = 0;
    bool computed = false;
};

template <class WeightAt>
void check_node(const er_node& node, int32_t index, const er_context_params& context, int64_t n_weights,
                WeightAt& weight_at_index, std::vector<ValueState>& values, CheckedGraph& out) {
    const std::string label = node_label(node, index);
    auto fail = [&](const std::string& what) { return Failure(ER_E_INVALID_ARGUMENT, label + ": " + what); };
    auto weight_at = [&](int32_t slot) -> WeightShape {
        const int32_t w = node.weights[slot];
        if (w < 0 || w >= n_weights)
            throw fail("weight index " + std::to_string(w) + " is not in the model's table of " +
                       std::to_string(n_weights));
        return weight_at_index(w, label);
    };
    int32_t want_in = 0, max_out = 1;
    switch (node.op) {
        case ER_OP_EMBED: case ER_OP_MATMUL: case ER_OP_RMS_NORM: case ER_OP_ROPE: case ER_OP_LOGITS: want_in = 1; break;
        case ER_OP_MATMUL_MULTI: want_in = 1, max_out = ER_NODE_MAX_IO; break;
        case ER_OP_SWIGLU: case ER_OP_ADD: want_in = 2; break;
        case ER_OP_ATTENTION: want_in = 3; break;
        default: throw Failure(ER_E_UNSUPPORTED, label + ": unknown op " + std::to_string(node.op));
    }
    if (node.n_inputs != want_in) throw fail("takes " + std::to_string(want_in) + " inputs, has " + std::to_string(node.n_inputs));
    if (node.n_outputs < 1 || node.n_outputs > max_out) throw fail("has " + std::to_string(node.n_outputs) + " outputs");
    const int32_t n_values = static_cast<int32_t>(values.size());
    for (int32_t k = 0; k < node.n_inputs; ++k) {
        const int32_t v = node.inputs[k];
        if (v < 0 || v >= n_values) throw fail("input value " + std::to_string(v) + " does not exist");
        if (!values[v].computed) throw fail("input value " + std::to_string(v) + " is used before it is computed");
        const int32_t want_type = node.op == ER_OP_EMBED ? ER_VALUE_I32 : ER_VALUE_F32;
        if (values[v].type != want_type)
            throw fail("input value " + std::to_string(v) + (want_type == ER_VALUE_I32 ? " must be I32 token ids" : " must be F32"));
    }
    for (int32_t k = 0; k < node.n_outputs; ++k) {
        const int32_t v = node.outputs[k];
        if (v < 0 || v >= n_values) throw fail("output value " + std::to_string(v) + " does not exist");
        if (values[v].computed) throw fail("output value " + std::to_string(v) + " is assigned twice (or is a host input)");
        if (values[v].type != ER_VALUE_F32) throw fail("output value " + std::to_string(v) + " must be F32");
        values[v].computed = true;
        out.producer[v] = index;
    }
    for (int32_t k = 0; k < node.n_inputs; ++k) out.last_use[node.inputs[k]] = index;
    auto width = [&](int32_t v) { return values[v].width; };
    auto expect_width = [&](int32_t v, int64_t want, const char* what) {
        if (width(v) != want)
            throw fail(std::string(what) + " value " + std::to_string(v) + " is " + std::to_string(width(v)) +
                       " wide, expected " + std::to_string(want));
    };
    auto check_matmul = [&](int32_t slot, bool allow_bias) {
        const WeightShape w = weight_at(slot);
        if (w.cols != width(node.inputs[0]))
            throw fail("weight '" + std::string(w.name) + "' has rows of " + std::to_string(w.cols) +
                       " values, the input is " + std::to_string(width(node.inputs[0])) + " wide");
        expect_width(node.outputs[slot], w.rows, "output");
        const int32_t b = node.biases[slot];
        if (b >= 0) {
            if (!allow_bias) throw fail("takes no bias");
            if (b >= n_weights) throw fail("bias index " + std::to_string(b) + " does not exist");
            const WeightShape bias = weight_at_index(b, label);
            if (bias.rows != 1 || bias.cols != w.rows)
                throw fail("bias '" + std::string(bias.name) + "' must be one row of " + std::to_string(w.rows) + " values");
        }
    };
    switch (node.op) {
        case ER_OP_EMBED: {
            const WeightShape w = weight_at(0);
            expect_width(node.inputs[0], 1, "token");
            expect_width(node.outputs[0], w.cols, "output");
            break;
        }
        case ER_OP_MATMUL: case ER_OP_MATMUL_MULTI:
            for (int32_t k = 0; k < node.n_outputs; ++k) check_matmul(k, true);
            break;
        case ER_OP_LOGITS: check_matmul(0, false); break;
        case ER_OP_RMS_NORM: {
            const er_rms_norm_params& p = node.params.rms_norm;
            if (p.group < 1 || width(node.inputs[0]) % p.group != 0)
                throw fail("group " + std::to_string(p.group) + " does not divide the input width " +
                           std::to_string(width(node.inputs[0])));
            if (!(p.eps >= 0.0f) || !std::isfinite(p.eps)) throw fail("eps must be finite and >= 0");
            const WeightShape w = weight_at(0);
            if (w.rows != 1 || w.cols != p.group)
                throw fail("weight '" + std::string(w.name) + "' must be one row of " + std::to_string(p.group) + " values");
            expect_width(node.outputs[0], width(node.inputs[0]), "output");
            break;
        }
        case ER_OP_ROPE: {
            const er_rope_params& p = node.params.rope;
            if (p.mode != ER_ROPE_NORMAL && p.mode != ER_ROPE_NEOX) throw fail("unknown rope mode " + std::to_string(p.mode));
            if (p.head_dim < 1 || width(node.inputs[0]) % p.head_dim != 0)
                throw fail("head_dim " + std::to_string(p.head_dim) + " does not divide the input width");
            if (p.n_rot < 2 || p.n_rot > p.head_dim || p.n_rot % 2 != 0)
                throw fail("n_rot " + std::to_string(p.n_rot) + " must be even and in [2, head_dim]");
            if (!(p.freq_base > 0.0f) || !(p.freq_scale > 0.0f) || !std::isfinite(p.freq_base) || !std::isfinite(p.freq_scale))
                throw fail("freq_base and freq_scale must be positive");
            if (node.weights[0] >= 0) {
                const WeightShape w = weight_at(0);
                if (w.rows != 1 || w.cols != p.n_rot / 2)
                    throw fail("frequency factors '" + std::string(w.name) + "' must be one row of " +
                               std::to_string(p.n_rot / 2) + " values");
            }
            expect_width(node.outputs[0], width(node.inputs[0]), "output");
            break;
        }
        case ER_OP_ATTENTION: {
            const er_attention_params& p = node.params.attention;
            const er_context_params& c = context;
            if (p.n_head < 1 || p.n_head_kv < 1 || p.n_head % p.n_head_kv != 0)
                throw fail(std::to_string(p.n_head) + " query heads do not share " + std::to_string(p.n_head_kv) + " KV heads evenly");
            if (p.n_head_kv != c.n_head_kv || p.head_dim_k != c.head_dim_k || p.head_dim_v != c.head_dim_v)
                throw fail("KV geometry (" + std::to_string(p.n_head_kv) + " heads, dims " + std::to_string(p.head_dim_k) +
                           "/" + std::to_string(p.head_dim_v) + ") differs from the context's (" +
                           std::to_string(c.n_head_kv) + ", " + std::to_string(c.head_dim_k) + "/" +
                           std::to_string(c.head_dim_v) + ")");
            if (node.layer < 0 || node.layer >= c.n_layer)
                throw fail("KV layer " + std::to_string(node.layer) + " is not in the context's " + std::to_string(c.n_layer));
            if (!std::isfinite(p.scale)) throw fail("scale is not finite");
            expect_width(node.inputs[0], int64_t{p.n_head} * p.head_dim_k, "q");
            expect_width(node.inputs[1], int64_t{p.n_head_kv} * p.head_dim_k, "k");
            expect_width(node.inputs[2], int64_t{p.n_head_kv} * p.head_dim_v, "v");
            expect_width(node.outputs[0], int64_t{p.n_head} * p.head_dim_v, "output");
            out.has_attention = true;
            break;
        }
        case ER_OP_SWIGLU: case ER_OP_ADD:
            expect_width(node.inputs[1], width(node.inputs[0]), "second input");
            expect_width(node.outputs[0], width(node.inputs[0]), "output");
            break;
    }
}

}  // namespace graph_check_detail

// Checks `graph` for a context with `context`'s batch size and KV geometry and a model of
// n_weights weights. weight_at(index, node_label) -> WeightShape is called for every
// weight a node uses (index already bounds-checked); it throws sdk::Failure for a weight
// the backend cannot run, naming node_label. Throws sdk::Failure for an invalid graph.
template <class WeightAt>
CheckedGraph check_graph(const er_graph& graph, const er_context_params& context, int64_t n_weights,
                         WeightAt&& weight_at) {
    if (graph.struct_size < sizeof(er_graph)) throw Failure(ER_E_INVALID_ARGUMENT, "graph struct is too small");
    if (graph.max_tokens < 1)
        throw Failure(ER_E_INVALID_ARGUMENT, "graph max_tokens must be at least 1 (got " +
                                                 std::to_string(graph.max_tokens) + ")");
    if (graph.max_tokens > context.n_batch)
        throw Failure(ER_E_INVALID_ARGUMENT, "graph takes " + std::to_string(graph.max_tokens) +
                                                 " tokens per step, the context's n_batch is " +
                                                 std::to_string(context.n_batch));
    if (graph.n_values < 0 || graph.n_nodes < 0 || (graph.n_values > 0 && !graph.values) ||
        (graph.n_nodes > 0 && !graph.nodes))
        throw Failure(ER_E_INVALID_ARGUMENT, "graph has no value or node table");
    std::vector<graph_check_detail::ValueState> values(static_cast<size_t>(graph.n_values));
    for (int32_t v = 0; v < graph.n_values; ++v) {
        const er_value_desc& d = graph.values[v];
        if (d.type != ER_VALUE_F32 && d.type != ER_VALUE_I32)
            throw Failure(ER_E_INVALID_ARGUMENT, "value " + std::to_string(v) + " has unknown type " + std::to_string(d.type));
        if (d.width < 1 || d.width > (int64_t{1} << 31))
            throw Failure(ER_E_INVALID_ARGUMENT, "value " + std::to_string(v) + " has width " + std::to_string(d.width));
        if (d.type == ER_VALUE_I32 && !(d.flags & ER_VALUE_INPUT))
            throw Failure(ER_E_INVALID_ARGUMENT, "value " + std::to_string(v) + " is I32 but not a host input");
        values[v] = {d.type, d.flags, d.width, (d.flags & ER_VALUE_INPUT) != 0};
    }
    CheckedGraph out;
    out.producer.assign(values.size(), -1);
    out.last_use.assign(values.size(), -1);
    for (int32_t i = 0; i < graph.n_nodes; ++i)
        graph_check_detail::check_node(graph.nodes[i], i, context, n_weights, weight_at, values, out);
    for (int32_t v = 0; v < graph.n_values; ++v)
        if ((values[v].flags & ER_VALUE_OUTPUT) && !values[v].computed)
            throw Failure(ER_E_INVALID_ARGUMENT, "output value " + std::to_string(v) + " is never computed");
    return out;
}

}  // namespace edgerun::sdk
