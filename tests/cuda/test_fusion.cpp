// Which nodes cuda_orin runs inside another node's launch (plugins/cuda_orin/fusion.hpp),
// on hand-made graphs with each pattern and each reason not to fuse.
#include <doctest/doctest.h>

#include "../graph_nodes.hpp"
#include "fusion.hpp"

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

    const Fusions fusions = find_fusions(graph);
    const std::vector<GemvFusion>& f = fusions.gemv;
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
    for (size_t i = 0; i < nodes.size(); ++i) {
        CAPTURE(i);
        CHECK(f[i].norm == -1);  // node 0 normalises heads of 0 values, not whole rows
        CHECK(fusions.absorbed_by[i] == (i == 2 ? 1 : i == 4 ? 3 : i == 6 ? 5 : -1));
    }

    // A fused MATMUL's input lives until its consumer has run; other values keep theirs.
    std::vector<int32_t> last_use(values.size(), -1);
    for (int32_t i = 0; i < graph.n_nodes; ++i)
        for (int32_t k = 0; k < nodes[size_t(i)].n_inputs; ++k) last_use[size_t(nodes[size_t(i)].inputs[k])] = i;
    const std::vector<int32_t> extended = extend_fused_lifetimes(graph, fusions, last_use);
    CHECK(extended[1] == 2);  // the MATMUL at 1 read it last; its ADD is node 2
    CHECK(extended[3] == 6);  // read until node 6 anyway
    CHECK(extended[6] == 6);  // the MATMUL at 5 read it last; its ADD is node 6
    CHECK(extended[8] == 8);  // not fused
    for (size_t v = 0; v < values.size(); ++v)
        if (v != 1 && v != 6) CHECK(extended[v] == last_use[v]);
}

namespace {

std::vector<int32_t> last_uses(const std::vector<er_node>& nodes, size_t n_values) {
    std::vector<int32_t> last_use(n_values, -1);
    for (size_t i = 0; i < nodes.size(); ++i)
        for (int32_t k = 0; k < nodes[i].n_inputs; ++k) last_use[size_t(nodes[i].inputs[k])] = int32_t(i);
    return last_use;
}

er_node norm(int32_t in, int32_t out, int32_t weight, int32_t group) {
    er_node n = graph_node(ER_OP_RMS_NORM, {in}, {out}, {weight});
    n.params.rms_norm = {1e-6f, group};
    return n;
}

er_node rope(int32_t in, int32_t out, int32_t head_dim, float base = 10000.0f) {
    er_node n = graph_node(ER_OP_ROPE, {in}, {out});
    n.params.rope = {ER_ROPE_NEOX, head_dim, head_dim, base, 1.0f};
    return n;
}

er_node attention(int32_t q, int32_t k, int32_t v, int32_t out, int32_t head_dim) {
    er_node n = graph_node(ER_OP_ATTENTION, {q, k, v}, {out});
    n.params.attention = {4, 2, head_dim, head_dim, 0.25f};
    return n;
}

}  // namespace

TEST_CASE("GEMV prologue: a whole-row RMS_NORM read only by the GEMV after it") {
    const std::vector<er_node> nodes = {
        norm(0, 1, 0, 64),                              // 0: fused into 1
        graph_node(ER_OP_MATMUL_MULTI, {1}, {2, 3}),    // 1
        norm(0, 4, 0, 16),                              // 2: not fused: per head
        graph_node(ER_OP_MATMUL, {4}, {5}),             // 3
        norm(0, 6, 0, 64),                              // 4: not fused: read twice
        graph_node(ER_OP_MATMUL, {6}, {7}),             // 5
        graph_node(ER_OP_ADD, {6, 7}, {8}),             // 6
        norm(8, 9, 0, 64),                              // 7: fused into 8
        graph_node(ER_OP_LOGITS, {9}, {10}),            // 8
        norm(8, 11, 0, 64),                             // 9: not fused: the host reads it
        graph_node(ER_OP_MATMUL, {11}, {12}),           // 10
    };
    std::vector<er_value_desc> values(13, er_value_desc{ER_VALUE_F32, 0, 64});
    values[0].flags = ER_VALUE_INPUT;
    values[10].flags = values[11].flags = values[12].flags = ER_VALUE_OUTPUT;
    const er_graph graph{sizeof(er_graph), 1, int32_t(nodes.size()), nodes.data(), int32_t(values.size()), values.data()};

    const Fusions f = find_fusions(graph);
    for (size_t i = 0; i < nodes.size(); ++i) {
        CAPTURE(i);
        CHECK(f.gemv[i].norm == (i == 1 ? 0 : i == 8 ? 7 : -1));
        CHECK(f.absorbed_by[i] == (i == 0 ? 1 : i == 7 ? 8 : i == 6 ? 5 : -1));
        CHECK(f.attention[i].q_rope == -1);
    }
    // The GEMV reads the norm's input: it lives until the GEMV (or its consumer).
    const std::vector<int32_t> last_use = last_uses(nodes, values.size());
    const std::vector<int32_t> extended = extend_fused_lifetimes(graph, f, last_use);
    CHECK(last_use[0] == 4);
    CHECK(extended[0] == 4);  // already read later than the GEMV at 1
    CHECK(last_use[8] == 9);
    CHECK(extended[8] == 9);
    CHECK(extended[6] == 6);  // the MATMUL at 5 fused with its ADD
}

