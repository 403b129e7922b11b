// Malformed GGUF files: each is refused at open with one exact, one-line ER_E_FORMAT
// message naming the field or tensor, and nothing crashes or over-allocates (the suite
// also runs under ASan/UBSan with -DEDGERUN_SANITIZE=ON).
//
// Decision on names: metadata keys and tensor names must be printable UTF-8 (they are
// identifiers, and the GGUF spec says strings are UTF-8); string *values* such as token
// texts are not checked, because byte-level vocabularies legitimately hold any bytes.
#include "gguf_fixture.hpp"

using namespace gguf_test;

namespace {

std::string header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    std::string out = "GGUF";
    put<uint32_t>(out, version);
    put<uint64_t>(out, n_tensors);
    put<uint64_t>(out, n_kv);
    return out;
}

// tiny_llama with one tensor changed.
std::string with_tensor(size_t index, void (*change)(TensorSpec&), Layout* layout = nullptr) {
    Builder b = tiny_llama();
    change(b.tensors[index]);
    return b.build(layout);
}

std::string u64_text(uint64_t v) { return std::to_string(v); }

}  // namespace

// ---------------------------------------------------------------- header --

TEST_CASE("malformed: empty file") { CHECK(open_error("") == "not a GGUF file: it is only 0 bytes long"); }

TEST_CASE("malformed: shorter than the magic") { CHECK(open_error("GGU") == "not a GGUF file: it is only 3 bytes long"); }

TEST_CASE("malformed: bad magic") {
    Builder b = tiny_llama();
    std::memcpy(b.magic, "GGML", 4);
    CHECK(open_error(b.build()) == "not a GGUF file: magic is 'GGML' (47 47 4d 4c), expected 'GGUF'");
}

TEST_CASE("malformed: binary magic is shown in hex") {
    CHECK(open_error(std::string("\x7f" "ELF\x02\x01\x01\x00", 8)) ==
          "not a GGUF file: magic is '?ELF' (7f 45 4c 46), expected 'GGUF'");
}

TEST_CASE("malformed: GGUF v1 is refused") {
    CHECK(open_error(header(1, 0, 0)) == "GGUF v1 is not supported (this reader reads v2 and v3)");
}

TEST_CASE("malformed: future version 4") {
    CHECK(open_error(header(4, 0, 0)) == "unsupported GGUF version 4 (this reader reads v2 and v3)");
}

TEST_CASE("malformed: version 0") {
    CHECK(open_error(header(0, 0, 0)) == "unsupported GGUF version 0 (this reader reads v2 and v3)");
}

TEST_CASE("malformed: big-endian file") {
    // A big-endian writer stores version 3 as 00 00 00 03, which reads 0x03000000 here.
    std::string bytes = "GGUF";
    bytes += std::string("\0\0\0\3", 4);
    bytes += std::string(16, '\0');
    CHECK(open_error(bytes) ==
          "big-endian GGUF file (version field reads 50331648, byte-swapped 3): only little-endian files are supported");
}

TEST_CASE("malformed: truncated inside the version") {
    CHECK(open_error(std::string("GGUF\3\0", 6)) == "header (version): the file ends at byte 6, 4 bytes are needed at offset 4");
}

TEST_CASE("malformed: truncated inside the header counts") {
    CHECK(open_error(tiny_llama().build().substr(0, 12)) ==
          "header (tensor count): the file ends at byte 12, 8 bytes are needed at offset 8");
    CHECK(open_error(tiny_llama().build().substr(0, 20)) ==
          "header (metadata count): the file ends at byte 20, 8 bytes are needed at offset 16");
}

TEST_CASE("malformed: absurd tensor count (2^60)") {
    Builder b = tiny_llama();
    b.tensor_count = uint64_t{1} << 60;
    Layout layout;
    const std::string bytes = b.build(&layout);
    CHECK(open_error(bytes) == "tensor count 1152921504606846976 cannot fit in the " +
                                   std::to_string(bytes.size() - layout.tensor_info_begin[0]) + " bytes left for tensor infos");
}

TEST_CASE("malformed: absurd metadata count (2^60)") {
    Builder b = tiny_llama();
    b.kv_count = uint64_t{1} << 60;
    const std::string bytes = b.build();
    CHECK(open_error(bytes) == "metadata count 1152921504606846976 cannot fit in the " + std::to_string(bytes.size() - 24) +
                                   " bytes after the header");
}

// -------------------------------------------------------------- metadata --

TEST_CASE("malformed: truncated inside a metadata key") {
    Builder b;
    b.kv("general.architecture", str("llama"));
    CHECK(open_error(b.build().substr(0, 24 + 8 + 10)) ==
          "metadata entry 0 (key): string length 20 runs past the end of the file (10 bytes left at offset 32)");
}

