// The greedy choice over one row of logits, made the same way wherever it is made (the
// runner on the host, a backend's plan_argmax on its device): the highest value, ties to
// the lowest id. A NaN or infinite logit means the forward pass went wrong, so it is
// reported to the caller rather than skipped or chosen.
// Header-only and C++17, like the rest of the SDK, so plugins use it too.
#pragma once

#include <cmath>
#include <cstdint>

namespace edgerun {

struct Argmax {
    int64_t index = 0;        // the chosen id, when every logit is finite
    int64_t non_finite = -1;  // the first id whose logit is NaN or infinite; -1: none
};

inline Argmax argmax_logits(const float* row, int64_t n) {
    Argmax out;
    for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(row[i])) return {0, i};
        if (row[i] > row[out.index]) out.index = i;
    }
    return out;
}

}  // namespace edgerun
