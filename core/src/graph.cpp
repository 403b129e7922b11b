#include <edgerun/dtype.hpp>
#include <edgerun/graph.hpp>
#include <edgerun/host_api.hpp>

namespace edgerun {

WeightTable::WeightTable(std::vector<er_tensor_desc> tensors) : tensors_(std::move(tensors)) {
    for (int32_t i = 0; i < size(); ++i) index_.emplace(to_string(tensors_[i].name), i);
}

int32_t WeightTable::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? -1 : it->second;
}

int32_t WeightTable::require(const std::string& name) const {
    int32_t index = find(name);
    if (index < 0) throw Error("model has no tensor '" + name + "'", ER_E_FORMAT);
    return index;
}

GraphBuilder::GraphBuilder(const WeightTable& weights, int32_t max_tokens) : weights_(weights) {
    if (max_tokens < 1) throw Error("a graph needs room for at least one token", ER_E_INVALID_ARGUMENT);
    graph_.max_tokens = max_tokens;
}

int32_t GraphBuilder::new_value(int32_t type, int64_t width) {
    graph_.values.push_back(er_value_desc{type, 0, width});
    return static_cast<int32_t>(graph_.values.size() - 1);
}

er_node& GraphBuilder::new_node(int32_t op) {
    er_node node{};
    node.op = op;
    node.layer = layer_;
    for (int i = 0; i < ER_NODE_MAX_IO; ++i) node.inputs[i] = node.outputs[i] = node.weights[i] = node.biases[i] = -1;
    graph_.nodes.push_back(node);
    return graph_.nodes.back();
}

int64_t GraphBuilder::width(int32_t value) const { return graph_.values.at(value).width; }

int64_t GraphBuilder::weight_rows(int32_t weight) const {
    const er_tensor_desc& t = weights_[weight];
    return t.n_dims >= 2 ? t.ne[1] : 1;
}

void GraphBuilder::check_matmul(int32_t x, int32_t weight, int32_t bias) const {
    const er_tensor_desc& w = weights_[weight];
    if (w.n_dims != 2 || w.ne[0] != width(x))
        throw Error("tensor '" + to_string(w.name) + "' has rows of " + std::to_string(w.ne[0]) +
                        " values but its input is " + std::to_string(width(x)) + " wide",
                    ER_E_FORMAT);
    if (bias >= 0 && weights_[bias].ne[0] != w.ne[1])
        throw Error("bias '" + to_string(weights_[bias].name) + "' does not match '" + to_string(w.name) + "'",
                    ER_E_FORMAT);
}

int32_t GraphBuilder::tokens() {
    graph_.tokens_input = new_value(ER_VALUE_I32, 1);
    graph_.values[graph_.tokens_input].flags |= ER_VALUE_INPUT;
    return graph_.tokens_input;
}

int32_t GraphBuilder::input(int64_t width) {
    int32_t value = new_value(ER_VALUE_F32, width);
    graph_.values[value].flags |= ER_VALUE_INPUT;
    return value;
}

void GraphBuilder::mark_output(int32_t value) { graph_.values.at(value).flags |= ER_VALUE_OUTPUT; }

int32_t GraphBuilder::embed(int32_t tokens, int32_t table) {
    int32_t out = new_value(ER_VALUE_F32, weights_[table].ne[0]);
    er_node& node = new_node(ER_OP_EMBED);
    node.n_inputs = 1, node.inputs[0] = tokens;
    node.n_outputs = 1, node.outputs[0] = out;
    node.weights[0] = table;
    return out;
}

int32_t GraphBuilder::matmul(int32_t x, int32_t weight, int32_t bias) {
    check_matmul(x, weight, bias);
    int32_t out = new_value(ER_VALUE_F32, weight_rows(weight));
    er_node& node = new_node(ER_OP_MATMUL);
    node.n_inputs = 1, node.inputs[0] = x;
    node.n_outputs = 1, node.outputs[0] = out;
    node.weights[0] = weight, node.biases[0] = bias;
    return out;
}

std::vector<int32_t> GraphBuilder::matmul_multi(int32_t x, std::initializer_list<Projection> projections) {
    if (projections.size() < 1 || projections.size() > ER_NODE_MAX_IO)
        throw Error("a multi-output matmul takes 1 to 4 projections", ER_E_INVALID_ARGUMENT);
    std::vector<int32_t> outs;
    for (const auto& p : projections) {
        check_matmul(x, p.weight, p.bias);
        outs.push_back(new_value(ER_VALUE_F32, weight_rows(p.weight)));
    }
    er_node& node = new_node(ER_OP_MATMUL_MULTI);
    node.n_inputs = 1, node.inputs[0] = x;
    node.n_outputs = static_cast<int32_t>(outs.size());
    int i = 0;
    for (const auto& p : projections) {
        node.outputs[i] = outs[i];
        node.weights[i] = p.weight;
        node.biases[i] = p.bias;
        ++i;
    }
    return outs;
}