TEST_CASE("malformed: truncated so early that the metadata count cannot fit") {
    CHECK(open_error(tiny_llama().build().substr(0, 35)) == "metadata count 19 cannot fit in the 11 bytes after the header");
}

TEST_CASE("malformed: truncated inside a metadata value type") {
    Layout layout;
    const std::string full = tiny_llama().build(&layout);
    const uint64_t type_at = layout.kv_begin[18] + 8 + std::string("tokenizer.ggml.add_bos_token").size();
    CHECK(open_error(full.substr(0, type_at + 2)) == "metadata key 'tokenizer.ggml.add_bos_token': the file ends at byte " + u64_text(type_at + 2) +
                                                         ", 4 bytes are needed at offset " + u64_text(type_at));
}

TEST_CASE("malformed: truncated inside a u32 metadata value") {
    Layout layout;
    const std::string full = tiny_llama().build(&layout);
    const uint64_t value_at = layout.kv_begin[16] + 8 + std::string("tokenizer.ggml.bos_token_id").size() + 4;
    CHECK(open_error(full.substr(0, value_at + 2)) == "metadata key 'tokenizer.ggml.bos_token_id': the file ends at byte " +
                                                          u64_text(value_at + 2) + ", 4 bytes are needed at offset " + u64_text(value_at));
}

TEST_CASE("malformed: truncated inside a string array") {
    Layout layout;
    const std::string full = tiny_llama().build(&layout);
    const uint64_t elements_at = layout.kv_begin[13] + 8 + std::string("tokenizer.ggml.tokens").size() + 4 + 12;
    CHECK(open_error(full.substr(0, elements_at + 40)) ==
          "metadata key 'tokenizer.ggml.tokens': array of 8 string elements cannot fit in the 40 bytes left in the file");
    // Enough bytes for the count check, but the last string ends past the file.
    const uint64_t last = elements_at + 7 * 8 + 3 + 4 + 1 + 1 + 2 + 2 + 3;  // after "<s>" ... "Ġa"
    CHECK(open_error(full.substr(0, last + 8)) ==
          "metadata key 'tokenizer.ggml.tokens': string length 1 runs past the end of the file (0 bytes left at offset " +
              u64_text(last + 8) + ")");
}

TEST_CASE("malformed: metadata string length 2^40") {
    Builder b;
    b.kv("general.name", Value{T_STRING, [] { std::string p; put<uint64_t>(p, uint64_t{1} << 40); return p + "abc"; }()});
    CHECK(open_error(b.build()) == "metadata key 'general.name': string length 1099511627776 runs past the end of the file "
                                   "(3 bytes left at offset " + u64_text(24 + 8 + 12 + 4 + 8) + ")");
}

TEST_CASE("malformed: metadata key length 2^40") {
    std::string bytes = header(3, 0, 1);
    put<uint64_t>(bytes, uint64_t{1} << 40);
    bytes += std::string(23, 'k');
    CHECK(open_error(bytes) == "metadata entry 0 (key): string length 1099511627776 runs past the end of the file (23 bytes left at offset 32)");
}

TEST_CASE("malformed: array count 2^60") {
    Builder b;
    b.kv("big", raw_array(T_U32, uint64_t{1} << 60, ""));
    CHECK(open_error(b.build()) == "metadata key 'big': array of 1152921504606846976 u32 elements cannot fit in the 0 bytes left in the file");
}

TEST_CASE("malformed: array-of-arrays bomb") {
    // 2^40 inner arrays claimed in a few bytes: refused before any index is allocated.
    Builder b;
    b.kv("bomb", raw_array(T_ARRAY, uint64_t{1} << 40, std::string(24, '\0')));
    CHECK(open_error(b.build()) == "metadata key 'bomb': array of 1099511627776 array elements cannot fit in the 24 bytes left in the file");
}

TEST_CASE("malformed: inner array of a nested array lies about its count") {
    Builder b;
    b.kv("nested", nested_array({array_of<uint32_t>(T_U32, {1, 2}), raw_array(T_U64, 1000, "")}));
    CHECK(open_error(b.build()) == "metadata key 'nested': array of 1000 u64 elements cannot fit in the 0 bytes left in the file");
}

TEST_CASE("malformed: arrays nested nine deep") {
    Value v = array_of<uint8_t>(T_U8, {1});
    for (int level = 1; level < 9; ++level) v = nested_array({v});
    Builder b;
    b.kv("deep", v);
    CHECK(open_error(b.build()) == "metadata key 'deep': arrays nested deeper than 8 levels");
}

TEST_CASE("malformed: unknown metadata value type") {
    Builder b = tiny_llama();
    b.kv("x", Value{13, ""});
    CHECK(open_error(b.build()) == "metadata key 'x': unknown value type 13");
}

