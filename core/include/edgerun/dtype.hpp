// Tensor element types: every GGUF type id with its block geometry, so any plugin can
// size any tensor. Header-only and constexpr so third-party plugins need no library.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edgerun {

enum class DType : int32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct DTypeInfo {
    DType id;
    std::string_view name;
    int32_t block_elems;  // elements per block (1 for plain types)
    int32_t block_bytes;  // bytes per block
    bool quantized;
};

// Ids 4, 5 (Q4_2, Q4_3) and 31-33, 36-38 (the removed interleaved layouts) are gone from
// GGUF; files that use them are rejected like any other unknown id.
inline constexpr std::array<DTypeInfo, 32> kDTypes{{
    {DType::F32, "F32", 1, 4, false},
    {DType::F16, "F16", 1, 2, false},
    {DType::Q4_0, "Q4_0", 32, 18, true},
    {DType::Q4_1, "Q4_1", 32, 20, true},
    {DType::Q5_0, "Q5_0", 32, 22, true},
    {DType::Q5_1, "Q5_1", 32, 24, true},
    {DType::Q8_0, "Q8_0", 32, 34, true},
    {DType::Q8_1, "Q8_1", 32, 36, true},
    {DType::Q2_K, "Q2_K", 256, 84, true},
    {DType::Q3_K, "Q3_K", 256, 110, true},
    {DType::Q4_K, "Q4_K", 256, 144, true},
    {DType::Q5_K, "Q5_K", 256, 176, true},
    {DType::Q6_K, "Q6_K", 256, 210, true},
    {DType::Q8_K, "Q8_K", 256, 292, true},
    {DType::IQ2_XXS, "IQ2_XXS", 256, 66, true},
    {DType::IQ2_XS, "IQ2_XS", 256, 74, true},
    {DType::IQ3_XXS, "IQ3_XXS", 256, 98, true},
    {DType::IQ1_S, "IQ1_S", 256, 50, true},
    {DType::IQ4_NL, "IQ4_NL", 32, 18, true},
    {DType::IQ3_S, "IQ3_S", 256, 110, true},
    {DType::IQ2_S, "IQ2_S", 256, 82, true},
    {DType::IQ4_XS, "IQ4_XS", 256, 136, true},
    {DType::I8, "I8", 1, 1, false},
    {DType::I16, "I16", 1, 2, false},
    {DType::I32, "I32", 1, 4, false},
    {DType::I64, "I64", 1, 8, false},
    {DType::F64, "F64", 1, 8, false},
    {DType::IQ1_M, "IQ1_M", 256, 56, true},
    {DType::BF16, "BF16", 1, 2, false},
    {DType::TQ1_0, "TQ1_0", 256, 54, true},
    {DType::TQ2_0, "TQ2_0", 256, 66, true},
    {DType::MXFP4, "MXFP4", 32, 17, true},
}};

// nullptr for an id GGUF does not define.
constexpr const DTypeInfo* dtype_info(int32_t id) {
    for (const auto& info : kDTypes)
        if (static_cast<int32_t>(info.id) == id) return &info;
    return nullptr;
}

constexpr const DTypeInfo* dtype_info(DType id) { return dtype_info(static_cast<int32_t>(id)); }

constexpr std::string_view dtype_name(DType id) {
    const DTypeInfo* info = dtype_info(id);
    return info ? info->name : std::string_view("?");
}

// Case-insensitive lookup by name ("q4_k" finds Q4_K).
constexpr std::optional<DType> dtype_from_name(std::string_view name) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (const auto& info : kDTypes) {
        if (info.name.size() != name.size()) continue;
        bool same = true;
        for (size_t i = 0; i < name.size() && same; ++i) same = lower(info.name[i]) == lower(name[i]);
        if (same) return info.id;
    }
    return std::nullopt;
}

// Bytes of one row of `n_elems` elements; nullopt when the type is unknown or the row is
// not a whole number of blocks.
constexpr std::optional<uint64_t> row_bytes(int32_t id, int64_t n_elems) {
    const DTypeInfo* info = dtype_info(id);
    if (!info || n_elems < 0 || n_elems % info->block_elems != 0) return std::nullopt;
    return static_cast<uint64_t>(n_elems / info->block_elems) * static_cast<uint64_t>(info->block_bytes);
}

// Bits per weight, for reports ("Q4_K 4.5").
constexpr double bits_per_weight(int32_t id) {
    const DTypeInfo* info = dtype_info(id);
    return info ? 8.0 * info->block_bytes / info->block_elems : 0.0;
}

inline std::string unknown_dtype_message(int32_t id) {
    return "unknown tensor type id " + std::to_string(id);
}

}  // namespace edgerun
