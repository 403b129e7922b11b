// Token embedding lookup (token id read from device memory) and the step counters of a
// captured decode step.
//
// STATUS: see kernels.hpp.
#include "device_math.hpp"
#include "kernel_params.hpp"
#if ER_KERNEL_LAUNCHERS
#include "kernels.hpp"
#endif

#include <edgerun/quant/blocks.hpp>

namespace edgerun::cuda_orin {
namespace {

// Elements and bytes of one dequantization unit of a row: a block for quantized types, 32
// values for plain ones.
struct RowUnit {
    int elems;
    int bytes;
};

__host__ __device__ RowUnit row_unit(int32_t type) {
    switch (type) {
        case 0: return {32, 128};   // F32
        case 1: return {32, 64};    // F16
        case 30: return {32, 64};   // BF16
        case 2: return {32, 18};
        case 3: return {32, 20};
        case 6: return {32, 22};
        case 7: return {32, 24};
        case 8: return {32, 34};
        case 10: return {256, 84};
        case 11: return {256, 110};
        case 12: return {256, 144};
        case 13: return {256, 176};
        case 14: return {256, 210};
        default: return {0, 0};
    }
}

// One thread per unit of the row; dequantize_row is the shared dequantizer of blocks.hpp.
__global__ void embed_kernel(const EmbedParams p) {
    const RowUnit unit = row_unit(p.type);
    const int u = blockIdx.x * blockDim.x + threadIdx.x;
    const int start = u * unit.elems;
    if (start >= p.n_cols) return;
    const int n = min(unit.elems, p.n_cols - start);
    const int token = *p.token;
    if (token < 0 || token >= p.n_rows) {
        for (int i = 0; i < n; ++i) p.out[start + i] = 0.0f;
        return;
    }
    const uint8_t* row = static_cast<const uint8_t*>(p.table) + size_t(token) * p.row_bytes;
    if (n == unit.elems) {
        quant::dequantize_row(p.type, row + size_t(u) * unit.bytes, p.out + start, n);
    } else {  // the tail of a plain-typed row shorter than 32
        float tmp[32];
        quant::dequantize_row(p.type, row + size_t(u) * unit.bytes, tmp, n);
        for (int i = 0; i < n; ++i) p.out[start + i] = tmp[i];
    }
}

__global__ void advance_step_kernel(StepCounters* c) {
    c->pos += 1;
    c->kv_len = c->pos + 1;
}

}  // namespace

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_embed(const EmbedParams& p, cudaStream_t stream) {
    const RowUnit unit = row_unit(p.type);
    const bool plain = p.type == 0 || p.type == 1 || p.type == 30;  // any row length
    if (unit.elems == 0 || !p.table || !p.token || !p.out || p.n_cols <= 0 || p.n_rows <= 0 ||
        (!plain && p.n_cols % unit.elems != 0))
        return cudaErrorInvalidValue;
    const int units = ceil_div(p.n_cols, unit.elems);
    embed_kernel<<<ceil_div(units, 128), 128, 0, stream>>>(p);
    return cudaGetLastError();
}

cudaError_t launch_advance_step(StepCounters* counters, cudaStream_t stream) {
    advance_step_kernel<<<1, 1, 0, stream>>>(counters);
    return cudaGetLastError();
}
#endif

}  // namespace edgerun::cuda_orin
