// The plugin's contract beyond the math: supports(), input validation with clear errors,
// memory statistics, device argmax, and its thread count.
#include "helpers.hpp"

#include <dirent.h>

#include <chrono>
#include <cmath>
#include <thread>

using namespace cpu_ref_test;

namespace {

er_op_query query(int32_t op, int32_t dtype = -1, int32_t kv = -1, int32_t head_dim = 0) {
    auto q = sized<er_op_query>();
    q.op = op;
    q.weight_dtype = dtype;
    q.kv_type = kv;
    q.head_dim = head_dim;
    return q;
}

int thread_count() {
    int n = 0;
    DIR* dir = opendir("/proc/self/task");
    if (!dir) return -1;
    while (const dirent* e = readdir(dir))
        if (e->d_name[0] != '.') ++n;
    closedir(dir);
    return n;
}

// thread_count() once it reaches `expected`, or after 2 s: a joined thread can stay listed
// for a moment (its exit wakes the joiner before the kernel removes it), under qemu-user
// long enough to be seen.
int thread_count_settled(int expected) {
    int n = thread_count();
    for (int i = 0; i < 200 && n != expected; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        n = thread_count();
    }
    return n;
}

// The message of the exception `body` throws.
template <typename Body>
std::string error_of(Body&& body) {
    try {
        body();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("supports: every op, every decoded weight type, each KV type") {
    Backend backend = make_backend(1);
    for (int32_t op = ER_OP_EMBED; op < ER_OP_COUNT_; ++op) CHECK(backend.supports(query(op)));
    CHECK_FALSE(backend.supports(query(0)));
    CHECK_FALSE(backend.supports(query(ER_OP_COUNT_)));
    for (int32_t dtype : {0, 1, 30, 2, 3, 6, 7, 8, 10, 11, 12, 13, 14}) {
        CHECK(backend.supports(query(ER_OP_MATMUL, dtype)));
        CHECK(backend.supports(query(ER_OP_EMBED, dtype)));
        CHECK(backend.supports(query(ER_OP_LOGITS, dtype)));
    }
    for (int32_t dtype : {9, 15, 16, 20, 23, 39, 77})
        CHECK_FALSE(backend.supports(query(ER_OP_MATMUL, dtype)));
    for (int32_t kv : {ER_KV_F32, ER_KV_F16}) CHECK(backend.supports(query(ER_OP_ATTENTION, -1, kv, 80)));
    CHECK(backend.supports(query(ER_OP_ATTENTION, -1, ER_KV_Q8, 128)));
    CHECK_FALSE(backend.supports(query(ER_OP_ATTENTION, -1, ER_KV_Q8, 80)));
    CHECK_FALSE(backend.supports(query(ER_OP_ATTENTION, -1, 7, 64)));
}

TEST_CASE("the backend runs exactly the threads it was given") {
    // The baseline is taken with a backend alive: loading the plugin (and OpenBLAS, whose
    // own pool cpu_ref stops) changes the process's threads once, in ways that depend on
    // the build (sanitizers add threads of their own).
    Backend single = make_backend(1);
    const int base = thread_count();
    {
        Backend backend = make_backend(3);
        CHECK(thread_count() == base + 2);  // 2 workers; the caller is the third
    }
    CHECK(thread_count_settled(base) == base);
    CHECK(error_of([] { make_backend(1, "isa=sse9"); }).find("cpu_ref: option isa=sse9 is not available (generic") == 0);
    CHECK_THROWS_WITH(make_backend(1, "fast=yes"), "cpu_ref: unknown option 'fast' (known: isa)");
    CHECK_THROWS_WITH(make_backend(1, "isa=generic,isa=generic"), "cpu_ref: option isa is given twice");
}

TEST_CASE("model_load refuses malformed weight tables") {
    Backend backend = make_backend(1);
    Weights w;
    std::mt19937 rng(1);
    w.add_random("ok", 8, 64, 2, rng);
    auto descs = w.descs();
    auto load = [&] {
        auto p = sized<er_model_params>();
        p.weights = descs.data();
        p.n_weights = static_cast<int64_t>(descs.size());
        BackendModel model(backend, p);
    };
    CHECK_NOTHROW(load());
    descs[0].nbytes = 135;  // two rows of two Q8_0 blocks: 136
    CHECK(error_of(load) == "loading weights: weight 'ok': 135 bytes, its shape needs 136");
    descs[0].ne[0] = 48;
    descs[0].nbytes = 1000;
    CHECK(error_of(load) == "loading weights: weight 'ok': rows of 48 values are not whole Q8_0 blocks of 32");
    descs[0].ne[0] = 64;
    descs[0].dtype = 4;
    CHECK(error_of(load) == "loading weights: weight 'ok': unknown tensor type id 4");
}

TEST_CASE("plan_create names the node at fault") {
    std::mt19937 rng(2);
    Weights w;
    const int32_t mat = w.add_random("blk.0.attn_q.weight", 8, 64, 32, rng);
    const WeightTable table = w.table();
    Session s(w, context_params(16, 4, ER_KV_F32, 1, 2, 32, 32));
    auto plan_error = [&](const Graph& g) { return error_of([&] { Plan plan(s.context, g.view()); }); };

    {  // a graph for more tokens than the context's n_batch
        GraphBuilder b(table, 8);
        b.mark_output(b.matmul(b.input(64), mat));
        CHECK(plan_error(b.finish()) == "compiling graph: graph takes 8 tokens per step, the context's n_batch is 4");
    }
    {  // wrong widths (hand-edited, the builder would refuse)
        GraphBuilder b(table, 4);
        b.mark_output(b.matmul(b.input(64), mat));
        Graph g = b.finish();
        g.values[0].width = 60;
        CHECK(plan_error(g) == "compiling graph: node 0 (MATMUL): weight 'blk.0.attn_q.weight' has rows of 64 values, "
                               "the input is 60 wide");
    }
    {  // a value used before it is computed, and a bad id
        GraphBuilder b(table, 4);
        const int32_t x = b.input(64);
        b.mark_output(b.matmul(x, mat));
        Graph g = b.finish();
        g.values.push_back(er_value_desc{ER_VALUE_F32, 0, 64});
        g.nodes[0].inputs[0] = 2;
        CHECK(plan_error(g) == "compiling graph: node 0 (MATMUL): input value 2 is used before it is computed");
        g.nodes[0].inputs[0] = 9;
        CHECK(plan_error(g) == "compiling graph: node 0 (MATMUL): input value 9 does not exist");
    }
    {  // attention geometry that differs from the context's
        GraphBuilder b(table, 4);
        const er_attention_params p{4, 2, 16, 16, 0.25f};
        b.mark_output(b.attention(b.input(64), b.input(32), b.input(32), 0, p));
        CHECK(plan_error(b.finish()) == "compiling graph: node 0 (ATTENTION): KV geometry (2 heads, dims 16/16) differs "
                                        "from the context's (2, 32/32)");
    }
    {  // a KV layer the context does not have
        GraphBuilder b(table, 4);
        const er_attention_params p{4, 2, 32, 32, 0.25f};
        b.mark_output(b.attention(b.input(128), b.input(64), b.input(64), 3, p));
        CHECK(plan_error(b.finish()) == "compiling graph: node 0 (ATTENTION): KV layer 3 is not in the context's 1");
    }
    {  // a weight type cpu_ref cannot decode
        Weights w2;
        w2.add_bytes("blk.0.ffn_down.weight", 16, 256, 2, std::vector<uint8_t>(2 * 66));
        const WeightTable t2 = w2.table();
        Session s2(w2, context_params(8, 4));
        GraphBuilder b(t2, 4);
        b.mark_output(b.matmul(b.input(256), 0));
        CHECK(error_of([&] { Plan plan(s2.context, b.finish().view()); }) ==
              "compiling graph: node 0 (MATMUL): cpu_ref cannot decode IQ2_XXS weights ('blk.0.ffn_down.weight')");
    }
}

TEST_CASE("steps validate rows, positions and inputs") {
    std::mt19937 rng(3);
    Weights w;
    const int32_t mat = w.add_random("m", 8, 64, 16, rng);
    const WeightTable table = w.table();
    GraphBuilder b(table, 4);
    const int32_t x = b.input(64);
    const int32_t y = b.matmul(x, mat);
    b.mark_output(y);
    Session s(w, context_params(8, 4));
    Plan plan(s.context, b.finish().view());
    std::vector<float> in(4 * 64, 0.5f), out(4 * 16);
    CHECK(error_of([&] { plan.get_output(y, out.data(), 1); }) == "reading output: output 1: no step has run yet");
    CHECK(error_of([&] { plan.set_input(x, in.data(), 5); }) == "setting input: input 0: 5 rows, this graph takes 1 to 4");
    CHECK(error_of([&] { plan.set_input(y, in.data(), 1); }) == "setting input: value 1 is not an input of this graph");
    plan.set_input(x, in.data(), 2);
    CHECK(error_of([&] { plan.execute(3, 0, false); }) == "executing step: input 0 has 2 rows set, the step needs 3");
    CHECK(error_of([&] { plan.execute(5, 0, false); }) == "executing step: step of 5 tokens, this graph takes 1 to 4");
    CHECK(error_of([&] { plan.execute(2, 7, false); }) == "executing step: positions 7..8 do not fit the context of 8");
    CHECK(error_of([&] { plan.execute(2, -1, false); }) == "executing step: positions -1..0 do not fit the context of 8");
    plan.execute(2, 0, false);
    CHECK(error_of([&] { plan.get_output(y, out.data(), 3); }) ==
          "reading output: output 1: asked for 3 rows, the last step left 2");
    CHECK(error_of([&] { plan.get_output(x, out.data(), 1); }) == "reading output: value 0 is not an output of this graph");
}

TEST_CASE("memory_stats and argmax") {
    std::mt19937 rng(4);
    Weights w;
    std::vector<float> table(5 * 8, 0.0f);
    // Logits of a one-hot input e_0 are column 0 of the table: ties at ids 1 and 3 -> 1.
    const float column0[5] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
    for (int r = 0; r < 5; ++r) table[r * 8] = column0[r];
    const int32_t out = w.add_f32("output", 8, 5, table);
    const WeightTable t = w.table();
    GraphBuilder b(t, 2);
    const int32_t x = b.input(8);
    const int32_t logits = b.logits(x, out);
    Session s(w, context_params(32, 2, ER_KV_Q8, 3, 2, 64, 32));
    Plan plan(s.context, b.finish().view());
    const auto stats = s.context.memory_stats();
    REQUIRE(stats.has_value());
    CHECK(stats->weights_bytes == 5 * 8 * 4);
    CHECK(stats->kv_bytes == 3u * 32 * 2 * (2 * 34 + 34));  // layers * positions * heads * (K + V row)
    CHECK(stats->scratch_bytes > 0);
    float one_hot[16] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    plan.set_input(x, one_hot, 2);
    plan.execute(1, 0, false);
    CHECK(plan.argmax(logits) == 1);  // ties: the lowest id
    plan.execute(2, 0, false);        // last row: e_1, whose logits are all 0 -> id 0
    CHECK(plan.argmax(logits) == 0);
    one_hot[8] = std::nanf("");  // a NaN logit is an error naming the token, never a choice
    plan.set_input(x, one_hot, 2);
    plan.execute(2, 0, false);
    CHECK_THROWS_CONTAINING(plan.argmax(logits), "the logit of token 0 is not finite");
    {
        Plan second(s.context, b.finish().view());
        CHECK(s.context.memory_stats()->scratch_bytes > stats->scratch_bytes);
    }
    CHECK(s.context.memory_stats()->scratch_bytes == stats->scratch_bytes);
}

TEST_CASE("context_create validates its geometry") {
    Weights w;
    w.add_f32("x", 4, 1, {1, 2, 3, 4});
    Backend backend = make_backend(1);
    BackendModel model(backend, Session::model_params(w));
    auto make = [&](er_context_params p) { return error_of([&] { BackendContext c(model, p); }); };
    CHECK(make(context_params(0, 1)) == "creating context: context: n_ctx must be at least 1 (got 0)");
    CHECK(make(context_params(8, 0)) == "creating context: context: n_batch must be at least 1 (got 0)");
    CHECK(make(context_params(8, 1, 5, 1, 1, 32, 32)) == "creating context: context: unknown kv_type 5");
    CHECK(make(context_params(8, 1, ER_KV_Q8, 1, 1, 80, 80)) ==
          "creating context: context: the Q8 KV cache needs head dims that are multiples of 32 (got 80 and 80)");
    CHECK(make(context_params(8, 1, ER_KV_F32, 1, 0, 32, 32)) ==
          "creating context: context: KV geometry needs n_head_kv, head_dim_k and head_dim_v of at least 1");
}