TEST_CASE("malformed: unknown array element type") {
    Builder b = tiny_llama();
    b.kv("x", raw_array(0xFFFFFFFFu, 1, ""));
    CHECK(open_error(b.build()) == "metadata key 'x': unknown array element type 4294967295");
}

TEST_CASE("malformed: duplicate metadata key") {
    Builder b = tiny_llama();
    b.kv("general.name", str("again"));
    CHECK(open_error(b.build()) == "duplicate metadata key 'general.name' (entries 1 and 19)");
}

TEST_CASE("malformed: empty metadata key") {
    Builder b = tiny_llama();
    b.kv("", u32(1));
    CHECK(open_error(b.build()) == "metadata entry 19 has an empty key");
}

TEST_CASE("malformed: metadata key that is not UTF-8") {
    Builder b = tiny_llama();
    b.kv("general.bad\xff", u32(1));
    CHECK(open_error(b.build()) == "metadata entry 19: key 'general.bad\\xff' is not printable UTF-8");
}

TEST_CASE("malformed: metadata key with a control character") {
    Builder b = tiny_llama();
    b.kv("general.a\nb", u32(1));
    CHECK(open_error(b.build()) == "metadata entry 19: key 'general.a\\nb' is not printable UTF-8");
}

TEST_CASE("malformed: alignment 0") {
    Builder b = tiny_llama();
    b.kv("general.alignment", u32(0));
    CHECK(open_error(b.build()) == "metadata key 'general.alignment' is 0, must be a nonzero power of two");
}

TEST_CASE("malformed: alignment 48 is not a power of two") {
    Builder b = tiny_llama();
    b.kv("general.alignment", u32(48));
    CHECK(open_error(b.build()) == "metadata key 'general.alignment' is 48, must be a nonzero power of two");
}

TEST_CASE("malformed: alignment of the wrong type") {
    Builder b = tiny_llama();
    b.kv("general.alignment", i32(32));
    CHECK(open_error(b.build()) == "metadata key 'general.alignment' has type i32, expected u32");
}

// --------------------------------------------------------------- tensors --

TEST_CASE("malformed: truncated inside a tensor info") {
    Layout layout;
    const std::string full = tiny_llama().build(&layout);
    const uint64_t ne0_at = layout.tensor_info_begin[10] + 8 + std::string("output_norm.weight").size() + 4;
    CHECK(open_error(full.substr(0, ne0_at + 3)) == "tensor 'output_norm.weight': the file ends at byte " + u64_text(ne0_at + 3) +
                                                         ", 8 bytes are needed at offset " + u64_text(ne0_at));
}

TEST_CASE("malformed: truncated before the tensor data") {
    Layout layout;
    const std::string full = tiny_llama().build(&layout);
    CHECK(open_error(full.substr(0, layout.tensor_infos_end)) ==
          "tensor 'token_embd.weight': data [0, 544) of the data section lies outside the file (the data section holds 0 bytes)");
}

TEST_CASE("malformed: truncated inside the last tensor's data") {
    Layout layout;
    const std::string full = tiny_llama().build(&layout);
    const uint64_t last = layout.offsets[10];
    CHECK(open_error(full.substr(0, layout.data_start + last + 10)) ==
          "tensor 'output_norm.weight': data [" + u64_text(last) + ", " + u64_text(last + 256) +
              ") of the data section lies outside the file (the data section holds " + u64_text(last + 10) + " bytes)");
}

TEST_CASE("malformed: duplicate tensor names") {
    Builder b = tiny_llama();
    b.tensor("blk.0.attn_q.weight", 0, {64});
    CHECK(open_error(b.build()) == "duplicate tensor name 'blk.0.attn_q.weight' (tensors 2 and 11)");
}

TEST_CASE("malformed: empty tensor name") {
    CHECK(open_error(with_tensor(3, [](TensorSpec& t) { t.name = ""; })) == "tensor 3 has an empty name");
}

TEST_CASE("malformed: tensor name longer than 63 bytes") {
    CHECK(open_error(with_tensor(3, [](TensorSpec& t) { t.name = std::string(64, 'n'); })) ==
          "tensor 3: name '" + std::string(64, 'n') + "' is longer than 63 bytes");
}

TEST_CASE("malformed: tensor name that is not UTF-8") {
    CHECK(open_error(with_tensor(3, [](TensorSpec& t) { t.name = "blk.0.\xc0\x80"; })) ==
          "tensor 3: name 'blk.0.\\xc0\\x80' is not printable UTF-8");
}

TEST_CASE("malformed: n_dims 5") {
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.ne = {64, 64, 1, 1, 1}; })) ==
          "tensor 'blk.0.attn_q.weight': 5 dimensions, at most 4 are supported");
}

TEST_CASE("malformed: zero-size dimension") {
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.ne = {64, 0}; })) ==
          "tensor 'blk.0.attn_q.weight': dimension 1 is 0, must be positive");
}

