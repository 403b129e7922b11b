// Loading weights into the GPU layout: repack on the CPU, copy once, release the file's
// pages. On a GPU that shares DRAM with the CPU (Jetson) the release is what keeps the
// weights from being held twice: the caller passes er_model_params.release (or a
// wrapper of er_format_iface.release_range) and it is called as soon as the packed copy
// is on the device.
#pragma once

#include "weight_layout.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace edgerun::cuda_orin {

struct DeviceMatrix {
    PackedMatrix view{};
    void* storage = nullptr;
    uint64_t bytes = 0;
};

using ReleaseFn = void (*)(void* user_data, const void* data, uint64_t nbytes);

// `gguf` holds n_rows rows of n_cols weights of `type` in file layout. On success
// release(user_data, gguf, its size) has been called if release is not null.
cudaError_t upload_matrix(int32_t type, const void* gguf, int32_t n_rows, int32_t n_cols, DeviceMatrix* out,
                          ReleaseFn release = nullptr, void* user_data = nullptr);

void free_matrix(DeviceMatrix* m);

}  // namespace edgerun::cuda_orin
