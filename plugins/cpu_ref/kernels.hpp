// Row kernels of the reference backend: for every weight type, the dot product of one
// stored row with an F32 vector, the row dequantized to F32, and y += a * row.
//
// Determinism contract (why results are bit-identical across runs, thread counts and
// instruction sets): a row is dequantized exactly as edgerun/quant/blocks.hpp defines it,
// and its dot product always accumulates in the same order. Element i of the row goes
// into lane i % 32 of 32 F32 accumulators with a fused multiply-add (one rounding),
// and the lanes are summed by one fixed tree (lane_sum). The portable kernels spell
// that order out in plain C++ (which compilers vectorise); the AVX2 kernels hold the
// 32 lanes in four 8-wide registers and reduce them in the same tree, so both give the
// same bits. The tests compare them.
#pragma once

#include <cstdint>

namespace edgerun::cpu_ref {

inline constexpr int kLanes = 32;

using DotFn = float (*)(const void* row, const float* x, int64_t n);
using DequantFn = void (*)(const void* row, float* y, int64_t n);
using AxpyFn = void (*)(float a, const void* row, float* y, int64_t n);
using DotRowsFn = void (*)(const void* rows, uint64_t stride, int64_t n_rows, const float* x, int64_t n, float scale,
                           float* out);
using WeightedSumFn = void (*)(const void* rows, uint64_t stride, const float* weights, int64_t n_rows, float* y,
                               int64_t n);
using DotMultiFn = void (*)(const void* row, const float* x, int64_t x_stride, int32_t n_x, int64_t n, float* out,
                            int64_t out_stride, float* scratch);

// The most vectors one dot_multi call takes: the rows of a step that the matmul runs
// through it (larger steps go to BLAS).
inline constexpr int32_t kMaxDotRows = 16;

// For the attention loops, two batched forms over rows `stride` bytes apart, defined as
// the loops they replace (so they give the same bits): dot_rows is
// out[j] = dot(row_j, x) * scale, weighted_sum is axpy(weights[j], row_j, y) for
// j = 0, 1, ... in order.
//
// For the matmul of a step of several rows, dot_multi is one stored row against up to
// kMaxDotRows vectors: out[i * out_stride] = dot(row, x + i * x_stride) for i < n_x. The
// row is decoded once for every few vectors (in registers) or once for all of them (into
// `scratch`, n floats), and each vector's sum keeps the canonical lane order, so every
// result is bit-identical to dot() of that vector alone: a row of a batched step is the
// row of a step of its own.
struct RowKernels {
    DotFn dot;          // sum_i w_i * x_i over n values
    DequantFn dequant;  // y[i] = w_i
    AxpyFn axpy;        // y[i] = fma(a, w_i, y[i])
    DotRowsFn dot_rows;
    WeightedSumFn weighted_sum;
    DotMultiFn dot_multi;
};

enum class Isa : int { Generic = 0, Avx2 = 1 };

// The fastest instruction set this CPU runs kernels for.
Isa best_isa();
bool isa_available(Isa isa);
const char* isa_name(Isa isa);

// Kernels for a GGUF type id, nullptr for a type this backend does not dequantize. `n` must
// be a multiple of the type's block size (any n for F32, F16, BF16).
const RowKernels* row_kernels(int32_t dtype, Isa isa);
inline const RowKernels* row_kernels(int32_t dtype) { return row_kernels(dtype, best_isa()); }
bool dtype_supported(int32_t dtype);

// The canonical reduction of 32 lane accumulators:
// ((a[j] + a[j+8]) + (a[j+16] + a[j+24])) for j < 8, then halves 8 -> 4 -> 2 -> 1.
float lane_sum(const float* acc);

namespace generic {
const RowKernels* row_kernels(int32_t dtype);
}
namespace avx2 {
const RowKernels* row_kernels(int32_t dtype);  // nullptr when not built for x86
}

}  // namespace edgerun::cpu_ref
