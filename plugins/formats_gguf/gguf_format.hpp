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
#include <edgerun/meta_type.hpp>

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

}  // namespace edgerun::gguf
