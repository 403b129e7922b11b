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
// Values a thread loads (pass 1), and groups a warp loads (pass 2), before it uses the
// first. A loop of one load, its use, then the next waited for one L2 round trip per
// value: ptxas kept that order (sm_90 SASS of c23497e), ten round trips a pass over a row
// of 2560 with a residual add. Batched, a row of up to 4096 values is one round trip a
// pass, in the one block of a residual add too (16 groups a warp).
constexpr int kPrepareBatch = 16;
constexpr int kPrepareGroupBatch = 16;

// The launch's blocks: enough for one group of 32 values a warp, or one with a residual add.
int prepare_blocks(const PrepareParams& p) {
    if (p.residual) return 1;
    return (padded_length(p.n) / kQ8Group + kPrepareWarps - 1) / kPrepareWarps;
}

__device__ float load_input(const PrepareParams& p, int i) {
    return p.x_is_f16 ? half_to_float(static_cast<const uint16_t*>(p.x)[i]) : static_cast<const float*>(p.x)[i];
}

// Pass 1: h = x (+ residual) for values threadIdx.x, + kPrepareThreads, ..., written to
// residual_out with a residual add, and this thread's sum of h^2 in that order. Each value
// is read and written by the same thread, so residual_out may alias x or residual.
__device__ float add_residual_and_sum_squares(const PrepareParams& p) {
    float sum_sq = 0.0f;
    for (int first = threadIdx.x; first < p.n; first += kPrepareBatch * kPrepareThreads) {
        float h[kPrepareBatch], r[kPrepareBatch];
#pragma unroll
        for (int b = 0; b < kPrepareBatch; ++b) {
            const int i = first + b * kPrepareThreads;
            h[b] = i < p.n ? load_input(p, i) : 0.0f;
            r[b] = i < p.n && p.residual ? p.residual[i] : 0.0f;
        }
#pragma unroll
        for (int b = 0; b < kPrepareBatch; ++b) {
            const int i = first + b * kPrepareThreads;
            if (i >= p.n) continue;
            if (p.residual) {
                h[b] += r[b];
                p.residual_out[i] = h[b];
            }
            sum_sq += h[b] * h[b];
        }
    }
    return sum_sq;
}

__global__ void __launch_bounds__(kPrepareThreads) prepare_kernel(const PrepareParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    __shared__ float scratch[32];
    ER_SHARED_ARRAY(scratch);
    float inv_rms = 1.0f;
    if (p.residual || p.norm_weight) {
        const float sum_sq = add_residual_and_sum_squares(p);
        if (p.norm_weight) inv_rms = rsqrtf(block_sum(sum_sq, scratch) / float(p.n) + p.norm_eps);
        else __syncthreads();  // residual_out must be visible to every warp before pass 2
    }

    // Pass 2: each warp's groups of 32 (a warp-uniform index), kPrepareGroupBatch loaded at once.
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int n_groups = padded_length(p.n) / kQ8Group, group_stride = gridDim.x * kPrepareWarps;
    for (int first = blockIdx.x * kPrepareWarps + warp; first < n_groups; first += kPrepareGroupBatch * group_stride) {
        float v[kPrepareGroupBatch];
#pragma unroll
        for (int b = 0; b < kPrepareGroupBatch; ++b) {
            const int i = (first + b * group_stride) * kQ8Group + lane;
            v[b] = 0.0f;
            if (first + b * group_stride < n_groups && i < p.n) {
                // After a residual add, h lives in residual_out (it may alias x or residual).
                const float h = p.residual ? p.residual_out[i] : load_input(p, i);
                v[b] = p.norm_weight ? h * inv_rms * p.norm_weight[i] : h;
            }
        }
#pragma unroll
        for (int b = 0; b < kPrepareGroupBatch; ++b) {
            const int g = first + b * group_stride, i = g * kQ8Group + lane;
            if (g >= n_groups) continue;
            p.out_f[i] = v[b];
            p.out_q[i] = quantize_q8_in_warp(v[b], lane, g, p.out_segments);
        }
    }
}

}  // namespace

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_prepare(const PrepareParams& p, LaunchStream stream) {
    if (!p.x || p.n <= 0 || !p.out_f || !p.out_q || !p.out_segments || (p.residual && !p.residual_out))
        return cudaErrorInvalidValue;
    return launch_kernel(prepare_kernel, dim3(prepare_blocks(p)), dim3(kPrepareThreads), 0, stream, p);
}
#endif

}  // namespace edgerun::cuda_orin
