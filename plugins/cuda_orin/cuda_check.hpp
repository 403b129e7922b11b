// A failed CUDA runtime call as sdk::Failure: one line naming the call and the error, out
// of memory as ER_E_OUT_OF_MEMORY. For the plugin's CUDA-side sources (cuda_device.cpp,
// context_memory.cpp).
#pragma once

#include <edgerun/plugin_sdk.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace edgerun::cuda_orin {

inline void check(cudaError_t status, const char* call) {
    if (status == cudaSuccess) return;
    const er_status code = status == cudaErrorMemoryAllocation ? ER_E_OUT_OF_MEMORY : ER_E_INTERNAL;
    throw sdk::Failure(code, std::string("cuda_orin: ") + call + " failed: " + cudaGetErrorName(status) + " (" +
                                 cudaGetErrorString(status) + ")");
}

}  // namespace edgerun::cuda_orin
