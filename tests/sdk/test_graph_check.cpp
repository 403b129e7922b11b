// The SDK's graph checks (edgerun/graph_check.hpp) on hand-built graphs: a valid graph
// passes and says what the backend needs; each kind of fault is refused with its code
// and a message naming the node or value.
#include <edgerun/graph_check.hpp>

#include <doctest/doctest.h>

#include "../graph_nodes.hpp"

#include <string>
#include <vector>

namespace {

using edgerun::sdk::check_graph;
using edgerun::sdk::CheckedGraph;
using edgerun::sdk::Failure;
using edgerun::sdk::WeightShape;

// Weights of a one-layer model of width 8, 2 heads of 4 (1 KV head), vocabulary 10.
struct Weight {
    std::string name;
    int32_t dtype;
    int64_t rows, cols;
};
const std::vector<Weight> kWeights = {
    {"token_embd", 8, 10, 8},  // 0
    {"attn_norm", 0, 1, 8},    // 1
    {"attn_q", 8, 8, 8},       // 2
    {"attn_k", 8, 4, 8},       // 3
    {"attn_v", 8, 4, 8},       // 4
    {"q_bias", 0, 1, 8},       // 5
    {"odd_type", 12, 8, 8},    // 6: a type the test backend refuses
};

using edgerun::testing::graph_node;

struct TestGraph {
    std::vector<er_value_desc> values;
    std::vector<er_node> nodes;
    int32_t max_tokens = 4;

    er_graph view() const {
        return er_graph{sizeof(er_graph), max_tokens, int32_t(nodes.size()), nodes.data(), int32_t(values.size()),
                        values.data()};
    }
};

// tokens -> embed -> norm -> q, k, v -> attention -> output.
TestGraph valid_graph() {
    TestGraph g;
    g.values = {{ER_VALUE_I32, ER_VALUE_INPUT, 1}, {ER_VALUE_F32, 0, 8}, {ER_VALUE_F32, 0, 8},
                {ER_VALUE_F32, 0, 8},             {ER_VALUE_F32, 0, 4}, {ER_VALUE_F32, 0, 4},
                {ER_VALUE_F32, ER_VALUE_OUTPUT, 8}};
    g.nodes.push_back(graph_node(ER_OP_EMBED, {0}, {1}, {0}));
    er_node norm = graph_node(ER_OP_RMS_NORM, {1}, {2}, {1});
    norm.params.rms_norm = {1e-6f, 8};
    g.nodes.push_back(norm);
    er_node qkv = graph_node(ER_OP_MATMUL_MULTI, {2}, {3, 4, 5}, {2, 3, 4});
    qkv.biases[0] = 5;
    g.nodes.push_back(qkv);
    er_node attn = graph_node(ER_OP_ATTENTION, {3, 4, 5}, {6});
    attn.layer = 0;
    attn.params.attention = {2, 1, 4, 4, 0.5f};
    g.nodes.push_back(attn);
    return g;
}

er_context_params context() {
    er_context_params c{};
    c.struct_size = sizeof c;
    c.n_ctx = 16;
    c.n_batch = 4;
    c.kv_type = ER_KV_F32;
    c.n_layer = 1;
    c.n_head_kv = 1;
    c.head_dim_k = 4;
    c.head_dim_v = 4;
    return c;
}

CheckedGraph run(const TestGraph& g, const er_context_params& c = context()) {
    return check_graph(g.view(), c, int64_t(kWeights.size()), [](int32_t index, const std::string& label) {
        const Weight& w = kWeights[size_t(index)];
        if (w.dtype == 12) throw Failure(ER_E_UNSUPPORTED, label + ": cannot run '" + w.name + "'");
        return WeightShape{w.name, w.dtype, w.rows, w.cols};
    });
}

// The failure's code and message; {0, ""} when the graph passed.
std::pair<er_status, std::string> refusal(const TestGraph& g, const er_context_params& c = context()) {
    try {
        run(g, c);
    } catch (const Failure& f) {
        return {f.code(), f.what()};
    }
    return {ER_OK, ""};
}

}  // namespace

