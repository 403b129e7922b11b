// Programmatic dependent launch (PDL, compute capability 9.0 and later): the two calls
// every kernel of this library makes, so a launch made with the PDL attribute
// (LaunchStream::pdl, kernels.hpp) may start while the launch before it still runs.
//
//   wait_for_prior_grids()  before the kernel's first read of anything an earlier launch
//                           wrote and before its first global write (a write could race
//                           the previous kernel's reads of the same buffer). Only what
//                           no launch of a step writes may come before it: the GEMV's L2
//                           prefetch of its weights (gemv.cu), which is the point.
//   allow_next_grid()       right after the wait: the next launch's blocks may be
//                           scheduled from then on.
//
// Why the trigger may come that early: PTX ISA, griddepcontrol: ".wait causes the
// executing thread to wait until all prerequisite grids in flight have completed and all
// the memory operations from the prerequisite grids are performed and made visible to the
// current grid", while .launch_dependents only lets the dependents be scheduled ("the
// dependent may launch before the completion of the current grid"). CUDA Programming
// Guide 4.5 (Programmatic Dependent Launch and Synchronization) says the same of the
// runtime's cudaGridDependencySynchronize / cudaTriggerProgrammaticLaunchCompletion: the
// trigger carries no memory visibility, the wait waits for the primary's completion and
// flush. So the next kernel's wait still sees all of this kernel's writes, however early
// this kernel triggers; and as each kernel triggers only after its own wait, the chain is
// transitive (kernel N+2 runs its body only after N+1 completed, which ran after N).
//
// Both are sm_90 instructions: compiled only when __CUDA_ARCH__ >= 900, nothing for
// sm_87 or the compute_87 PTX (cuda_device.cpp turns PDL on only where the kernels carry
// them). Without the launch attribute both are no-ops at run time.
//
// On the CPU emulation (tests/cuda/emu) they report to it: with the emulated device's
// pdl=1, a launch in which some thread never called wait_for_prior_grids(), or called
// allow_next_grid() first, fails naming the kernel (ER_PRIOR_GRIDS_WAITED and
// ER_NEXT_GRID_ALLOWED, defined by cuda_emulation.hpp).
#pragma once

#if !defined(ER_PRIOR_GRIDS_WAITED)
#define ER_PRIOR_GRIDS_WAITED() static_cast<void>(0)
#endif
#if !defined(ER_NEXT_GRID_ALLOWED)
#define ER_NEXT_GRID_ALLOWED() static_cast<void>(0)
#endif

namespace edgerun::cuda_orin {

__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
#else
    ER_PRIOR_GRIDS_WAITED();
#endif
}

__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
#else
    ER_NEXT_GRID_ALLOWED();
#endif
}

// Both, as every kernel but the GEMV (which prefetches between) begins.
__device__ __forceinline__ void begin_after_prior_grids() {
    wait_for_prior_grids();
    allow_next_grid();
}

}  // namespace edgerun::cuda_orin