TEST_CASE("Decode attention: per-head norms and RoPEs of q and k run in rope_append") {
    const int32_t hd = 16;
    const std::vector<er_node> nodes = {
        // Qwen3: q and k normalised per head, then rotated.
        graph_node(ER_OP_MATMUL_MULTI, {0}, {1, 2, 3}),  // 0
        norm(1, 4, 0, hd),                                // 1
        norm(2, 5, 1, hd),                                // 2
        rope(4, 6, hd),                                   // 3
        rope(5, 7, hd),                                   // 4
        attention(6, 7, 3, 8, hd),                        // 5: absorbs 1-4
        // Llama: rotated only.
        graph_node(ER_OP_MATMUL_MULTI, {8}, {9, 10, 11}), // 6
        rope(9, 12, hd),                                  // 7
        rope(10, 13, hd),                                 // 8
        attention(12, 13, 11, 14, hd),                    // 9: absorbs 7-8
        // Not fused: q's source is also read by an ADD (rotating it in place would change it).
        graph_node(ER_OP_MATMUL_MULTI, {14}, {15, 16, 17}),  // 10
        rope(15, 18, hd),                                    // 11
        rope(16, 19, hd),                                    // 12
        attention(18, 19, 17, 20, hd),                       // 13
        graph_node(ER_OP_ADD, {15, 20}, {21}),               // 14
        // Not fused: q and k rotated with different bases.
        graph_node(ER_OP_MATMUL_MULTI, {21}, {22, 23, 24}),  // 15
        rope(22, 25, hd),                                    // 16
        rope(23, 26, hd, 500000.0f),                         // 17
        attention(25, 26, 24, 27, hd),                       // 18
        // k's norm also read elsewhere: the norm runs, the RoPEs still fuse (k from the norm).
        graph_node(ER_OP_MATMUL_MULTI, {27}, {28, 29, 30}),  // 19
        norm(29, 31, 1, hd),                                 // 20
        rope(28, 32, hd),                                    // 21
        rope(31, 33, hd),                                    // 22
        attention(32, 33, 30, 34, hd),                       // 23
        graph_node(ER_OP_ADD, {31, 34}, {35}),               // 24
    };
    std::vector<er_value_desc> values(36, er_value_desc{ER_VALUE_F32, 0, 64});
    values[0].flags = ER_VALUE_INPUT;
    values[35].flags = ER_VALUE_OUTPUT;
    const er_graph graph{sizeof(er_graph), 1, int32_t(nodes.size()), nodes.data(), int32_t(values.size()), values.data()};

    const Fusions f = find_fusions(graph);
    const AttentionFusion& qwen3 = f.attention[5];
    CHECK(qwen3.q_rope == 3);
    CHECK(qwen3.k_rope == 4);
    CHECK(qwen3.q_norm == 1);
    CHECK(qwen3.k_norm == 2);
    CHECK(qwen3.q == 1);
    CHECK(qwen3.k == 2);
    const AttentionFusion& llama = f.attention[9];
    CHECK(llama.q_rope == 7);
    CHECK(llama.k_rope == 8);
    CHECK(llama.q_norm == -1);
    CHECK(llama.k_norm == -1);
    CHECK(llama.q == 9);
    CHECK(llama.k == 10);
    CHECK(f.attention[13].q_rope == -1);
    CHECK(f.attention[18].q_rope == -1);
    const AttentionFusion& shared_norm = f.attention[23];
    CHECK(shared_norm.q_rope == 21);
    CHECK(shared_norm.k_rope == 22);
    CHECK(shared_norm.k_norm == -1);
    CHECK(shared_norm.k == 31);
    // rope_append=gemv: the Q/K/V GEMV whose outputs are q, k and v before the chains.
    CHECK(qwen3.qkv == 0);
    CHECK(llama.qkv == 6);
    CHECK(shared_norm.qkv == -1);  // k comes from the norm, not from the GEMV
    CHECK(f.gemv[0].rope_append == 5);
    CHECK(f.gemv[6].rope_append == 9);
    CHECK(f.gemv[10].rope_append == -1);
    CHECK(f.gemv[19].rope_append == -1);
    for (size_t i = 0; i < nodes.size(); ++i) {
        CAPTURE(i);
        const int32_t by = i >= 1 && i <= 4 ? 5 : i == 7 || i == 8 ? 9 : i == 21 || i == 22 ? 23 : -1;
        CHECK(f.absorbed_by[i] == by);
        if (nodes[i].op != ER_OP_ATTENTION) CHECK(f.attention[i].q_rope == -1);
    }
    // What rope_append reads lives until the attention.
    const std::vector<int32_t> extended = extend_fused_lifetimes(graph, f, last_uses(nodes, values.size()));
    CHECK(extended[1] == 5);
    CHECK(extended[2] == 5);
    CHECK(extended[9] == 9);
    CHECK(extended[10] == 9);
    CHECK(extended[31] == 24);  // read by the ADD after the attention anyway
    CHECK(extended[15] == 14);  // not fused
}