TEST_CASE("malformed: negative dimension") {
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.ne = {64, static_cast<uint64_t>(-3)}; })) ==
          "tensor 'blk.0.attn_q.weight': dimension 1 is -3, must be positive");
}

TEST_CASE("malformed: dimensions whose product overflows") {
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.ne = {64, uint64_t{1} << 32, uint64_t{1} << 32}; })) ==
          "tensor 'blk.0.attn_q.weight': the element count of its dimensions overflows 64 bits");
    // Fits u64 but not int64 (ggml counts elements in int64).
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.ne = {uint64_t{1} << 32, (uint64_t{1} << 31) + 1}; })) ==
          "tensor 'blk.0.attn_q.weight': the element count of its dimensions overflows 64 bits");
}

TEST_CASE("malformed: size in bytes overflows") {
    CHECK(open_error(with_tensor(1, [](TensorSpec& t) { t.ne = {uint64_t{1} << 62}; })) ==
          "tensor 'blk.0.attn_norm.weight': its size in bytes overflows 64 bits [4611686018427387904]");
}

TEST_CASE("malformed: unknown tensor type id 77") {
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.type = 77; })) ==
          "tensor 'blk.0.attn_q.weight': unknown tensor type id 77");
}

TEST_CASE("malformed: removed tensor types 4 and 5 (Q4_2, Q4_3)") {
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.type = 4; })) == "tensor 'blk.0.attn_q.weight': unknown tensor type id 4");
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.type = 5; })) == "tensor 'blk.0.attn_q.weight': unknown tensor type id 5");
}

TEST_CASE("malformed: removed interleaved tensor type 31") {
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.type = 31; })) == "tensor 'blk.0.attn_q.weight': unknown tensor type id 31");
}

TEST_CASE("malformed: row length not a multiple of the block size") {
    CHECK(open_error(with_tensor(2, [](TensorSpec& t) { t.ne = {48, 64}; })) ==
          "tensor 'blk.0.attn_q.weight': row length 48 is not a multiple of Q4_0's block size 32");
}

TEST_CASE("malformed: misaligned tensor data offset") {
    Layout layout;
    tiny_llama().build(&layout);
    const uint64_t offset = layout.offsets[2] + 16;
    Builder b = tiny_llama();
    b.tensors[2].offset = offset;
    CHECK(open_error(b.build()) == "tensor 'blk.0.attn_q.weight': data offset " + u64_text(offset) +
                                       " is not a multiple of the alignment 32");
}

TEST_CASE("malformed: tensor data past the end of the file") {
    Layout layout;
    const std::string bytes = with_tensor(10, [](TensorSpec& t) { t.offset = uint64_t{1} << 40; }, &layout);
    CHECK(open_error(bytes) == "tensor 'output_norm.weight': data [1099511627776, 1099511628032) of the data section lies "
                               "outside the file (the data section holds " + u64_text(bytes.size() - layout.data_start) + " bytes)");
}

TEST_CASE("malformed: tensor offset whose end overflows 64 bits") {
    Layout layout;
    const std::string bytes = with_tensor(10, [](TensorSpec& t) { t.offset = ~uint64_t{0} - 31; }, &layout);
    CHECK(open_error(bytes) == "tensor 'output_norm.weight': data [18446744073709551584, 2^64+) of the data section lies "
                               "outside the file (the data section holds " + u64_text(bytes.size() - layout.data_start) + " bytes)");
}

TEST_CASE("malformed: overlapping tensors") {
    Layout layout;
    tiny_llama().build(&layout);
    Builder b = tiny_llama();
    b.tensors[3].offset = layout.offsets[2] + 1024;
    CHECK(open_error(b.build()) == "tensors 'blk.0.attn_q.weight' and 'blk.0.attn_k.weight' overlap in the data section (" +
                                       u64_text(layout.offsets[2]) + " + 2304 > " + u64_text(layout.offsets[2] + 1024) + ")");
}

TEST_CASE("malformed: tensor count larger than the infos present") {
    Builder b = tiny_llama();
    b.tensor_count = 12;  // the 12th "info" is read from the padding and data
    const std::string message = open_error(b.build());
    CHECK(message.rfind("tensor 11", 0) == 0);
}

TEST_CASE("malformed: truncated inside a tensor type field") {
    Layout layout;
    const std::string full = tiny_llama().build(&layout);
    const uint64_t type_at = layout.tensor_info_begin[10] + 8 + std::string("output_norm.weight").size() + 4 + 8;
    CHECK(open_error(full.substr(0, type_at + 1)) == "tensor 'output_norm.weight': the file ends at byte " + u64_text(type_at + 1) +
                                                         ", 4 bytes are needed at offset " + u64_text(type_at));
}
