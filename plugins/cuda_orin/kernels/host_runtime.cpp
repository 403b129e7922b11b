// Host-side runtime calls of the kernel library (plain C++: compiled by the host compiler
// against the CUDA runtime headers, so the CUDA 12 check can compile it with JetPack's
// headers).
#include "device_matrix.hpp"
#include "kernels.hpp"

#include <vector>

namespace edgerun::cuda_orin {

int device_sm_count(int device) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
    return n;
}

cudaError_t upload_matrix(int32_t type, const void* gguf, int32_t n_rows, int32_t n_cols, DeviceMatrix* out,
                          ReleaseFn release, void* user_data) {
    *out = DeviceMatrix{};
    const PackedLayout layout = packed_layout(type, n_rows, n_cols);
    if (layout.total_bytes == 0 || !gguf) return cudaErrorInvalidValue;
    std::vector<uint8_t> staging(layout.total_bytes);  // temporary: freed before returning
    repack_matrix(type, gguf, n_rows, n_cols, staging.data());
    void* storage = nullptr;
    cudaError_t err = cudaMalloc(&storage, layout.total_bytes);
    if (err != cudaSuccess) return err;
    err = cudaMemcpy(storage, staging.data(), layout.total_bytes, cudaMemcpyHostToDevice);
    if (err != cudaSuccess) {
        cudaFree(storage);
        return err;
    }
    out->view = packed_view(layout, type, n_rows, n_cols, storage);
    out->storage = storage;
    out->bytes = layout.total_bytes;
    if (release) release(user_data, gguf, gguf_matrix_bytes(type, n_rows, n_cols));
    return cudaSuccess;
}

void free_matrix(DeviceMatrix* m) {
    if (m->storage) cudaFree(m->storage);
    *m = DeviceMatrix{};
}

}  // namespace edgerun::cuda_orin