TEST_CASE("graph check: a valid graph passes and says who computes and reads each value") {
    const CheckedGraph checked = run(valid_graph());
    CHECK(checked.has_attention);
    CHECK(checked.producer == std::vector<int32_t>{-1, 0, 1, 2, 2, 2, 3});
    CHECK(checked.last_use == std::vector<int32_t>{0, 1, 2, 3, 3, 3, -1});

    TestGraph no_attention = valid_graph();
    no_attention.nodes.pop_back();
    no_attention.values[6].flags = 0;
    CHECK_FALSE(run(no_attention).has_attention);
}

TEST_CASE("graph check: values used out of order, twice assigned, or never computed") {
    TestGraph g = valid_graph();
    std::swap(g.nodes[0], g.nodes[1]);
    CHECK(refusal(g) == std::pair<er_status, std::string>{
                            ER_E_INVALID_ARGUMENT, "node 0 (RMS_NORM): input value 1 is used before it is computed"});

    g = valid_graph();
    g.nodes[1].outputs[0] = 1;
    CHECK(refusal(g).second == "node 1 (RMS_NORM): output value 1 is assigned twice (or is a host input)");

    g = valid_graph();
    g.nodes.pop_back();
    CHECK(refusal(g).second == "output value 6 is never computed");

    g = valid_graph();
    g.nodes[0].inputs[0] = 1;  // EMBED of a float value
    CHECK(refusal(g).second == "node 0 (EMBED): input value 1 is used before it is computed");
    g = valid_graph();
    g.nodes[1].inputs[0] = 0;  // RMS_NORM of token ids
    CHECK(refusal(g).second == "node 1 (RMS_NORM): input value 0 must be F32");
}

TEST_CASE("graph check: shapes against the weights and the context") {
    TestGraph g = valid_graph();
    g.values[4].width = 5;
    CHECK(refusal(g).second == "node 2 (MATMUL_MULTI): output value 4 is 5 wide, expected 4");

    g = valid_graph();
    g.nodes[2].biases[1] = 5;  // an 8-wide bias on a 4-row output
    CHECK(refusal(g).second == "node 2 (MATMUL_MULTI): bias 'q_bias' must be one row of 4 values");

    g = valid_graph();
    g.nodes[1].params.rms_norm.group = 3;
    CHECK(refusal(g).second == "node 1 (RMS_NORM): group 3 does not divide the input width 8");

    g = valid_graph();
    g.nodes[2].weights[0] = 99;
    CHECK(refusal(g).second == "node 2 (MATMUL_MULTI): weight index 99 is not in the model's table of 7");

    er_context_params c = context();
    c.head_dim_k = 8;
    CHECK(refusal(valid_graph(), c).second ==
          "node 3 (ATTENTION): KV geometry (1 heads, dims 4/4) differs from the context's (1, 8/4)");
    c = context();
    c.n_batch = 2;
    CHECK(refusal(valid_graph(), c).second == "graph takes 4 tokens per step, the context's n_batch is 2");

    g = valid_graph();
    g.nodes[3].params.attention.n_head_kv = 2;
    g.nodes[3].params.attention.n_head = 3;
    CHECK(refusal(g).second == "node 3 (ATTENTION): 3 query heads do not share 2 KV heads evenly");
}

TEST_CASE("graph check: unknown ops and weights the backend refuses are UNSUPPORTED") {
    TestGraph g = valid_graph();
    g.nodes[1].op = 42;
    CHECK(refusal(g) == std::pair<er_status, std::string>{ER_E_UNSUPPORTED, "node 1 (?): unknown op 42"});

    g = valid_graph();
    g.nodes[2].weights[0] = 6;
    CHECK(refusal(g) ==
          std::pair<er_status, std::string>{ER_E_UNSUPPORTED, "node 2 (MATMUL_MULTI): cannot run 'odd_type'"});
}
