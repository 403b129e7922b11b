// The CUDA context's share of device memory, measured when cuda_orin first opens a device.
//
// cudaMemGetInfo needs a context, so it cannot say what the context itself took. Free
// memory is read without one instead, before and after the context is made:
//   - a discrete GPU: NVML (libnvidia-ml.so.1, the driver's management library, loaded at
//     run time so the plugin still loads without it);
//   - an integrated GPU (Jetson, where NVML is absent): /proc/meminfo's MemAvailable, the
//     same figure cuda_orin checks allocations against there.
// Other processes allocating at the same moment blur the figure; a context something else
// in this process made first cannot be measured at all (the driver says whether one is).
#pragma once

#include <cstdint>
#include <string>

namespace edgerun::cuda_orin {

struct ContextMemory {
    uint64_t bytes = 0;       // free before the context was made minus free after
    std::string unmeasured;   // why bytes is not known ("" when it is)
};

// Makes the primary context of CUDA device `index` (cudaSetDevice; cudaFree(0)) and
// measures what it took, once per device and process: the runtime keeps that context until
// the process ends, so later opens get the first figure. Throws sdk::Failure when the
// context cannot be made.
ContextMemory make_context_measured(int32_t index, bool integrated);

// MemAvailable of /proc/meminfo in bytes, 0 when unknown. On a Jetson the GPU allocates
// from the same DRAM, and cudaMemGetInfo ignores memory the kernel would reclaim.
uint64_t host_mem_available();

}  // namespace edgerun::cuda_orin