TEST_CASE("rope_append in the Q/K/V GEMV: only when one GEMV's outputs 0, 1, 2 are q, k and v") {
    const int32_t hd = 16;
    const std::vector<er_node> nodes = {
        // v from a GEMV of its own.
        graph_node(ER_OP_MATMUL_MULTI, {0}, {1, 2}),  // 0
        graph_node(ER_OP_MATMUL, {0}, {3}),           // 1
        rope(1, 4, hd),                               // 2
        rope(2, 5, hd),                               // 3
        attention(4, 5, 3, 6, hd),                    // 4
        // The outputs in the order k, q, v.
        graph_node(ER_OP_MATMUL_MULTI, {6}, {7, 8, 9}),  // 5
        rope(8, 10, hd),                                 // 6
        rope(7, 11, hd),                                 // 7
        attention(10, 11, 9, 12, hd),                    // 8
    };
    std::vector<er_value_desc> values(13, er_value_desc{ER_VALUE_F32, 0, 64});
    values[0].flags = ER_VALUE_INPUT;
    values[12].flags = ER_VALUE_OUTPUT;
    const er_graph graph{sizeof(er_graph), 1, int32_t(nodes.size()), nodes.data(), int32_t(values.size()), values.data()};
    const Fusions f = find_fusions(graph);
    for (int32_t a : {4, 8}) {
        CAPTURE(a);
        CHECK(f.attention[size_t(a)].q_rope >= 0);  // the RoPEs still run in rope_append
        CHECK(f.attention[size_t(a)].qkv == -1);
    }
    for (const GemvFusion& g : f.gemv) CHECK(g.rope_append == -1);
}

TEST_CASE("8-bit x handed from GEMV to GEMV: the one GEMV reading what another writes") {
    const std::vector<er_node> nodes = {
        norm(0, 1, 0, 64),                               // 0: fused into 1
        graph_node(ER_OP_MATMUL, {1}, {2}),              // 1: makes 2's x
        graph_node(ER_OP_MATMUL, {2}, {3}),              // 2: fused with 3; makes 5's x (through 4)
        graph_node(ER_OP_ADD, {3, 0}, {4}),              // 3
        norm(4, 5, 0, 64),                               // 4: fused into 5
        graph_node(ER_OP_MATMUL_MULTI, {5}, {6, 7}),     // 5: SwiGLU 6; makes 7's x
        graph_node(ER_OP_SWIGLU, {6, 7}, {8}),           // 6
        graph_node(ER_OP_MATMUL, {8}, {9}),              // 7: fused with 8; makes 10's x (through 9)
        graph_node(ER_OP_ADD, {9, 4}, {10}),             // 8
        norm(10, 11, 0, 64),                             // 9: fused into 10
        graph_node(ER_OP_LOGITS, {11}, {12}),            // 10
        // Not handed: x read by two GEMVs, and a GEMV of two outputs without SwiGLU.
        graph_node(ER_OP_MATMUL, {0}, {13}),             // 11
        graph_node(ER_OP_MATMUL, {13}, {14}),            // 12
        graph_node(ER_OP_MATMUL, {13}, {15}),            // 13
        graph_node(ER_OP_MATMUL_MULTI, {0}, {16, 17}),   // 14
        graph_node(ER_OP_MATMUL, {16}, {18}),            // 15
    };
    std::vector<er_value_desc> values(19, er_value_desc{ER_VALUE_F32, 0, 64});
    values[0].flags = ER_VALUE_INPUT;
    for (int v : {12, 14, 15, 17, 18}) values[size_t(v)].flags = ER_VALUE_OUTPUT;
    const er_graph graph{sizeof(er_graph), 1, int32_t(nodes.size()), nodes.data(), int32_t(values.size()), values.data()};

    const Fusions f = find_fusions(graph);
    struct Pair {
        int32_t maker, reader, slot;
    };
    // Each maker writes the slot its reader reads, never one a reader still has to read:
    // here they alternate, as a layer's GEMVs follow one another.
    const Pair pairs[] = {{1, 2, 0}, {2, 5, 1}, {5, 7, 0}, {7, 10, 1}};
    for (size_t i = 0; i < nodes.size(); ++i) {
        CAPTURE(i);
        int32_t reader = -1, slot = -1, maker = -1;
        for (const Pair& p : pairs) {
            if (p.maker == int32_t(i)) reader = p.reader, slot = p.slot;
            if (p.reader == int32_t(i)) maker = p.maker;
        }
        CHECK(f.gemv[i].q8_reader == reader);
        CHECK(f.gemv[i].q8_slot == slot);
        CHECK(f.gemv[i].q8_maker == maker);
    }
}

