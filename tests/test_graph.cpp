#include <doctest/doctest.h>

#include <edgerun/backend_support.hpp>
#include <edgerun/graph.hpp>
#include <edgerun/host_api.hpp>

#include <vector>

using namespace edgerun;

namespace {

er_tensor_desc tensor(const char* name, int32_t dtype, std::vector<int64_t> ne) {
    er_tensor_desc t{};
    t.name = er_str{name, std::char_traits<char>::length(name)};
    t.dtype = dtype;
    t.n_dims = static_cast<int32_t>(ne.size());
    for (size_t i = 0; i < ne.size(); ++i) t.ne[i] = ne[i];
    return t;
}

}  // namespace

TEST_CASE("the builder derives widths from weight shapes and records the graph's ends") {
    WeightTable w({tensor("tok", 0, {8, 32}), tensor("norm", 0, {8}), tensor("q", 12, {8, 16}),
                   tensor("k", 12, {8, 4}), tensor("v", 14, {8, 4})});
    GraphBuilder b(w, 4);
    int32_t x = b.embed(b.tokens(), w.require("tok"));
    int32_t h = b.rms_norm(x, w.require("norm"), 1e-6f);
    auto qkv = b.matmul_multi(h, {{w.require("q")}, {w.require("k")}, {w.require("v")}});
    b.logits(h, w.require("tok"));
    Graph g = b.finish();

    CHECK(g.max_tokens == 4);
    CHECK(g.values[x].width == 8);
    CHECK(g.values[qkv[0]].width == 16);
    CHECK(g.values[qkv[2]].width == 4);
    CHECK(g.values[g.logits_output].width == 32);
    CHECK((g.values[g.tokens_input].flags & ER_VALUE_INPUT) != 0);
    CHECK((g.values[g.logits_output].flags & ER_VALUE_OUTPUT) != 0);
    CHECK(g.nodes[2].op == ER_OP_MATMUL_MULTI);
    CHECK(g.nodes[2].n_outputs == 3);

    auto usage = weight_usage(w, {&g});
    CHECK(usage[0] == (ER_USE_EMBED | ER_USE_MATMUL));
    CHECK(usage[1] == ER_USE_VECTOR);
}

TEST_CASE("shape mistakes are caught when the graph is built, naming the tensor") {
    WeightTable w({tensor("tok", 0, {8, 32}), tensor("bad", 12, {16, 4})});
    GraphBuilder b(w, 1);
    int32_t x = b.embed(b.tokens(), 0);
    CHECK_THROWS_WITH_AS(b.matmul(x, 1), "tensor 'bad' has rows of 16 values but its input is 8 wide", Error);
    CHECK_THROWS_WITH_AS(w.require("nope"), "model has no tensor 'nope'", Error);
}
