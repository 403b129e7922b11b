// Rotary position embedding angles, computed the way ggml does so the GPU matches the
// CPU reference: theta_i = pos * theta_scale^i by repeated float multiplication, with
// theta_scale = freq_base^(-2/n_rot) computed once on the host (a device powf may differ
// in the last bit), then divided by the optional per-pair frequency factor and scaled
// by freq_scale (linear scaling).
#pragma once

#include <edgerun/quant/blocks.hpp>

#include <cmath>

namespace edgerun::cuda_orin {

enum RopeMode : int32_t { kRopeNormal = 0, kRopeNeox = 2 };  // GGML's mode numbers

struct RopeConfig {
    int32_t mode;
    int32_t head_dim;
    int32_t n_rot;           // rotated dims at the start of each head (even, <= head_dim)
    float theta_scale;       // freq_base^(-2/n_rot), from rope_theta_scale() on the host
    float freq_scale;
    const float* freq_factors;  // n_rot/2 values or nullptr
};

#if !defined(__CUDACC_RTC__)
inline float rope_theta_scale(float freq_base, int n_rot) { return std::pow(freq_base, -2.0f / float(n_rot)); }
#endif

// Angle of rotation pair `i` (0 .. n_rot/2-1) at position pos.
ER_HD float rope_angle(const RopeConfig& c, int pos, int i, float freq_factor) {
    float theta = float(pos);
    for (int k = 0; k < i; ++k) theta *= c.theta_scale;
    return c.freq_scale * (theta / freq_factor);
}

// The two dims that rotate together as pair i, and which of them is first.
ER_HD void rope_pair_dims(const RopeConfig& c, int i, int* first, int* second) {
    if (c.mode == kRopeNeox) {
        *first = i;
        *second = i + c.n_rot / 2;
    } else {
        *first = 2 * i;
        *second = 2 * i + 1;
    }
}

}  // namespace edgerun::cuda_orin
