// The metadata section of a GGUF file: parsed once, in place over the mapping. Scalars
// are decoded into er_meta_value; strings point into the mapping; arrays are indexed so
// any element is reachable in O(1) without copying (a 150k-token vocabulary costs one
// u64 per string, never more than the file's own size).
#pragma once

#include "cursor.hpp"
#include "gguf_format.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace edgerun::gguf {

struct MetaEntry {
    std::string_view key;
    er_meta_value value;
};

class Metadata {
public:
    // Parses `count` entries at the cursor over the whole file [data, data + size).
    void parse(Cursor& cursor, uint64_t count);

    uint64_t size() const { return entries_.size(); }
    const MetaEntry& at(uint64_t index) const { return entries_[index]; }
    const MetaEntry* find(std::string_view key) const;

    // Element `index` of an array value this object produced. Throws
    // Failure(ER_E_INVALID_ARGUMENT) for a value that is not one of its arrays or an
    // index past the end.
    er_meta_value element(const er_meta_value& array, uint64_t index) const;

    // Typed lookups for the model and vocabulary descriptions. Each returns nullopt when
    // the key is absent and throws ER_E_FORMAT naming the key when its type is wrong.
    // Integers: any integer type that fits int64.
    std::optional<int64_t> get_int(std::string_view key) const;
    // Like get_int, but a per-layer array is accepted when all its entries are equal.
    std::optional<int64_t> get_uniform_int(std::string_view key) const;
    // Floats: f32 or f64 (integers are accepted and converted).
    std::optional<double> get_float(std::string_view key) const;
    std::optional<std::string_view> get_string(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    // An array whose elements pass `accept`; `expected` names them for the message
    // ("strings").
    const er_meta_value* get_array(std::string_view key, bool (*accept)(int32_t element_type),
                                   std::string_view expected) const;

    // Element accessors for arrays already checked by get_array.
    std::string_view string_at(const er_meta_value& array, uint64_t index) const;
    double float_at(const er_meta_value& array, uint64_t index) const;
    int64_t int_at(const er_meta_value& array, uint64_t index, std::string_view key) const;

    // Integer value of a scalar value; throws naming `key` when it is not an integer or
    // does not fit int64.
    static int64_t to_int(const er_meta_value& value, std::string_view key);

private:
    template <typename Describe>
    void parse_value(Cursor& cursor, int32_t type, er_meta_value& out, const Describe& where, int depth);
    template <typename Describe>
    void parse_array(Cursor& cursor, er_meta_value& out, const Describe& where, int depth);

    // Arrays carry, while parsing, an encoded position in v.u64: the file offset of the
    // first element for fixed-size element types, else the first slot in `index_`.
    // Handles become pointers once `index_` stops growing.
    const void* handle_for(int32_t element_type, uint64_t encoded) const;
    bool element_is_indexed(int32_t element_type) const {
        return element_type == ER_META_STRING || element_type == ER_META_ARRAY;
    }
    // Slots per element in `index_`: a string's file offset; an inner array's header
    // offset and its own encoded position.
    static uint64_t slots_per_element(int32_t element_type) { return element_type == ER_META_ARRAY ? 2 : 1; }

    const uint8_t* data_ = nullptr;
    uint64_t file_size_ = 0;
    std::vector<MetaEntry> entries_;
    std::unordered_map<std::string_view, uint64_t> by_key_;
    std::vector<uint64_t> index_;
};

}  // namespace edgerun::gguf
