#include "metadata.hpp"

#include <cmath>
#include <limits>

namespace edgerun::gguf {

namespace {

std::string type_mismatch(std::string_view key, const er_meta_value& value, std::string_view expected) {
    std::string got(meta_type_name(value.type));
    if (value.type == ER_META_ARRAY) got = "array of " + std::string(meta_type_name(value.array_type));
    return "metadata key " + quote_text(key) + " has type " + got + ", expected " + std::string(expected);
}

er_meta_value decode_scalar(int32_t type, const uint8_t* p) {
    er_meta_value out{};
    out.type = type;
    switch (type) {
        case ER_META_U8: out.v.u64 = p[0]; break;
        case ER_META_BOOL: out.v.u64 = p[0] != 0; break;
        case ER_META_I8: out.v.i64 = static_cast<int8_t>(p[0]); break;
        case ER_META_U16: { uint16_t x; std::memcpy(&x, p, 2); out.v.u64 = x; break; }
        case ER_META_I16: { int16_t x; std::memcpy(&x, p, 2); out.v.i64 = x; break; }
        case ER_META_U32: { uint32_t x; std::memcpy(&x, p, 4); out.v.u64 = x; break; }
        case ER_META_I32: { int32_t x; std::memcpy(&x, p, 4); out.v.i64 = x; break; }
        case ER_META_U64: { uint64_t x; std::memcpy(&x, p, 8); out.v.u64 = x; break; }
        case ER_META_I64: { int64_t x; std::memcpy(&x, p, 8); out.v.i64 = x; break; }
        case ER_META_F32: { float x; std::memcpy(&x, p, 4); out.v.f64 = x; break; }
        case ER_META_F64: { double x; std::memcpy(&x, p, 8); out.v.f64 = x; break; }
        default: break;
    }
    return out;
}

bool key_is_acceptable(std::string_view key) {
    if (!is_valid_utf8(key)) return false;
    for (char c : key)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return false;
    return true;
}

}  // namespace

void Metadata::parse(Cursor& cursor, uint64_t count) {
    data_ = cursor.data();
    file_size_ = cursor.size();
    if (count > cursor.remaining() / kMinMetadataEntryBytes)
        throw format_error("metadata count " + std::to_string(count) + " cannot fit in the " +
                           std::to_string(cursor.remaining()) + " bytes after the header");
    entries_.reserve(static_cast<size_t>(count));
    by_key_.reserve(static_cast<size_t>(count));

    for (uint64_t i = 0; i < count; ++i) {
        const auto entry_where = [&] { return "metadata entry " + std::to_string(i) + " (key)"; };
        const std::string_view key = cursor.string(entry_where);
        if (key.empty()) throw format_error("metadata entry " + std::to_string(i) + " has an empty key");
        if (!key_is_acceptable(key))
            throw format_error("metadata entry " + std::to_string(i) + ": key " + quote_text(key) +
                               " is not printable UTF-8");
        const auto where = [&] { return "metadata key " + quote_text(key); };
        if (auto it = by_key_.find(key); it != by_key_.end())
            throw format_error("duplicate metadata key " + quote_text(key) + " (entries " + std::to_string(it->second) +
                               " and " + std::to_string(i) + ")");
        const auto type = static_cast<int32_t>(cursor.read<uint32_t>(where));
        MetaEntry entry{key, {}};
        parse_value(cursor, type, entry.value, where, 0);
        by_key_.emplace(key, i);
        entries_.push_back(entry);
    }
    // `index_` is complete: arrays can point into it now.
    for (MetaEntry& entry : entries_)
        if (entry.value.type == ER_META_ARRAY)
            entry.value.array_handle = handle_for(entry.value.array_type, entry.value.v.u64);
}

template <typename Describe>
void Metadata::parse_value(Cursor& cursor, int32_t type, er_meta_value& out, const Describe& where, int depth) {
    out = er_meta_value{};
    out.type = type;
    if (const uint64_t size = meta_scalar_size(type)) {
        const uint64_t at = cursor.pos();
        cursor.skip(size, where);
        out = decode_scalar(type, data_ + at);
    } else if (type == ER_META_STRING) {
        const std::string_view s = cursor.string(where);
        out.v.str = er_str{s.data(), s.size()};
    } else if (type == ER_META_ARRAY) {
        parse_array(cursor, out, where, depth);
    } else {
        throw format_error(where() + ": unknown value type " + std::to_string(static_cast<uint32_t>(type)));
    }
}

template <typename Describe>
void Metadata::parse_array(Cursor& cursor, er_meta_value& out, const Describe& where, int depth) {
    if (depth >= kMaxArrayDepth)
        throw format_error(where() + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
    const auto element_type = static_cast<int32_t>(cursor.read<uint32_t>(where));
    const uint64_t count = cursor.read<uint64_t>(where);
    if (!meta_type_known(element_type))
        throw format_error(where() + ": unknown array element type " +
                           std::to_string(static_cast<uint32_t>(element_type)));
    out.array_type = element_type;
    out.array_count = count;

    const uint64_t fixed_size = meta_scalar_size(element_type);
    const uint64_t min_size = fixed_size ? fixed_size
                              : element_type == ER_META_STRING ? kStringHeaderBytes : kArrayHeaderBytes;
    if (count > cursor.remaining() / min_size)
        throw format_error(where() + ": array of " + std::to_string(count) + " " +
                           std::string(meta_type_name(element_type)) + " elements cannot fit in the " +
                           std::to_string(cursor.remaining()) + " bytes left in the file");

    if (fixed_size) {
        out.v.u64 = cursor.pos();
        cursor.skip(count * fixed_size, where);  // count * size <= remaining, checked above
        return;
    }
    // Each element takes at least min_size >= 8 file bytes and at most 2 slots of 8
    // bytes, so the index never grows past ~1.4x the file.
    const uint64_t first = index_.size();
    const uint64_t slots = slots_per_element(element_type);
    index_.resize(static_cast<size_t>(first + count * slots));
    out.v.u64 = first;
    for (uint64_t i = 0; i < count; ++i) {
        index_[first + i * slots] = cursor.pos();
        if (element_type == ER_META_STRING) {
            cursor.string(where);
        } else {
            er_meta_value inner;
            parse_array(cursor, inner, where, depth + 1);
            index_[first + i * slots + 1] = inner.v.u64;
        }
    }
}

const void* Metadata::handle_for(int32_t element_type, uint64_t encoded) const {
    if (element_is_indexed(element_type)) return index_.data() + encoded;
    return data_ + encoded;
}

const MetaEntry* Metadata::find(std::string_view key) const {
    auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : &entries_[it->second];
}

er_meta_value Metadata::element(const er_meta_value& array, uint64_t index) const {
    if (array.type != ER_META_ARRAY || !meta_type_known(array.array_type))
        throw sdk::Failure(ER_E_INVALID_ARGUMENT, "value is not a metadata array");
    if (index >= array.array_count)
        throw sdk::Failure(ER_E_INVALID_ARGUMENT, "array index " + std::to_string(index) + " is past the end (" +
                                                      std::to_string(array.array_count) + " elements)");
    const auto handle = reinterpret_cast<uintptr_t>(array.array_handle);
    const auto bad_handle = [] { return sdk::Failure(ER_E_INVALID_ARGUMENT, "array handle does not belong to this file"); };

    if (!element_is_indexed(array.array_type)) {
        // The elements lie in the mapping; check that the whole array does.
        const uint64_t size = meta_scalar_size(array.array_type);
        const auto base = reinterpret_cast<uintptr_t>(data_);
        if (handle < base || handle - base > file_size_) throw bad_handle();
        const uint64_t offset = handle - base;
        const auto bytes = checked_mul(array.array_count, size);
        if (!bytes || *bytes > file_size_ - offset) throw bad_handle();
        return decode_scalar(array.array_type, data_ + offset + index * size);
    }

    const auto base = reinterpret_cast<uintptr_t>(index_.data());
    const uint64_t slots = slots_per_element(array.array_type);
    if (handle < base || (handle - base) % sizeof(uint64_t) != 0) throw bad_handle();
    const uint64_t first = (handle - base) / sizeof(uint64_t);
    const auto needed = checked_mul(array.array_count, slots);
    if (first > index_.size() || !needed || *needed > index_.size() - first) throw bad_handle();

    const uint64_t at = index_[first + index * slots];
    er_meta_value out{};
    if (array.array_type == ER_META_STRING) {
        const auto length = load_at<uint64_t>(data_, file_size_, at);
        if (!length || *length > file_size_ - at - kStringHeaderBytes) throw bad_handle();
        out.type = ER_META_STRING;
        out.v.str = er_str{reinterpret_cast<const char*>(data_ + at + kStringHeaderBytes), *length};
        return out;
    }
    const auto inner_type = load_at<uint32_t>(data_, file_size_, at);
    const auto inner_count = load_at<uint64_t>(data_, file_size_, at + 4);
    if (!inner_type || !inner_count) throw bad_handle();
    out.type = ER_META_ARRAY;
    out.array_type = static_cast<int32_t>(*inner_type);
    out.array_count = *inner_count;
    out.array_handle = handle_for(out.array_type, index_[first + index * slots + 1]);
    return out;
}

int64_t Metadata::to_int(const er_meta_value& value, std::string_view key) {
    if (!meta_is_integer(value.type)) throw format_error(type_mismatch(key, value, "an integer"));
    if (meta_is_signed(value.type)) return value.v.i64;
    if (value.v.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw format_error("metadata key " + quote_text(key) + ": value " + std::to_string(value.v.u64) + " is too large");
    return static_cast<int64_t>(value.v.u64);
}

std::optional<int64_t> Metadata::get_int(std::string_view key) const {
    const MetaEntry* entry = find(key);
    if (!entry) return std::nullopt;
    return to_int(entry->value, key);
}

std::optional<int64_t> Metadata::get_uniform_int(std::string_view key) const {
    const MetaEntry* entry = find(key);
    if (!entry) return std::nullopt;
    if (entry->value.type != ER_META_ARRAY) return to_int(entry->value, key);
    const er_meta_value& array = entry->value;
    if (!meta_is_integer(array.array_type)) throw format_error(type_mismatch(key, array, "an integer or an array of integers"));
    if (array.array_count == 0) throw format_error("metadata key " + quote_text(key) + " is an empty array");
    const int64_t first = int_at(array, 0, key);
    for (uint64_t i = 1; i < array.array_count; ++i) {
        const int64_t v = int_at(array, i, key);
        if (v != first)
            throw format_error("metadata key " + quote_text(key) + " has per-layer values that differ (" + std::to_string(first) +
                               " at layer 0, " + std::to_string(v) + " at layer " + std::to_string(i) +
                               "); varying per-layer values are not supported");
    }
    return first;
}

std::optional<double> Metadata::get_float(std::string_view key) const {
    const MetaEntry* entry = find(key);
    if (!entry) return std::nullopt;
    const er_meta_value& v = entry->value;
    if (v.type == ER_META_F32 || v.type == ER_META_F64) return v.v.f64;
    if (meta_is_integer(v.type)) return meta_is_signed(v.type) ? static_cast<double>(v.v.i64) : static_cast<double>(v.v.u64);
    throw format_error(type_mismatch(key, v, "a float"));
}

std::optional<std::string_view> Metadata::get_string(std::string_view key) const {
    const MetaEntry* entry = find(key);
    if (!entry) return std::nullopt;
    if (entry->value.type != ER_META_STRING) throw format_error(type_mismatch(key, entry->value, "string"));
    return sdk::view(entry->value.v.str);
}

std::optional<bool> Metadata::get_bool(std::string_view key) const {
    const MetaEntry* entry = find(key);
    if (!entry) return std::nullopt;
    if (entry->value.type != ER_META_BOOL) throw format_error(type_mismatch(key, entry->value, "bool"));
    return entry->value.v.u64 != 0;
}

const er_meta_value* Metadata::get_array(std::string_view key, bool (*accept)(int32_t), std::string_view expected) const {
    const MetaEntry* entry = find(key);
    if (!entry) return nullptr;
    if (entry->value.type != ER_META_ARRAY || !accept(entry->value.array_type))
        throw format_error(type_mismatch(key, entry->value, "array of " + std::string(expected)));
    return &entry->value;
}

std::string_view Metadata::string_at(const er_meta_value& array, uint64_t index) const {
    return sdk::view(element(array, index).v.str);
}

double Metadata::float_at(const er_meta_value& array, uint64_t index) const {
    const er_meta_value v = element(array, index);
    if (v.type == ER_META_F32 || v.type == ER_META_F64) return v.v.f64;
    return meta_is_signed(v.type) ? static_cast<double>(v.v.i64) : static_cast<double>(v.v.u64);
}

int64_t Metadata::int_at(const er_meta_value& array, uint64_t index, std::string_view key) const {
    return to_int(element(array, index), key);
}

}  // namespace edgerun::gguf
