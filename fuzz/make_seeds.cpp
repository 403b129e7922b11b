// Writes small valid GGUF files (from the test builder) as the fuzzer's seed corpus:
// the shapes the reader must accept, so mutations start next to every code path.
#include "gguf_builder.hpp"

#include <fstream>
#include <iostream>
#include <string>

using namespace gguf_test;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: gguf_fuzz_seeds DIR\n";
        return 2;
    }
    const std::string dir = argv[1];
    const auto save = [&](const std::string& name, const Builder& b) {
        const std::string bytes = b.build();
        std::ofstream(dir + "/" + name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };

    save("tiny_llama.gguf", tiny_llama());
    Builder v2 = tiny_llama();
    v2.version = 2;
    save("tiny_llama_v2.gguf", v2);
    Builder aligned = tiny_llama();
    aligned.alignment = 64;
    aligned.kv("general.alignment", u32(64));
    save("aligned64.gguf", aligned);
    save("empty.gguf", Builder{});

    Builder types;
    types.kv("u8", u8(1)).kv("i8", i8(-1)).kv("u16", u16(2)).kv("i16", i16(-2)).kv("u32", u32(3)).kv("i32", i32(-3))
        .kv("u64", u64(4)).kv("i64", i64(-4)).kv("f32", f32(0.5f)).kv("f64", f64(0.25)).kv("bool", boolean(true))
        .kv("str", str("text")).kv("a_f32", array_of<float>(T_F32, {1.0f, 2.0f}))
        .kv("a_str", str_array({"x", "yz"}))
        .kv("nested", nested_array({array_of<uint16_t>(T_U16, {1, 2}), nested_array({str_array({"deep"})})}));
    types.tensor("scalar", 0, {}).tensor("cube", 30, {4, 2, 2, 2}).tensor("k", 12, {256, 2});
    save("all_types.gguf", types);

    Builder spm;
    spm.kv("general.architecture", str("llama"))
        .kv("llama.context_length", u32(64)).kv("llama.embedding_length", u32(32)).kv("llama.block_count", u32(1))
        .kv("llama.feed_forward_length", u32(64)).kv("llama.attention.head_count", array_of<uint32_t>(T_U32, {4}))
        .kv("llama.attention.key_length", u32(8)).kv("llama.rope.scaling.type", str("linear"))
        .kv("llama.rope.scaling.factor", f32(2.0f))
        .kv("tokenizer.ggml.model", str("llama"))
        .kv("tokenizer.ggml.tokens", str_array({"<unk>", "<s>", "</s>", "\xe2\x96\x81" "a"}))
        .kv("tokenizer.ggml.scores", array_of<float>(T_F32, {0, 0, 0, -1}))
        .kv("tokenizer.ggml.token_type", array_of<int32_t>(T_I32, {2, 3, 3, 1}))
        .kv("tokenizer.ggml.bos_token_id", u32(1)).kv("tokenizer.ggml.add_bos_token", boolean(true))
        .kv("tokenizer.chat_template", str("{{ messages }}"));
    spm.tensor("token_embd.weight", 8, {32, 4}).tensor("output.weight", 2, {32, 4});
    save("spm_model.gguf", spm);
    return 0;
}
