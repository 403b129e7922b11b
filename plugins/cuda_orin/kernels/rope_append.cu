// RoPE and KV-cache append for the token being decoded (rope_append.cuh): one block per
// head (the n_head query heads, then the n_head_kv key heads, each of which also stores
// its V head), one thread per dimension. The position is read from device memory, so the
// launch is graph-safe. With the option rope_append=gemv the Q/K/V GEMV does this work
// instead (gemv.cu) and this kernel is not launched.
//
// STATUS: see kernels.hpp.
#include "kernel_params.hpp"
#if ER_KERNEL_LAUNCHERS
#include "launch_kernel.cuh"
#endif
#include "grid_dependency.cuh"
#include "rope_append.cuh"

namespace edgerun::cuda_orin {
namespace {

__global__ void __launch_bounds__(kRopeAppendMaxHeadDim) rope_append_kernel(const RopeAppendParams p) {
    __shared__ float shared[kRopeAppendSharedBytes / 4];
    ER_SHARED_ARRAY(shared);
    begin_after_prior_grids();  // grid_dependency.cuh
    rope_append_head<false>(p, blockIdx.x, shared);
}

}  // namespace

inline dim3 rope_append_grid(const RopeAppendParams& p) { return dim3(p.n_head + p.cache.n_head_kv); }

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_rope_append(const RopeAppendParams& p, LaunchStream stream) {
    if (!valid_rope_append(p)) return cudaErrorInvalidValue;
    return launch_kernel(rope_append_kernel, rope_append_grid(p), dim3(p.rope.head_dim), 0, stream, p);
}
#endif

}  // namespace edgerun::cuda_orin
