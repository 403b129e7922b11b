// cuBLAS behind Device::gemm, loaded at run time (dlopen) rather than linked: the plugin
// then still loads where the CUDA Toolkit's cuBLAS is missing (a machine without a GPU
// driver, a trimmed JetPack), and says why long steps keep the multi-row GEMV.
#pragma once

#include "device.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace edgerun::cuda_orin {

class CublasGemm {
public:
    // Null with *why when no libcublas can be loaded or initialised on this stream.
    static std::unique_ptr<CublasGemm> load(cudaStream_t stream, std::string* why);
    virtual ~CublasGemm() = default;
    // The workspace cuBLAS's documentation (cublasSetWorkspace) recommends: 32 MiB on
    // Hopper (sm_90), 4 MiB on the others (Orin: sm_87); GPUs after Hopper get Hopper's.
    static uint64_t recommended_workspace_bytes(int compute_major);
    // Hands cuBLAS a workspace the caller allocated and keeps for as long as this object
    // lives, so that cuBLAS allocates none of its own: the device's memory is then all
    // counted, and nothing is allocated while a step is captured. False with *why.
    virtual bool use_workspace(void* workspace, uint64_t bytes, std::string* why) = 0;
    // Enqueues C = A B^T (GemmParams: cublasSgemm for floats, cublasGemmEx with F32
    // accumulation for halves) on the stream; throws sdk::Failure naming the call.
    virtual void gemm(const GemmParams& p) = 0;
};

}  // namespace edgerun::cuda_orin
