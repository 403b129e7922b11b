// The metadata value types (abi.h's ER_META_*, GGUF's ids): their names and the bytes a
// fixed-size value takes. A format plugin reading or writing them, the authoring library
// packing an array for the ABI and `edgerun inspect` printing them all ask here.
// Header-only and C++17, like the rest of the SDK, so plugins may use it too.
#pragma once

#include <edgerun/abi.h>

#include <cstdint>
#include <string_view>

namespace edgerun {

// Bytes of one value of a fixed-size type; 0 for string, array and unknown ids.
constexpr uint64_t meta_scalar_size(int32_t type) {
    switch (type) {
        case ER_META_U8: case ER_META_I8: case ER_META_BOOL: return 1;
        case ER_META_U16: case ER_META_I16: return 2;
        case ER_META_U32: case ER_META_I32: case ER_META_F32: return 4;
        case ER_META_U64: case ER_META_I64: case ER_META_F64: return 8;
        default: return 0;
    }
}

constexpr bool meta_type_known(int32_t type) { return type >= ER_META_U8 && type <= ER_META_F64; }

constexpr bool meta_is_integer(int32_t type) {
    switch (type) {
        case ER_META_U8: case ER_META_I8: case ER_META_U16: case ER_META_I16: case ER_META_U32:
        case ER_META_I32: case ER_META_U64: case ER_META_I64: return true;
        default: return false;
    }
}

constexpr bool meta_is_signed(int32_t type) {
    return type == ER_META_I8 || type == ER_META_I16 || type == ER_META_I32 || type == ER_META_I64;
}

// "u8", "i32", "f64", "bool", "string", "array", ...; "unknown" for any other id.
constexpr std::string_view meta_type_name(int32_t type) {
    switch (type) {
        case ER_META_U8: return "u8";
        case ER_META_I8: return "i8";
        case ER_META_U16: return "u16";
        case ER_META_I16: return "i16";
        case ER_META_U32: return "u32";
        case ER_META_I32: return "i32";
        case ER_META_F32: return "f32";
        case ER_META_BOOL: return "bool";
        case ER_META_STRING: return "string";
        case ER_META_ARRAY: return "array";
        case ER_META_U64: return "u64";
        case ER_META_I64: return "i64";
        case ER_META_F64: return "f64";
        default: return "unknown";
    }
}

}  // namespace edgerun
