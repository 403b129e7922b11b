// The KV cache's element types (abi.h's ER_KV_*): the names users type, and the bytes one
// cached value takes. Every part of edgerun that names a KV type or counts its bytes
// (options, capability messages, the decode traffic, the roofline) asks here.
// Header-only and C++17, like the rest of the SDK, so plugins may use it too.
#pragma once

#include <edgerun/abi.h>
#include <edgerun/host_api.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edgerun {

// "f32", "f16", "q8" (as --kv-type takes them); "?" for anything else.
constexpr const char* kv_type_name(int32_t kv_type) {
    switch (kv_type) {
        case ER_KV_F32: return "f32";
        case ER_KV_F16: return "f16";
        case ER_KV_Q8: return "q8";
        default: return "?";
    }
}

// The same in capitals, as messages name element types ("an F16 KV cache").
constexpr const char* kv_type_label(int32_t kv_type) {
    switch (kv_type) {
        case ER_KV_F32: return "F32";
        case ER_KV_F16: return "F16";
        case ER_KV_Q8: return "Q8";
        default: return "?";
    }
}

constexpr std::optional<int32_t> kv_type_from_name(std::string_view name) {
    for (int32_t type : {ER_KV_F32, ER_KV_F16, ER_KV_Q8})
        if (name == kv_type_name(type)) return type;
    return std::nullopt;
}

// kv_type_from_name, or Error("--kv-type: 'q4' is not f16, f32 or q8").
inline int32_t parse_kv_type(std::string_view name) {
    if (const auto type = kv_type_from_name(name)) return *type;
    throw Error("--kv-type: '" + std::string(name) + "' is not f16, f32 or q8", ER_E_INVALID_ARGUMENT);
}

// Bytes per cached value: 4, 2, or 34/32 (32 int8 values share one f16 scale); 0 for an
// unknown type.
constexpr double kv_bytes_per_value(int32_t kv_type) {
    switch (kv_type) {
        case ER_KV_F32: return 4.0;
        case ER_KV_F16: return 2.0;
        case ER_KV_Q8: return 34.0 / 32.0;
        default: return 0.0;
    }
}

}  // namespace edgerun
