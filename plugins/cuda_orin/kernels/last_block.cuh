// The last block of a group to finish does the group's follow-up work, in the launch that
// produced it instead of a launch of its own: the split attention's merge
// (attention_split.cuh) and the per-head RoPE and KV append after the Q/K/V GEMV (gemv.cu).
#pragma once

#include "device_math.hpp"

namespace edgerun::cuda_orin {

// Whether this block's `count` units of work (a split, rows of a head) complete the
// group's `total`, counted in `counter`. Every thread of the block calls it. The pattern
// of the CUDA Programming Guide's example for __threadfence() (a sum in one pass): every
// thread's writes are made visible device-wide (the fence) before one thread adds the
// block's count; the block that completes the total puts the counter back to 0 for the
// next launch (which begins only after this one has ended: a launch that reads the
// counter waits for the grids before it), and fences again before it reads the other
// blocks' results, which it must read from L2 (load_f32_l2: its SM's L1 may hold a stale
// line).
__device__ inline bool takes_last_ticket(int* counter, int count, int total) {
    __shared__ int done;
    ER_SHARED_ARRAY(done);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        done = atomicAdd(counter, count) + count;
        if (done == total) atomicExch(counter, 0);
    }
    __syncthreads();
    // A next call rewrites `done` only after its first barrier, which every thread reaches
    // after reading it here.
    const bool last = done == total;
    if (last) __threadfence();
    return last;
}

}  // namespace edgerun::cuda_orin
