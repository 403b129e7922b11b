// The one way the launchers of this library start a kernel (nvcc only): cudaLaunchKernelEx,
// with the programmatic-dependent-launch attribute when the stream asks for it
// (LaunchStream::pdl, kernels.hpp; what the kernels do for it: grid_dependency.cuh).
// Stream capture keeps the attribute as a programmatic edge of the graph (CUDA 12.3 and
// later), so a captured step overlaps its launches as a plain one does. Launches of other
// libraries between ours (cuBLAS's GEMM) carry no attribute, so they wait for our kernel
// in full; ours after theirs may be scheduled early only if their kernels trigger, and
// still passes wait_for_prior_grids only once they have completed.
#pragma once

#include "kernels.hpp"

#include <cuda_runtime.h>

#include <utility>

namespace edgerun::cuda_orin {

template <class... Params, class... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                          LaunchStream stream, Args&&... args) {
    cudaLaunchAttribute programmatic{};
    programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    programmatic.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = dynamic_shared_bytes;
    config.stream = stream.stream;
    config.attrs = stream.pdl ? &programmatic : nullptr;
    config.numAttrs = stream.pdl ? 1 : 0;
    const cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
    return err != cudaSuccess ? err : cudaGetLastError();
}

}  // namespace edgerun::cuda_orin
