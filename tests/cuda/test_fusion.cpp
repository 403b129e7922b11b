// Which MATMULs cuda_orin fuses with their consumer (plugins/cuda_orin/gemv_fusion.hpp),
// on a hand-made graph with each pattern and each reason not to fuse.
#include <doctest/doctest.h>

#include "../graph_nodes.hpp"
#include "gemv_fusion.hpp"

#include <vector>

using namespace edgerun::cuda_orin;

using edgerun::testing::graph_node;

TEST_CASE("GEMV fusion: a residual ADD or a gate/up SWIGLU read only by that node, and nothing else") {
    const std::vector<er_node> nodes = {
        graph_node(ER_OP_RMS_NORM, {0}, {1}),           // 0
        graph_node(ER_OP_MATMUL, {1}, {2}),             // 1: fused with 2, residual 0 (a graph input)
        graph_node(ER_OP_ADD, {2, 0}, {3}),             // 2
        graph_node(ER_OP_MATMUL_MULTI, {3}, {4, 5}),    // 3: fused with 4 (SwiGLU)
        graph_node(ER_OP_SWIGLU, {4, 5}, {6}),          // 4
        graph_node(ER_OP_MATMUL, {6}, {7}),             // 5: fused with 6, residual 3 (first input)
        graph_node(ER_OP_ADD, {3, 7}, {8}),             // 6
        graph_node(ER_OP_MATMUL, {8}, {9}),             // 7: not fused: the residual comes after it
        graph_node(ER_OP_RMS_NORM, {8}, {10}),          // 8
        graph_node(ER_OP_ADD, {9, 10}, {11}),           // 9
        graph_node(ER_OP_MATMUL, {11}, {12}),           // 10: not fused: the host reads its output
        graph_node(ER_OP_ADD, {12, 11}, {13}),          // 11
        graph_node(ER_OP_MATMUL, {13}, {14}),           // 12: not fused: its output is read twice
        graph_node(ER_OP_ADD, {14, 13}, {15}),          // 13
        graph_node(ER_OP_ADD, {14, 15}, {16}),          // 14
        graph_node(ER_OP_MATMUL_MULTI, {16}, {17, 18}), // 15: not fused: up and gate swapped
        graph_node(ER_OP_SWIGLU, {18, 17}, {19}),       // 16
        graph_node(ER_OP_MATMUL, {19}, {20}),           // 17: not fused: x + x
        graph_node(ER_OP_ADD, {20, 20}, {21}),          // 18
    };
    std::vector<er_value_desc> values(22, er_value_desc{ER_VALUE_F32, 0, 64});
    values[0].flags = ER_VALUE_INPUT;
    values[12].flags = ER_VALUE_OUTPUT;
    values[21].flags = ER_VALUE_OUTPUT;
    const er_graph graph{sizeof(er_graph), 4, int32_t(nodes.size()), nodes.data(), int32_t(values.size()), values.data()};

    const std::vector<GemvFusion> f = find_gemv_fusions(graph);
    REQUIRE(f.size() == nodes.size());
    CHECK(f[1].kind == GemvFusion::kResidual);
    CHECK(f[1].consumer == 2);
    CHECK(f[1].residual == 0);
    CHECK(f[3].kind == GemvFusion::kSwiGLU);
    CHECK(f[3].consumer == 4);
    CHECK(f[5].kind == GemvFusion::kResidual);
    CHECK(f[5].consumer == 6);
    CHECK(f[5].residual == 3);
    for (size_t i : {0, 2, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}) {
        CAPTURE(i);
        CHECK(f[i].kind == GemvFusion::kNone);
    }

    // A fused MATMUL's input lives until its consumer has run; other values keep theirs.
    std::vector<int32_t> last_use(values.size(), -1);
    for (int32_t i = 0; i < graph.n_nodes; ++i)
        for (int32_t k = 0; k < nodes[size_t(i)].n_inputs; ++k) last_use[size_t(nodes[size_t(i)].inputs[k])] = i;
    const std::vector<int32_t> extended = extend_fused_lifetimes(graph, f, last_use);
    CHECK(extended[1] == 2);  // the MATMUL at 1 read it last; its ADD is node 2
    CHECK(extended[3] == 6);  // read until node 6 anyway
    CHECK(extended[6] == 6);  // the MATMUL at 5 read it last; its ADD is node 6
    CHECK(extended[8] == 8);  // not fused
    for (size_t v = 0; v < values.size(); ++v)
        if (v != 1 && v != 6) CHECK(extended[v] == last_use[v]);
}