TEST_CASE("8-bit x handed from GEMV to GEMV: a pair whose slots are both still to be read is left out") {
    // 0 makes 3's x and 1 makes 2's: both slots are taken until 2 and 3 have read them, so
    // 2, which would make 4's, finds none.
    const std::vector<er_node> nodes = {
        graph_node(ER_OP_MATMUL, {0}, {1}),  // 0
        graph_node(ER_OP_MATMUL, {0}, {2}),  // 1
        graph_node(ER_OP_MATMUL, {2}, {3}),  // 2
        graph_node(ER_OP_MATMUL, {1}, {4}),  // 3
        graph_node(ER_OP_MATMUL, {3}, {5}),  // 4
    };
    std::vector<er_value_desc> values(6, er_value_desc{ER_VALUE_F32, 0, 64});
    values[0].flags = ER_VALUE_INPUT;
    values[4].flags = values[5].flags = ER_VALUE_OUTPUT;
    const er_graph graph{sizeof(er_graph), 1, int32_t(nodes.size()), nodes.data(), int32_t(values.size()), values.data()};
    const Fusions f = find_fusions(graph);
    CHECK(f.gemv[1].q8_reader == 2);
    CHECK(f.gemv[1].q8_slot == 0);
    CHECK(f.gemv[0].q8_reader == 3);
    CHECK(f.gemv[0].q8_slot == 1);
    CHECK(f.gemv[2].q8_reader == -1);
    CHECK(f.gemv[4].q8_maker == -1);
}

TEST_CASE("8-bit x made by the attention's merge: the one GEMV reading its output, no norm or GEMV between") {
    const int32_t hd = 16;
    const std::vector<er_node> nodes = {
        attention(0, 1, 2, 3, hd),                  // 0: makes 1's x
        graph_node(ER_OP_MATMUL, {3}, {4}),         // 1
        attention(4, 1, 2, 5, hd),                  // 2: not: its reader's input is normalised first
        norm(5, 6, 7, 64),                          // 3: fused into 4
        graph_node(ER_OP_MATMUL, {6}, {8}),         // 4
        attention(8, 1, 2, 9, hd),                  // 5: not: a GEMV runs between it and its reader
        graph_node(ER_OP_MATMUL, {8}, {10}),        // 6
        graph_node(ER_OP_MATMUL_MULTI, {9}, {11, 12}),  // 7
        attention(11, 1, 2, 13, hd),                // 8: not: its output is read twice
        graph_node(ER_OP_MATMUL, {13}, {14}),       // 9
        graph_node(ER_OP_ADD, {13, 14}, {15}),      // 10
        attention(15, 1, 2, 16, hd),                // 11: makes 12's x (a MATMUL_MULTI)
        graph_node(ER_OP_MATMUL_MULTI, {16}, {17, 18}),  // 12
        attention(17, 1, 2, 19, hd),                // 13: not: its output goes to the host too
        graph_node(ER_OP_MATMUL, {19}, {20}),       // 14
    };
    std::vector<er_value_desc> values(21, er_value_desc{ER_VALUE_F32, 0, 64});
    for (int v : {0, 1, 2, 7}) values[size_t(v)].flags = ER_VALUE_INPUT;
    for (int v : {10, 12, 18, 19, 20}) values[size_t(v)].flags = ER_VALUE_OUTPUT;
    const er_graph graph{sizeof(er_graph), 1, int32_t(nodes.size()), nodes.data(), int32_t(values.size()), values.data()};
    const Fusions f = find_fusions(graph);
    const int32_t readers[][2] = {{0, 1}, {11, 12}};
    for (size_t i = 0; i < nodes.size(); ++i) {
        CAPTURE(i);
        int32_t reader = -1, maker = -1;
        for (const auto& r : readers) {
            if (r[0] == int32_t(i)) reader = r[1];
            if (r[1] == int32_t(i)) maker = r[0];
        }
        CHECK(f.attention[i].q8_reader == reader);
        CHECK(f.gemv[i].q8_merge == maker);
    }
}
