// The project's random generator: PCG64 (PCG "XSL RR 128/64", O'Neill 2014), the same
// generator as NumPy's PCG64, so its stream can be checked against an implementation
// nobody here wrote. Sampling must give the same tokens for the same seed on every
// machine and build, which standard-library distributions do not promise.
#pragma once

#include <cstdint>

namespace edgerun {

class Pcg64 {
public:
    using u128 = unsigned __int128;

    // From raw state and increment (the increment is forced odd, as PCG requires).
    Pcg64(u128 state, u128 increment) : state_(state), increment_(increment | 1u) {}

    // From a 64-bit seed: SplitMix64 expands it to the 256 bits of state and increment.
    static Pcg64 from_seed(uint64_t seed) {
        uint64_t words[4];
        for (auto& w : words) w = splitmix64(seed);
        return Pcg64((u128(words[0]) << 64) | words[1], (u128(words[2]) << 64) | words[3]);
    }

    uint64_t next() {
        state_ = state_ * kMultiplier + increment_;
        const uint64_t folded = uint64_t(state_ >> 64) ^ uint64_t(state_);
        const unsigned rotation = unsigned(state_ >> 122);
        return (folded >> rotation) | (folded << ((64 - rotation) & 63));
    }

    // Uniform in [0, 1) with 53 random bits.
    double uniform() { return double(next() >> 11) * 0x1.0p-53; }

    static uint64_t splitmix64(uint64_t& x) {
        uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

private:
    static constexpr u128 kMultiplier = (u128(0x2360ED051FC65DA4ull) << 64) | 0x4385DF649FCCF645ull;
    u128 state_;
    u128 increment_;
};

}  // namespace edgerun
