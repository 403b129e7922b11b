// Copies from global to shared memory that go around the registers (cp.async, compute
// capability 8.0 and later: Orin's sm_87 and the H200's sm_90 alike), so that a block can
// have its next tile on the way while it computes on this one, at no cost in registers.
//
//   copy_async<Bytes>(dst, src, valid)  one copy of 4, 8 or 16 bytes; dst in shared
//                                       memory, both aligned to Bytes. With valid false
//                                       the bytes written are zeros and src is not read
//                                       (it must still be an address of the buffer).
//   commit_async_copies()               closes the group of this thread's copies issued
//                                       since its last commit (an empty group is fine).
//   wait_async_copies<N>()              waits until at most this thread's N newest groups
//                                       are still on the way. The finished copies are then
//                                       visible to this thread; other threads see them
//                                       after a __syncthreads that follows the wait.
//
// On the CPU emulation (tests/cuda/emu: ER_COPY_ASYNC, ER_WAIT_ASYNC_COPIES) each copy
// lands, drawn at random, either when issued or at the wait that completes it, the
// earliest and the latest a GPU may write it: a thread that reads a copy before its wait,
// or another thread's before the barrier after it, may read the NaNs the emulation fills
// shared memory with; a copy into a buffer other warps still read may overwrite it under
// them; and a thread that ends with copies never waited for aborts the run.
#pragma once

#include "device_math.hpp"

namespace edgerun::cuda_orin {

template <int Bytes>
__device__ __forceinline__ void copy_async(void* dst, const void* src, bool valid) {
    static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ < 800
#error "cp.async needs compute capability 8.0 or later"
#endif
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    const int src_bytes = valid ? Bytes : 0;  // fewer than Bytes: the rest are zeros
    if constexpr (Bytes == 16)  // .cg: through L2 only, as the tile is read once a block
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(src), "r"(src_bytes) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(address), "l"(src), "n"(Bytes), "r"(src_bytes)
                     : "memory");
#elif defined(ER_COPY_ASYNC)
    ER_COPY_ASYNC(dst, src, Bytes, valid);
#elif !defined(__CUDACC__)
#error "async_copy.cuh on the host needs the CUDA emulation (tests/cuda/emu/cuda_emulation.hpp) included first"
#endif
}

__device__ __forceinline__ void commit_async_copies() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;" ::: "memory");
#elif defined(ER_COMMIT_ASYNC_COPIES)
    ER_COMMIT_ASYNC_COPIES();
#endif
}

template <int N>
__device__ __forceinline__ void wait_async_copies() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#elif defined(ER_WAIT_ASYNC_COPIES)
    ER_WAIT_ASYNC_COPIES(N);
#endif
}

}  // namespace edgerun::cuda_orin
