// Activation preparation: residual add, RMSNorm and 8-bit quantization of a GEMV input in
// one pass over x, so the norm is folded into the load of x that the GEMV needs anyway.
//
// Blocks of 256 threads: pass 1 forms h = x (+ residual), writes it back if asked and
// sums h^2; pass 2 has each warp take groups of 32 values, scale them by the norm, write
// the float copy and quantize the group (max via shuffles, then the q8 rule). Without a
// residual add the groups are spread over prepare_blocks() blocks, each of which sums the
// whole row itself (a few KB from L2, in the same order in every block, so every block
// has the same inv_rms): on one SM the four prepares of a decoder layer took 28% of a
// decode step's kernel time on the H100 (Llama-3.2-1B, activations=q8, profile=1). A
// residual add writes h back, perhaps over x, which other blocks would still be reading:
// one block then.
//
// STATUS: see kernels.hpp.
#include "kernel_params.hpp"
#if ER_KERNEL_LAUNCHERS
#include "launch_kernel.cuh"
#endif
#include "device_math.hpp"
#include "grid_dependency.cuh"
#include "warp.cuh"

namespace edgerun::cuda_orin {
namespace {

constexpr int kPrepareThreads = 256;
constexpr int kPrepareWarps = kPrepareThreads / 32;

// The launch's blocks: enough for one group of 32 values a warp, or one with a residual add.
int prepare_blocks(const PrepareParams& p) {
    if (p.residual) return 1;
    return (padded_length(p.n) / kQ8Group + kPrepareWarps - 1) / kPrepareWarps;
}

__device__ float load_input(const PrepareParams& p, int i) {
    return p.x_is_f16 ? half_to_float(static_cast<const uint16_t*>(p.x)[i]) : static_cast<const float*>(p.x)[i];
}

__global__ void __launch_bounds__(kPrepareThreads) prepare_kernel(const PrepareParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    __shared__ float scratch[32];
    ER_SHARED_ARRAY(scratch);
    float inv_rms = 1.0f;
    if (p.residual || p.norm_weight) {
        float sum_sq = 0.0f;
        for (int i = threadIdx.x; i < p.n; i += blockDim.x) {
            float h = load_input(p, i);
            if (p.residual) {
                h += p.residual[i];
                p.residual_out[i] = h;
            }
            sum_sq += h * h;
        }
        if (p.norm_weight) inv_rms = rsqrtf(block_sum(sum_sq, scratch) / float(p.n) + p.norm_eps);
        else __syncthreads();  // residual_out must be visible to every warp before pass 2
    }

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int n_groups = padded_length(p.n) / kQ8Group;
    for (int g = blockIdx.x * kPrepareWarps + warp; g < n_groups; g += gridDim.x * kPrepareWarps) {
        const int i = g * kQ8Group + lane;
        float v = 0.0f;
        if (i < p.n) {
            // After a residual add, h lives in residual_out (it may alias x or residual).
            const float h = p.residual ? p.residual_out[i] : load_input(p, i);
            v = p.norm_weight ? h * inv_rms * p.norm_weight[i] : h;
        }
        p.out_f[i] = v;
        const float d = q8_scale(warp_max(fabsf(v)));
        p.out_q[i] = q8_round(v, q8_inverse(d));
        if (lane == 0) p.out_d[g] = d;
    }
}

}  // namespace

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_prepare(const PrepareParams& p, LaunchStream stream) {
    if (!p.x || p.n <= 0 || !p.out_f || !p.out_q || !p.out_d || (p.residual && !p.residual_out))
        return cudaErrorInvalidValue;
    return launch_kernel(prepare_kernel, dim3(prepare_blocks(p)), dim3(kPrepareThreads), 0, stream, p);
}
#endif

}  // namespace edgerun::cuda_orin
