// The GEMV's per-task loop (row_slice_dot, quant_tasks.hpp) for one weight type and one
// input form per kernel, so that gemv_task_instructions.py can count the SASS instructions
// one task costs: each kernel is a warp over one row, through the loop gemv.cu runs.
// Compiled only by that script, never linked. `#pragma unroll 1` there makes one loop
// iteration exactly one task; each kernel has gemv_kernel's bound of three 256-thread
// blocks per SM (80 registers), under which ptxas schedules the loop there.
#include "quant_tasks.hpp"
#include "task_ring.cuh"

namespace edgerun::cuda_orin {

// Float activations, staged in shared memory with their segment sums (the backend's
// default).
template <int32_t Type>
__global__ void __launch_bounds__(256, 3) task_loop_f32(const __grid_constant__ PackedMatrix w, int n_pad, float* out) {
    extern __shared__ Words4 stage[];
    out[threadIdx.x] = row_slice_dot<Type>(w, blockIdx.x, StagedFloatX::in_stage(stage, 1, n_pad), threadIdx.x, 32);
}

// 8-bit activations prepared in global memory, dotted by dp4a (option activations=q8
// where x does not fit the stage).
template <int32_t Type>
__global__ void __launch_bounds__(256, 3)
    task_loop_q8(const __grid_constant__ PackedMatrix w, const __grid_constant__ ActivationQ8 x, float* out) {
    out[threadIdx.x] = row_slice_dot<Type>(w, blockIdx.x, GlobalQ8X{x}, threadIdx.x, 32);
}

// 8-bit activations the block quantized as it staged them (GemvLaunch::quantize_x, which
// activations=q8 takes where x fits the stage): bytes, scales and sums in shared memory.
template <int32_t Type>
__global__ void __launch_bounds__(256, 3) task_loop_q8s(const __grid_constant__ PackedMatrix w, int n_pad, float* out) {
    extern __shared__ Words4 stage[];
    out[threadIdx.x] = row_slice_dot<Type>(w, blockIdx.x, StagedQ8X::in_stage(stage, 1, n_pad), threadIdx.x, 32);
}

// Two rows walked together against 8-bit x prepared in global memory (row_pair_slice_dot:
// GemvLaunch::swiglu_pairs and row_pairs): one iteration is a task of each row.
template <int32_t Type>
__global__ void __launch_bounds__(256, 3)
    task_loop_q8pair(const __grid_constant__ PackedMatrix w, const __grid_constant__ PackedMatrix w2,
                     const __grid_constant__ ActivationQ8 x, float* out) {
    float a, b;
    row_pair_slice_dot<Type>(w, blockIdx.x, w2, blockIdx.x, GlobalQ8X{x}, threadIdx.x, 32, a, b);
    out[threadIdx.x] = a;
    out[threadIdx.x + 256] = b;
}

// The same pairs through a ring of tasks `depth` deep in shared memory (task_ring.cuh:
// GemvLaunch::ring_depth), slots of slot_bytes.
template <int32_t Type>
__global__ void __launch_bounds__(256, 3)
    task_loop_q8ring(const __grid_constant__ PackedMatrix w, const __grid_constant__ PackedMatrix w2,
                     const __grid_constant__ ActivationQ8 x, int depth, int slot_bytes, float* out) {
    extern __shared__ __align__(16) uint8_t ring_memory[];
    const int lane = threadIdx.x % 32;
    const TaskRing ring{ring_memory + threadIdx.x / 32 * 2 * depth * slot_bytes, slot_bytes, depth, lane};
    float a, b;
    row_pair_slice_dot_ring<Type>(w, blockIdx.x, w2, blockIdx.x, GlobalQ8X{x}, lane, 32, ring, a, b);
    out[threadIdx.x] = a;
    out[threadIdx.x + 256] = b;
}

#define TASK_LOOPS(T)                                                                    \
    template __global__ void task_loop_f32<T>(const __grid_constant__ PackedMatrix, int, float*); \
    template __global__ void task_loop_q8<T>(const __grid_constant__ PackedMatrix,           \
                                             const __grid_constant__ ActivationQ8, float*);  \
    template __global__ void task_loop_q8s<T>(const __grid_constant__ PackedMatrix, int, float*); \
    template __global__ void task_loop_q8pair<T>(const __grid_constant__ PackedMatrix,        \
                                                 const __grid_constant__ PackedMatrix,        \
                                                 const __grid_constant__ ActivationQ8, float*);  \
    template __global__ void task_loop_q8ring<T>(const __grid_constant__ PackedMatrix,        \
                                                 const __grid_constant__ PackedMatrix,        \
                                                 const __grid_constant__ ActivationQ8, int, int, float*);
TASK_LOOPS(kQ4_0)
TASK_LOOPS(kQ4_1)
TASK_LOOPS(kQ5_0)
TASK_LOOPS(kQ5_1)
TASK_LOOPS(kQ8_0)
TASK_LOOPS(kQ2_K)
TASK_LOOPS(kQ3_K)
TASK_LOOPS(kQ4_K)
TASK_LOOPS(kQ5_K)
TASK_LOOPS(kQ6_K)

}  // namespace edgerun::cuda_orin
