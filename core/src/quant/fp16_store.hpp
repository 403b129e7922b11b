// Storing a searched scale as fp16 without overflowing to infinity.
#pragma once

#include <edgerun/quant/blocks.hpp>

#include <array>

namespace edgerun::quant::detail {

inline constexpr float kFp16Max = 65504.f;

// Round to fp16, saturating at the largest finite half so a block of enormous values
// dequantizes clipped rather than as infinities.
inline uint16_t to_fp16(float v) {
    if (v > kFp16Max) v = kFp16Max;
    if (v < -kFp16Max) v = -kFp16Max;
    return fp32_to_fp16(v);
}

// The finite halves one step below and above `h` in magnitude (same sign); `h` itself
// where there is no such step.
inline std::array<uint16_t, 2> fp16_neighbours(uint16_t h) {
    const uint16_t magnitude = h & 0x7FFFu, sign = h & 0x8000u;
    const uint16_t down = magnitude > 0 ? uint16_t(sign | (magnitude - 1)) : h;
    const uint16_t up = magnitude < 0x7BFFu ? uint16_t(sign | (magnitude + 1)) : h;
    return {down, up};
}

}  // namespace edgerun::quant::detail
