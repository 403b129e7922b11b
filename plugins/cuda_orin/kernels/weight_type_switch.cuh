// The one switch from a matrix's run-time weight type to the kernels' compile-time one
// (device code only): visit_weight_type(type, fallback, f) returns f(TypeTag<T>{}) for
// the GEMV's weight types, fallback for any other (the launchers refuse those first).
// The type is uniform across a block (one matrix per block), so it costs no divergence.
#pragma once

#include "weight_layout.hpp"

namespace edgerun::cuda_orin {

template <class Result, class Visitor>
__device__ __forceinline__ Result visit_weight_type(int32_t type, Result fallback, Visitor&& f) {
    switch (type) {
        case kQ4_0: return f(TypeTag<kQ4_0>{});
        case kQ4_1: return f(TypeTag<kQ4_1>{});
        case kQ5_0: return f(TypeTag<kQ5_0>{});
        case kQ5_1: return f(TypeTag<kQ5_1>{});
        case kQ8_0: return f(TypeTag<kQ8_0>{});
        case kQ2_K: return f(TypeTag<kQ2_K>{});
        case kQ3_K: return f(TypeTag<kQ3_K>{});
        case kQ4_K: return f(TypeTag<kQ4_K>{});
        case kQ5_K: return f(TypeTag<kQ5_K>{});
        case kQ6_K: return f(TypeTag<kQ6_K>{});
        case kF32: return f(TypeTag<kF32>{});
        case kF16: return f(TypeTag<kF16>{});
        case kBF16: return f(TypeTag<kBF16>{});
        default: return fallback;
    }
}

// A kernel built for one weight type passes it as kType and its visits cost nothing;
// kAnyWeightType switches at run time (visit_weight_type). One type a kernel is less code
// for a warp to fetch: alone under Nsight Compute the GEMV's typed launches waited far less
// on instruction fetch and ran 11-14% faster, though not in a replayed decode step
// (option gemv_kernels; bench/results/h100-2026-11-28-9badf87).
inline constexpr int32_t kAnyWeightType = -1;

template <int32_t kType, class Result, class Visitor>
__device__ __forceinline__ Result visit_weight_type_of(int32_t type, Result fallback, Visitor&& f) {
    if constexpr (kType == kAnyWeightType)
        return visit_weight_type(type, fallback, f);
    else
        return f(TypeTag<kType>{});
}

}  // namespace edgerun::cuda_orin
