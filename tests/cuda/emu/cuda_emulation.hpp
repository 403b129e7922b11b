// A small CPU emulation of the CUDA execution model, enough to run the cuda_orin kernel
// sources on the host: each thread of a block is a fiber (ucontext), blocks run one
// after another, and __syncthreads, __syncwarp and warp shuffles are barriers among the
// fibers. One OS thread runs them all, so the atomics below are plain read-modify-writes
// and a memory fence has nothing to order. Include it before a kernel source (.cu)
// compiled as C++.
//
// What a run here shows: the kernels' indexing, reductions, barriers and arithmetic give
// the right numbers. What it cannot show: speed, memory coalescing, behaviour that
// depends on the hardware's scheduling or memory model, or device-only code paths (the
// `__CUDA_ARCH__` branches of device_math.hpp: there the portable host twins run).
// A shuffle or __syncwarp with lanes that have exited, or a deadlocked barrier, aborts
// with a message: those are bugs on a GPU too.
//
// To catch more than a friendly schedule would: shared memory is NaN at each block's
// start (each kernel registers its __shared__ arrays with ER_SHARED_ARRAY, see below; the
// dynamic shared memory of ER_DYNAMIC_SHARED is filled too);
// the blocks of a launch, and the threads of a block, run in orders shuffled by a seeded
// generator (EDGERUN_EMU_SEED, default fixed, so a failure reproduces), so code that lacks
// a barrier sees another thread's write early or late, and code that expects one block of
// a group to finish last finds another; half the blocks run a warp at a time, each up to
// its next block barrier, so a missing __syncthreads shows even where the reading warp
// synchronises within itself first (an mma, a shuffle); cp.async copies land at either
// end of their window (copy_async below); and the vector loads of
// device_math.hpp check their alignment on the host (a misaligned load faults on a GPU).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace emu {

const dim3& thread_idx();
const dim3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
void syncthreads();
void syncwarp();
// Every lane of the warp deposits `value`; each gets the value lane `src_lane` deposited.
uint64_t warp_exchange(uint64_t value, int src_lane);
// Whether any lane of the warp passes true (__any_sync over the full warp).
bool warp_any(bool predicate);
// mma.sync m16n8k16 with F16 inputs and F32 accumulation, for the running warp (the host
// twin of plugins/cuda_orin/kernels/mma.cuh): every lane passes its A, B and D fragments
// as the PTX ISA lays them out; each gets its own four elements of D = A B + D back,
// computed from the whole A and B the warp holds. The products of halves are exact in
// float and are added in k order (a GPU's order and rounding may differ in the last bits).
void warp_mma_m16n8k16(float* d, const uint32_t* a, const uint32_t* b);
// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 for the running warp: lane 8i + j
// passes row j of matrix i (8 halves, 16-byte aligned, in a __shared__ array or dynamic
// shared memory); each lane gets register i as the PTX ISA lays it out.
void warp_ldmatrix_x4(uint32_t* r, const void* row, bool transposed);
// cp.async (plugins/cuda_orin/kernels/async_copy.cuh) for the running thread: a copy of
// `bytes` from global `src` to shared `dst` (both aligned to `bytes`; zeros when not
// valid) lands, as the seeded generator draws, either at once or at the wait that
// completes it: the earliest and the latest a GPU may write it. commit closes the thread's
// open group of copies; wait(n) makes the recorded copies of all but the n newest
// committed groups, in the order issued. A thread that ends with copies still pending
// aborts the run.
void copy_async(void* dst, const void* src, int bytes, bool valid);
void commit_async_copies();
void wait_async_copies(int n);
// Runs body once per thread of every block of the grid, with `dynamic_shared_bytes` of
// dynamic shared memory per block (the third <<<>>> argument). `kernel` names it in the
// errors of the launch (see RequirePriorGridWaits).
void launch(dim3 grid, dim3 block, const std::function<void()>& body, size_t dynamic_shared_bytes = 0,
            const char* kernel = "a kernel");
// The running block's dynamic shared memory: 16-byte aligned, NaN bytes at the block's
// start like the static arrays; null when the launch asked for none.
void* dynamic_shared();
// Adds a __shared__ array to the ones filled with NaN bytes (0xFF: NaN as float or half,
// -1 as an integer) at each block's start, and fills it now (its first use is in the
// block running). Returns true, to initialise the static that registers it once.
bool register_shared(void* array, size_t bytes);

// Programmatic dependent launch (plugins/cuda_orin/kernels/grid_dependency.cuh): the host
// twins of wait_for_prior_grids() and allow_next_grid() report here. While a
// RequirePriorGridWaits(true) lives (the emulated device's pdl=1), a launch in which some
// thread of some block never waited, or allowed the next grid before waiting, throws
// std::logic_error naming the kernel, the block and the thread once the block has run: on
// a GPU such a kernel could read its input before the previous launch wrote it.
void prior_grids_waited();
void next_grid_allowed();
class RequirePriorGridWaits {
public:
    explicit RequirePriorGridWaits(bool on);
    ~RequirePriorGridWaits();
    RequirePriorGridWaits(const RequirePriorGridWaits&) = delete;
    RequirePriorGridWaits& operator=(const RequirePriorGridWaits&) = delete;

private:
    bool previous_;
};

}  // namespace emu

// The registration a kernel makes right after declaring a __shared__ array (a no-op
// under nvcc, device_math.hpp). Shared arrays are statics here, and GCC ignores section
// attributes on the statics of templates, so the arrays are listed as they are first met.
#define ER_SHARED_ARRAY(name) \
    [[maybe_unused]] static const bool name##_emu_registered = ::emu::register_shared(&(name), sizeof(name))
#define ER_DYNAMIC_SHARED(type, name) type* const name = static_cast<type*>(::emu::dynamic_shared())
#define ER_PRIOR_GRIDS_WAITED() ::emu::prior_grids_waited()
#define ER_NEXT_GRID_ALLOWED() ::emu::next_grid_allowed()
#define ER_WARP_MMA(d, a, b) ::emu::warp_mma_m16n8k16(d, a, b)
#define ER_WARP_LDMATRIX(r, row, transposed) ::emu::warp_ldmatrix_x4(r, row, transposed)
#define ER_COPY_ASYNC(dst, src, bytes, valid) ::emu::copy_async(dst, src, bytes, valid)
#define ER_COMMIT_ASYNC_COPIES() ::emu::commit_async_copies()
#define ER_WAIT_ASYNC_COPIES(n) ::emu::wait_async_copies(n)

namespace emu {

}  // namespace emu

#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::block_idx())
#define blockDim (::emu::block_dim())
#define gridDim (::emu::grid_dim())
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __launch_bounds__(...)
#define __grid_constant__
#define __syncthreads() ::emu::syncthreads()
#define __syncwarp(...) ::emu::syncwarp()

template <class T>
T __shfl_sync(unsigned /*mask*/, T value, int src_lane) {
    static_assert(sizeof(T) <= 8);
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    bits = emu::warp_exchange(bits, src_lane & 31);
    T out;
    std::memcpy(&out, &bits, sizeof(T));
    return out;
}

template <class T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
    return __shfl_sync(mask, value, int(threadIdx.x % 32) ^ lane_mask);
}

inline int __any_sync(unsigned /*mask*/, int predicate) { return emu::warp_any(predicate != 0); }

inline int atomicAdd(int* address, int value) {
    const int old = *address;
    *address = old + value;
    return old;
}
inline int atomicExch(int* address, int value) {
    const int old = *address;
    *address = value;
    return old;
}
inline void __threadfence() {}

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
