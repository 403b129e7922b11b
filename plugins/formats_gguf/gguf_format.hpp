// Constants of the GGUF container (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
//
//   header   "GGUF" u32 version, u64 tensor_count, u64 metadata_count   (v2 and v3)
//   metadata metadata_count x { string key, u32 type, value }
//   tensors  tensor_count x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
//   padding  to `general.alignment` (default 32)
//   data     tensor bytes; each tensor's offset is relative to here and aligned
//
// A string is u64 length + bytes; an array is u32 element type, u64 count, elements.
#pragma once

#include <edgerun/abi.h>

#include <cstdint>
#include <string_view>

namespace edgerun::gguf {

inline constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kMinVersion = 2;
inline constexpr uint32_t kMaxVersion = 3;
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr uint64_t kHeaderBytes = 4 + 4 + 8 + 8;
inline constexpr std::string_view kAlignmentKey = "general.alignment";

// ggml's GGML_MAX_NAME is 64 including the terminator; longer names cannot be loaded by
// llama.cpp either, so they are rejected rather than silently accepted here.
inline constexpr uint64_t kMaxTensorNameBytes = 63;
// Arrays of arrays are legal GGUF; deeper nesting than this is refused so that parsing
// (which recurses) stays within a small, fixed stack.
inline constexpr int kMaxArrayDepth = 8;

// Smallest encodings, used to refuse counts the remaining bytes cannot possibly hold
// before anything is allocated for them.
inline constexpr uint64_t kMinMetadataEntryBytes = 8 + 1 + 4 + 1;  // key length, 1-byte key, type, u8
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;  // name, n_dims (0), type, offset
inline constexpr uint64_t kArrayHeaderBytes = 4 + 8;
inline constexpr uint64_t kStringHeaderBytes = 8;

// Size in bytes of a fixed-size metadata value type; 0 for string, array and unknown ids.
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

}  // namespace edgerun::gguf
