// llama.cpp's per-tensor type choice (model_recipe.hpp) on tensor tables built here: the
// rules as llama.cpp's src/llama-quant.cpp states them, not a recorded table.
#include <edgerun/authoring/model_recipe.hpp>

#include <doctest/doctest.h>

#include <map>

using namespace edgerun;
using namespace edgerun::authoring;

namespace {

constexpr int32_t kF32 = int32_t(DType::F32), kF16 = int32_t(DType::F16);

// A llama-style table: tied embeddings (no output.weight), `n_embd` wide, `n_layer` layers.
std::vector<TensorInfo> llama_table(int64_t n_layer, int64_t n_embd, int64_t n_ff, int64_t n_vocab) {
    std::vector<TensorInfo> t;
    auto add = [&](std::string name, int64_t ne0, int64_t ne1) {
        t.push_back({std::move(name), ne1 > 1 ? kF16 : kF32, ne1 > 1 ? 2 : 1, {ne0, ne1, 1, 1}});
    };
    add("token_embd.weight", n_embd, n_vocab);
    add("output_norm.weight", n_embd, 1);
    for (int64_t l = 0; l < n_layer; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        add(b + "attn_norm.weight", n_embd, 1);
        add(b + "attn_q.weight", n_embd, n_embd);
        add(b + "attn_k.weight", n_embd, n_embd / 4);
        add(b + "attn_v.weight", n_embd, n_embd / 4);
        add(b + "attn_output.weight", n_embd, n_embd);
        add(b + "ffn_norm.weight", n_embd, 1);
        add(b + "ffn_gate.weight", n_embd, n_ff);
        add(b + "ffn_up.weight", n_embd, n_ff);
        add(b + "ffn_down.weight", n_ff, n_embd);
    }
    return t;
}

RecipeParams params(FileType type, int64_t n_layer, bool pure = false) {
    RecipeParams p;
    p.file_type = type;
    p.pure = pure;
    p.arch = "llama";
    p.n_layer = n_layer;
    p.n_head = 8;
    p.n_head_kv = 2;
    return p;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between.
bool more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

int64_t layer_of(const std::string& name) {
    return name.rfind("blk.", 0) == 0 ? std::stoll(name.substr(4, name.find('.', 4) - 4)) : -1;
}

bool is_k_quant(int32_t t) { return t >= int32_t(DType::Q2_K) && t <= int32_t(DType::Q8_K); }

}  // namespace

TEST_CASE("file type names: case-insensitive, file types only, and --pure also takes tensor types") {
    REQUIRE(file_type_from_name("q4_k_m"));
    CHECK(file_type_from_name("q4_k_m")->id == FileType::MOSTLY_Q4_K_M);
    CHECK(file_type_from_name("Q4_K_M")->default_type == DType::Q4_K);
    CHECK_FALSE(file_type_from_name("Q4_K"));  // a tensor type, not a file type
    CHECK_FALSE(file_type_from_name("Q4_K_X"));
    for (const FileTypeInfo& f : file_types()) {
        REQUIRE(file_type_from_name(f.name));
        CHECK(file_type_from_name(f.name)->id == f.id);
        CHECK(file_type_names().find(std::string(f.name)) != std::string::npos);
        // A pure file of the default type records a file type whose default it is.
        const auto pure = pure_file_type_from_name(dtype_name(f.default_type));
        REQUIRE(pure);
        CHECK(pure->default_type == f.default_type);
    }
    CHECK(pure_file_type_from_name("Q4_K")->id == FileType::MOSTLY_Q4_K_M);  // llama-quantize's choice for pure K-quants
}

TEST_CASE("Q4_K_M: the default type, Q6_K for the tied LM head, more bits on attn_v and ffn_down in llama.cpp's layers") {
    const int64_t n_layer = 16;
    const auto tensors = llama_table(n_layer, 512, 1024, 1000);
    const auto types = plan_tensor_types(tensors, params(FileType::MOSTLY_Q4_K_M, n_layer));
    REQUIRE(types.size() == tensors.size());
    int more = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const std::string& name = tensors[i].name;
        CAPTURE(name);
        if (tensors[i].n_dims == 1) {
            CHECK(types[i] == kF32);  // norms are never quantized
            CHECK_FALSE(tensor_is_quantizable(tensors[i], "llama"));
            continue;
        }
        CHECK(tensor_is_quantizable(tensors[i], "llama"));
        const bool sensitive = name.find("attn_v") != std::string::npos || name.find("ffn_down") != std::string::npos;
        if (name == "token_embd.weight") {
            CHECK(types[i] == int32_t(DType::Q6_K));  // no output.weight: it is the LM head
        } else if (sensitive && more_bits(layer_of(name), n_layer)) {
            CHECK(types[i] == int32_t(DType::Q6_K));
            ++more;
        } else {
            CHECK(types[i] == int32_t(DType::Q4_K));
        }
    }
    CHECK(more > 0);
}

TEST_CASE("rows that are not whole K-quant blocks fall back: Q4_K to Q5_0, Q6_K to Q8_0") {
    const int64_t n_layer = 8;
    const auto tensors = llama_table(n_layer, 576, 1536, 1000);  // SmolLM2's widths: 576 = 2.25 blocks of 256
    const auto types = plan_tensor_types(tensors, params(FileType::MOSTLY_Q4_K_M, n_layer));
    const auto reference = plan_tensor_types(llama_table(n_layer, 512, 1536, 1000), params(FileType::MOSTLY_Q4_K_M, n_layer));
    for (size_t i = 0; i < tensors.size(); ++i) {
        CAPTURE(tensors[i].name);
        if (tensors[i].n_dims == 1) continue;
        if (tensors[i].ne[0] % 256 == 0) {
            CHECK(types[i] == reference[i]);  // ffn_down rows are 1536 wide: no fallback
        } else {
            CHECK_FALSE(is_k_quant(types[i]));
            if (reference[i] == int32_t(DType::Q4_K)) CHECK(types[i] == int32_t(DType::Q5_0));
            if (reference[i] == int32_t(DType::Q6_K)) CHECK(types[i] == int32_t(DType::Q8_0));
        }
    }
}

TEST_CASE("--pure: the one type on every quantizable tensor, and F16 and F32 files convert every matrix") {
    const auto tensors = llama_table(4, 512, 1024, 1000);
    for (FileType ft : {FileType::MOSTLY_Q8_0, FileType::MOSTLY_Q4_0, FileType::MOSTLY_F16, FileType::ALL_F32}) {
        const auto types = plan_tensor_types(tensors, params(ft, 4, true));
        int32_t want = -1;
        for (const FileTypeInfo& f : file_types())
            if (f.id == ft) want = int32_t(f.default_type);
        for (size_t i = 0; i < tensors.size(); ++i) {
            CAPTURE(tensors[i].name);
            CHECK(types[i] == (tensors[i].n_dims == 1 ? kF32 : want));
        }
    }
}
