// Builds GGUF bytes field by field, for tests and fuzz seeds: valid files, and files wrong
// in exactly one chosen way. Independent of the plugin's writer on purpose (a writer bug
// must not hide a reader bug), and header-only.
#pragma once

#include <edgerun/dtype.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gguf_test {

enum : uint32_t {
    T_U8 = 0, T_I8 = 1, T_U16 = 2, T_I16 = 3, T_U32 = 4, T_I32 = 5, T_F32 = 6, T_BOOL = 7,
    T_STRING = 8, T_ARRAY = 9, T_U64 = 10, T_I64 = 11, T_F64 = 12
};

template <typename T>
void put(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

inline void put_string(std::string& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.append(s);
}

// A metadata value: its type id and its encoding after the type id.
struct Value {
    uint32_t type;
    std::string payload;
};

template <typename T>
Value scalar(uint32_t type, T v) {
    Value out{type, {}};
    put(out.payload, v);
    return out;
}
inline Value u8(uint8_t v) { return scalar(T_U8, v); }
inline Value i8(int8_t v) { return scalar(T_I8, v); }
inline Value u16(uint16_t v) { return scalar(T_U16, v); }
inline Value i16(int16_t v) { return scalar(T_I16, v); }
inline Value u32(uint32_t v) { return scalar(T_U32, v); }
inline Value i32(int32_t v) { return scalar(T_I32, v); }
inline Value u64(uint64_t v) { return scalar(T_U64, v); }
inline Value i64(int64_t v) { return scalar(T_I64, v); }
inline Value f32(float v) { return scalar(T_F32, v); }
inline Value f64(double v) { return scalar(T_F64, v); }
inline Value boolean(bool v) { return scalar(T_BOOL, static_cast<uint8_t>(v)); }
inline Value str(std::string_view s) {
    Value out{T_STRING, {}};
    put_string(out.payload, s);
    return out;
}

// An array from raw element bytes, with any claimed count (for lies about the count).
inline Value raw_array(uint32_t element_type, uint64_t count, std::string_view elements) {
    Value out{T_ARRAY, {}};
    put<uint32_t>(out.payload, element_type);
    put<uint64_t>(out.payload, count);
    out.payload.append(elements);
    return out;
}

template <typename T>
Value array_of(uint32_t element_type, const std::vector<T>& items) {
    std::string elements;
    for (const T& v : items) put(elements, v);
    return raw_array(element_type, items.size(), elements);
}

inline Value str_array(const std::vector<std::string>& items) {
    std::string elements;
    for (const auto& s : items) put_string(elements, s);
    return raw_array(T_STRING, items.size(), elements);
}

// An array of arrays: each inner value must itself be an array Value.
inline Value nested_array(const std::vector<Value>& inner) {
    std::string elements;
    for (const auto& v : inner) elements += v.payload;
    return raw_array(T_ARRAY, inner.size(), elements);
}

struct TensorSpec {
    std::string name;
    uint32_t type = 0;
    std::vector<uint64_t> ne;
    std::optional<uint64_t> offset;  // default: packed in order, aligned
};

// Where each part landed in the built file.
struct Layout {
    uint64_t header_end = 0;
    std::vector<uint64_t> kv_begin;
    std::vector<uint64_t> tensor_info_begin;
    uint64_t tensor_infos_end = 0;
    uint64_t data_start = 0;
    std::vector<uint64_t> offsets;  // relative to data_start
    std::vector<uint64_t> nbytes;
};

inline uint64_t tensor_bytes(uint32_t type, const std::vector<uint64_t>& ne) {
    const edgerun::DTypeInfo* info = edgerun::dtype_info(static_cast<int32_t>(type));
    const uint64_t row = ne.empty() ? 1 : ne[0];  // no dimensions: a scalar
    if (!info || row % static_cast<uint64_t>(info->block_elems) != 0) return 0;
    uint64_t elements = 1;
    for (uint64_t d : ne) {
        if (d != 0 && elements > UINT64_MAX / d) return 0;
        elements *= d;
    }
    const uint64_t blocks = elements / static_cast<uint64_t>(info->block_elems);
    if (blocks > UINT64_MAX / static_cast<uint64_t>(info->block_bytes)) return 0;
    return blocks * static_cast<uint64_t>(info->block_bytes);
}

// The byte at position k of tensor i's data: every tensor gets distinct, checkable bytes.
inline char data_byte(size_t tensor, uint64_t k) { return static_cast<char>((tensor * 131 + k * 7 + (k >> 8)) & 0xFF); }

class Builder {
public:
    char magic[4] = {'G', 'G', 'U', 'F'};
    uint32_t version = 3;
    std::optional<uint64_t> tensor_count;  // override the real counts
    std::optional<uint64_t> kv_count;
    uint64_t alignment = 32;  // how data is laid out; set general.alignment to match
    std::vector<std::pair<std::string, Value>> kvs;
    std::vector<TensorSpec> tensors;

    Builder& kv(std::string key, Value v) {
        kvs.emplace_back(std::move(key), std::move(v));
        return *this;
    }
    Builder& tensor(std::string name, uint32_t type, std::vector<uint64_t> ne) {
        tensors.push_back({std::move(name), type, std::move(ne), std::nullopt});
        return *this;
    }

    std::string build(Layout* layout_out = nullptr) const {
        Layout layout;
        std::string out(magic, 4);
        put<uint32_t>(out, version);
        put<uint64_t>(out, tensor_count.value_or(tensors.size()));
        put<uint64_t>(out, kv_count.value_or(kvs.size()));
        layout.header_end = out.size();
        for (const auto& [key, value] : kvs) {
            layout.kv_begin.push_back(out.size());
            put_string(out, key);
            put<uint32_t>(out, value.type);
            out += value.payload;
        }
        uint64_t next = 0;
        for (const TensorSpec& t : tensors) {
            const uint64_t nbytes = tensor_bytes(t.type, t.ne);
            const uint64_t offset = t.offset.value_or(next);
            layout.offsets.push_back(offset);
            layout.nbytes.push_back(nbytes);
            if (!t.offset) next = align(offset + nbytes);
            layout.tensor_info_begin.push_back(out.size());
            put_string(out, t.name);
            put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
            for (uint64_t d : t.ne) put<uint64_t>(out, d);
            put<uint32_t>(out, t.type);
            put<uint64_t>(out, offset);
        }
        layout.tensor_infos_end = out.size();
        layout.data_start = align(out.size());
        if (!tensors.empty()) {
            out.resize(layout.data_start, '\0');
            for (size_t i = 0; i < tensors.size(); ++i) {
                const uint64_t end = layout.offsets[i] + layout.nbytes[i];
                if (end < layout.offsets[i] || end > (64u << 20)) continue;  // a deliberate lie: no data
                if (out.size() < layout.data_start + end) out.resize(layout.data_start + end, '\0');
                for (uint64_t k = 0; k < layout.nbytes[i]; ++k) out[layout.data_start + layout.offsets[i] + k] = data_byte(i, k);
            }
        }
        if (layout_out) *layout_out = layout;
        return out;
    }

private:
    uint64_t align(uint64_t v) const { return (v + alignment - 1) / alignment * alignment; }
};

// A small valid llama model: every hyperparameter key, an 8-token BPE vocabulary, and a
// layer's worth of tensors in a few quant types (tied embeddings: no output.weight).
inline Builder tiny_llama() {
    Builder b;
    b.kv("general.architecture", str("llama"))
        .kv("general.name", str("tiny"))
        .kv("general.file_type", u32(2))
        .kv("llama.context_length", u32(256))
        .kv("llama.embedding_length", u32(64))
        .kv("llama.block_count", u32(1))
        .kv("llama.feed_forward_length", u32(128))
        .kv("llama.attention.head_count", u32(4))
        .kv("llama.attention.head_count_kv", u32(2))
        .kv("llama.attention.layer_norm_rms_epsilon", f32(1e-5f))
        .kv("llama.rope.freq_base", f32(100000.0f))
        .kv("tokenizer.ggml.model", str("gpt2"))
        .kv("tokenizer.ggml.pre", str("smollm"))
        .kv("tokenizer.ggml.tokens", str_array({"<s>", "</s>", "a", "b", "ab", "\xc4\xa0", "\xc4\xa0" "a", "c"}))
        .kv("tokenizer.ggml.token_type", array_of<int32_t>(T_I32, {3, 3, 1, 1, 1, 1, 1, 1}))
        .kv("tokenizer.ggml.merges", str_array({"a b", "\xc4\xa0 a"}))
        .kv("tokenizer.ggml.bos_token_id", u32(0))
        .kv("tokenizer.ggml.eos_token_id", u32(1))
        .kv("tokenizer.ggml.add_bos_token", boolean(false));
    b.tensor("token_embd.weight", 8, {64, 8})  // Q8_0
        .tensor("blk.0.attn_norm.weight", 0, {64})
        .tensor("blk.0.attn_q.weight", 2, {64, 64})  // Q4_0
        .tensor("blk.0.attn_k.weight", 2, {64, 32})
        .tensor("blk.0.attn_v.weight", 3, {64, 32})  // Q4_1
        .tensor("blk.0.attn_output.weight", 2, {64, 64})
        .tensor("blk.0.ffn_norm.weight", 0, {64})
        .tensor("blk.0.ffn_gate.weight", 6, {64, 128})  // Q5_0
        .tensor("blk.0.ffn_up.weight", 6, {64, 128})
        .tensor("blk.0.ffn_down.weight", 1, {128, 64})  // F16
        .tensor("output_norm.weight", 0, {64});
    return b;
}

}  // namespace gguf_test
