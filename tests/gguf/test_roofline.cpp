// Bytes per decoded token and the roofline (edgerun/roofline.hpp).
#include <edgerun/kv_type.hpp>
#include <edgerun/roofline.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

using namespace edgerun::roofline;

namespace {

er_tensor_desc weight(const char* name, int32_t dtype, int64_t ne0, int64_t ne1, uint64_t nbytes) {
    er_tensor_desc t{};
    t.name = er_str{name, std::strlen(name)};
    t.dtype = dtype;
    t.n_dims = ne1 > 1 ? 2 : 1;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = t.ne[3] = 1;
    t.nbytes = nbytes;
    return t;
}

}  // namespace

TEST_CASE("roofline: tied embeddings read token_embd once in full plus one row") {
    // Q8_0 64 x 100: rows of 2 blocks x 34 bytes.
    const std::vector<er_tensor_desc> tensors = {weight("token_embd.weight", 8, 64, 100, 6800),
                                                 weight("blk.0.attn_q.weight", 2, 64, 64, 2304),
                                                 weight("blk.0.attn_norm.weight", 0, 64, 1, 256)};
    const TokenBytes b = weight_bytes_per_token(tensors);
    CHECK(b.tied_embeddings);
    CHECK(b.lm_head == 6800);
    CHECK(b.weights == 68 + 2304 + 256 + 6800);
}

TEST_CASE("roofline: with an output matrix the embedding reads one row only") {
    const std::vector<er_tensor_desc> tensors = {weight("token_embd.weight", 8, 64, 100, 6800),
                                                 weight("output.weight", 14, 256, 100, 21000),
                                                 weight("position_embd.weight", 0, 64, 512, 131072)};
    const TokenBytes b = weight_bytes_per_token(tensors);
    CHECK(!b.tied_embeddings);
    CHECK(b.lm_head == 21000);
    CHECK(b.weights == 68 + 21000 + 256);
}

TEST_CASE("roofline: KV bytes are 2 x layers x KV heads x head_dim x ctx x bytes per value") {
    Geometry g;
    g.n_layer = 30;
    g.n_head_kv = 3;
    g.head_dim_k = g.head_dim_v = 64;
    CHECK(kv_bytes_per_token(g, 4096, ER_KV_F16) == 2ull * 30 * 3 * 64 * 4096 * 2);
    CHECK(kv_bytes_per_token(g, 4096, ER_KV_F32) == 2ull * 30 * 3 * 64 * 4096 * 4);
    CHECK(kv_bytes_per_token(g, 4096, ER_KV_Q8) == 2ull * 30 * 3 * 64 * 4096 / 32 * 34);
    g.head_dim_v = 32;  // K and V heads may differ
    CHECK(kv_bytes_per_token(g, 100, ER_KV_F16) == 30ull * 3 * (64 + 32) * 100 * 2);
    CHECK(kv_bytes_per_token(Geometry{}, 4096, ER_KV_F16) == 0);
}

TEST_CASE("roofline: tokens per second and the device table") {
    // A Qwen3-4B Q4_K_M decode step reads about 2.5 GB: at the Orin Nano's 68 GB/s that is ~27 tok/s.
    CHECK(tokens_per_second(68, 2'500'000'000) == doctest::Approx(27.2));
    CHECK(tokens_per_second(68, 0) == 0.0);
    REQUIRE(find_device("orin-nano") != nullptr);
    CHECK(find_device("orin-nano")->bandwidth_gbps == 68);
    CHECK(find_device("orin-nano-super")->bandwidth_gbps == 102);
    CHECK(find_device("orin-agx")->bandwidth_gbps == 204);
    CHECK(find_device("h100")->bandwidth_gbps == 3350);
    CHECK(find_device("tpu") == nullptr);
    CHECK(edgerun::kv_type_from_name("q8") == ER_KV_Q8);
    CHECK(!edgerun::kv_type_from_name("q4"));
    CHECK(edgerun::kv_bytes_per_value(ER_KV_Q8) == 34.0 / 32.0);
}

TEST_CASE("roofline: the total adds weights, KV and activations") {
    const std::vector<er_tensor_desc> tensors = {weight("blk.0.ffn_up.weight", 0, 64, 64, 16384)};
    Geometry g;
    g.n_layer = 2;
    g.n_head_kv = 1;
    g.head_dim_k = g.head_dim_v = 8;
    g.n_embd = 64;
    g.n_vocab = 10;
    const TokenBytes b = bytes_per_token(tensors, g, 16, ER_KV_F32);
    CHECK(b.weights == 16384);
    CHECK(b.kv == 2ull * 2 * 1 * 8 * 16 * 4);
    CHECK(b.activations == 4ull * (2 * 2 * 64 + 2 * 10));
    CHECK(b.total() == b.weights + b.kv + b.activations);
}
