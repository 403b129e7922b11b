// Token embedding lookup (token ids read from device memory) and the step counters of a
// captured decode step.
//
// STATUS: see kernels.hpp.
#include "device_math.hpp"
#include "grid_dependency.cuh"
#include "embed_rows.hpp"
#include "kernel_params.hpp"
#include "weight_type_switch.cuh"
#if ER_KERNEL_LAUNCHERS
#include "launch_kernel.cuh"
#endif

#include <edgerun/quant/blocks.hpp>

namespace edgerun::cuda_orin {
namespace {

// Elements and bytes of one dequantization unit of a row: a block for quantized types, 32
// values for plain ones. Every type blocks.hpp dequantizes: the plugin embeds from this
// table form only the ones the GEMV layout cannot hold (Q8_1, Q8_K).
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
        case 9: return {32, int(sizeof(quant::BlockQ8_1))};
        case 10: return {256, 84};
        case 11: return {256, 110};
        case 12: return {256, 144};
        case 13: return {256, 176};
        case 14: return {256, 210};
        case 15: return {256, int(sizeof(quant::BlockQ8_K))};
        default: return {0, 0};
    }
}

// Block (units, token): one thread per unit of the row; dequantize_row is the shared
// dequantizer of blocks.hpp.
__global__ void embed_kernel(const EmbedParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    const RowUnit unit = row_unit(p.type);
    const int u = blockIdx.x * blockDim.x + threadIdx.x;
    const int start = u * unit.elems;
    if (start >= p.n_cols) return;
    const int n = min(unit.elems, p.n_cols - start);
    const int token = p.token[blockIdx.y];
    float* out = p.out + int64_t(blockIdx.y) * p.n_cols;
    if (token < 0 || token >= p.n_rows) {
        for (int i = 0; i < n; ++i) out[start + i] = 0.0f;
        return;
    }
    const uint8_t* row = static_cast<const uint8_t*>(p.table) + size_t(token) * p.row_bytes;
    if (n == unit.elems) {
        quant::dequantize_row(p.type, row + size_t(u) * unit.bytes, out + start, n);
    } else {  // the tail of a plain-typed row shorter than 32
        float tmp[32];
        quant::dequantize_row(p.type, row + size_t(u) * unit.bytes, tmp, n);
        for (int i = 0; i < n; ++i) out[start + i] = tmp[i];
    }
}

// Block (tasks, token): one thread per task (32 weights) of the packed row.
__global__ void embed_packed_kernel(const EmbedParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    const PackedMatrix& w = p.packed;
    const int task = blockIdx.x * blockDim.x + threadIdx.x;
    if (task >= tasks_per_row(w)) return;
    const int token = p.token[blockIdx.y];
    float* out = p.out + int64_t(blockIdx.y) * p.n_cols;
    if (token < 0 || token >= p.n_rows) {
        for (int i = 32 * task; i < min(32 * task + 32, p.n_cols); ++i) out[i] = 0.0f;
        return;
    }
    visit_weight_type(w.type, false, [&](auto type) {
        dequantize_task_exact<decltype(type)::value>(w, token, task, out);
        return true;
    });
}

__global__ void advance_step_kernel(StepCounters* c) {
    begin_after_prior_grids();  // grid_dependency.cuh
    c->pos += 1;
    c->kv_len = c->pos + 1;
}

}  // namespace

// The embedding's launch shape and parameter checks, shared by the CUDA launcher and the
// emulated device: blocks of kEmbedThreads threads over the row's units (packed: tasks),
// a row of blocks per token (at most 65535, the grid's y limit).
inline constexpr int kEmbedThreads = 128;
inline bool embeds_packed(const EmbedParams& p) { return p.packed.plane[0] != nullptr; }

inline bool valid(const EmbedParams& p) {
    if (!p.token || !p.out || p.n_tokens <= 0 || p.n_tokens > 65535 || p.n_cols <= 0 || p.n_rows <= 0) return false;
    if (embeds_packed(p)) {
        const PackedMatrix& w = p.packed;
        return is_gemv_weight_type(w.type) && w.type == p.type && w.n_rows == p.n_rows && w.n_cols == p.n_cols &&
               w.blocks_per_row > 0;
    }
    const RowUnit unit = row_unit(p.type);
    const bool plain = p.type == 0 || p.type == 1 || p.type == 30;  // any row length
    return unit.elems > 0 && p.table && p.row_bytes > 0 && (plain || p.n_cols % unit.elems == 0);
}

inline dim3 embed_grid(const EmbedParams& p) {
    const int units = embeds_packed(p) ? tasks_per_row(p.packed) : ceil_div(p.n_cols, row_unit(p.type).elems);
    return dim3(unsigned(ceil_div(units, kEmbedThreads)), unsigned(p.n_tokens));
}

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_embed(const EmbedParams& p, LaunchStream stream) {
    if (!valid(p)) return cudaErrorInvalidValue;
    return launch_kernel(embeds_packed(p) ? embed_packed_kernel : embed_kernel, embed_grid(p), dim3(kEmbedThreads), 0,
                         stream, p);
}

cudaError_t launch_advance_step(StepCounters* counters, LaunchStream stream) {
    return launch_kernel(advance_step_kernel, dim3(1), dim3(1), 0, stream, counters);
}
#endif

}  // namespace edgerun::cuda_orin
