// cuBLAS behind Device::gemm, loaded at run time (dlopen) rather than linked: the plugin
// then still loads where the CUDA Toolkit's cuBLAS is missing (a machine without a GPU
// driver, a trimmed JetPack), and says why long steps keep the multi-row GEMV.
#pragma once

#include "device.hpp"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

namespace edgerun::cuda_orin {

class CublasGemm {
public:
    // Null with *why when no libcublas can be loaded or initialised on this stream.
    static std::unique_ptr<CublasGemm> load(cudaStream_t stream, std::string* why);
    virtual ~CublasGemm() = default;
    // Enqueues C = A B^T (GemmParams) on the stream; throws sdk::Failure naming the call.
    virtual void sgemm(const GemmParams& p) = 0;
};

}  // namespace edgerun::cuda_orin