int32_t GraphBuilder::rms_norm(int32_t x, int32_t weight, float eps) {
    if (weights_[weight].ne[0] != width(x))
        throw Error("norm '" + to_string(weights_[weight].name) + "' does not match its input width", ER_E_FORMAT);
    return rms_norm_heads(x, weight, eps);
}

int32_t GraphBuilder::rms_norm_heads(int32_t x, int32_t weight, float eps) {
    const int64_t group = weights_[weight].ne[0];
    if (group <= 0 || width(x) % group != 0)
        throw Error("norm '" + to_string(weights_[weight].name) + "' of " + std::to_string(group) +
                        " values does not divide its input of " + std::to_string(width(x)),
                    ER_E_FORMAT);
    int32_t out = new_value(ER_VALUE_F32, width(x));
    er_node& node = new_node(ER_OP_RMS_NORM);
    node.n_inputs = 1, node.inputs[0] = x;
    node.n_outputs = 1, node.outputs[0] = out;
    node.weights[0] = weight;
    node.params.rms_norm = er_rms_norm_params{eps, static_cast<int32_t>(group)};
    return out;
}

int32_t GraphBuilder::rope(int32_t x, const er_rope_params& params, int32_t freq_factors) {
    if (params.head_dim <= 0 || width(x) % params.head_dim != 0 || params.n_rot > params.head_dim ||
        params.n_rot % 2 != 0)
        throw Error("rope: head_dim " + std::to_string(params.head_dim) + " / n_rot " + std::to_string(params.n_rot) +
                        " do not fit a row of " + std::to_string(width(x)),
                    ER_E_FORMAT);
    if (freq_factors >= 0 && weights_[freq_factors].ne[0] != params.n_rot / 2)
        throw Error("rope frequency factors '" + to_string(weights_[freq_factors].name) + "' need " +
                        std::to_string(params.n_rot / 2) + " values",
                    ER_E_FORMAT);
    int32_t out = new_value(ER_VALUE_F32, width(x));
    er_node& node = new_node(ER_OP_ROPE);
    node.n_inputs = 1, node.inputs[0] = x;
    node.n_outputs = 1, node.outputs[0] = out;
    node.weights[0] = freq_factors;
    node.params.rope = params;
    return out;
}

int32_t GraphBuilder::attention(int32_t q, int32_t k, int32_t v, int32_t layer, const er_attention_params& p) {
    if (p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0 || width(q) != int64_t{p.n_head} * p.head_dim_k ||
        width(k) != int64_t{p.n_head_kv} * p.head_dim_k || width(v) != int64_t{p.n_head_kv} * p.head_dim_v)
        throw Error("attention: q/k/v widths do not match " + std::to_string(p.n_head) + " heads, " +
                        std::to_string(p.n_head_kv) + " KV heads",
                    ER_E_FORMAT);
    int32_t out = new_value(ER_VALUE_F32, int64_t{p.n_head} * p.head_dim_v);
    er_node& node = new_node(ER_OP_ATTENTION);
    node.layer = layer;
    node.n_inputs = 3, node.inputs[0] = q, node.inputs[1] = k, node.inputs[2] = v;
    node.n_outputs = 1, node.outputs[0] = out;
    node.params.attention = p;
    return out;
}

int32_t GraphBuilder::swiglu(int32_t gate, int32_t up) {
    if (width(gate) != width(up)) throw Error("swiglu: gate and up differ in width", ER_E_FORMAT);
    int32_t out = new_value(ER_VALUE_F32, width(gate));
    er_node& node = new_node(ER_OP_SWIGLU);
    node.n_inputs = 2, node.inputs[0] = gate, node.inputs[1] = up;
    node.n_outputs = 1, node.outputs[0] = out;
    return out;
}

int32_t GraphBuilder::add(int32_t a, int32_t b) {
    if (width(a) != width(b)) throw Error("add: operands differ in width", ER_E_FORMAT);
    int32_t out = new_value(ER_VALUE_F32, width(a));
    er_node& node = new_node(ER_OP_ADD);
    node.n_inputs = 2, node.inputs[0] = a, node.inputs[1] = b;
    node.n_outputs = 1, node.outputs[0] = out;
    return out;
}

int32_t GraphBuilder::logits(int32_t x, int32_t weight) {
    check_matmul(x, weight, -1);
    int32_t out = new_value(ER_VALUE_F32, weight_rows(weight));
    er_node& node = new_node(ER_OP_LOGITS);
    node.n_inputs = 1, node.inputs[0] = x;
    node.n_outputs = 1, node.outputs[0] = out;
    node.weights[0] = weight;
    mark_output(out);
    graph_.logits_output = out;
    return out;
}

Graph GraphBuilder::finish() { return std::move(graph_); }

const char* op_name(int32_t op) { return er_op_name(op); }

void Graph::require_tokens_to_logits(const char* which) const {
    if (tokens_input < 0 || logits_output < 0)
        throw Error(std::string(which) + " graph must start from tokens and end in logits", ER_E_INVALID_ARGUMENT);
}

}  // namespace edgerun
