// One task (32 weights) of a packed row (weight_layout.hpp) as floats equal bit for bit
// to blocks.hpp's dequantization of the same GGUF bytes: the embedding lookup reads the
// GEMV's copy of a weight (tied embeddings are then held once), and a lookup is exact.
// Compiled for the device by small_kernels.cu and for the host by the CPU tests, which
// compare it with gguf's dequantizers (test_kernel_math.cpp) and the kernel built on it
// with blocks.hpp's dequantize_row (test_kernels_emulated.cpp).
#pragma once

#include "quant_tasks.hpp"

namespace edgerun::cuda_orin {

// Weight i of a segment, d * (q - zero) - m with the product and the difference each
// rounded, as blocks.hpp computes it. Written out on the device because nvcc contracts
// d * q - m into one fma (one rounding), which the GEMV's segment_weight may do but a
// lookup may not.
// (m is the negated minimum for Q4_1/Q5_1, whose files say d * q + min: the same value.)
ER_HD float exact_segment_weight(const Segment& s, int i) {
    const float q = float(segment_quant(s, i));
#if defined(__CUDA_ARCH__)
    return __fsub_rn(__fmul_rn(s.d, q), s.m);
#else
    return s.d * q - s.m;
#endif
}

ER_HD void store_weight(float* p, float v) { *p = v; }
ER_HD void store_weight(uint16_t* p, float v) { *p = float_to_half(v); }  // an F16 GEMM's tile

// A segment's 16 weights at `out` (a multiple of 16 values into a row, so 32-byte
// aligned), in 16-byte stores. A lane's task is 64 bytes of halves (128 of floats) after
// the previous lane's, so a warp's store of one value each touched 32 sectors for 2
// bytes each: value by value, the H200 dequantized Qwen3-4B's weights for a 512-row
// GEMM at about 240 GB/s (43 ms a step).
ER_HD void store_segment(float* out, const Segment& s) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        Words4 v;
#pragma unroll
        for (int j = 0; j < 4; ++j) v.w[j] = quant::float_to_bits(exact_segment_weight(s, 4 * k + j));
        store_16B(out + 4 * k, v);
    }
}
ER_HD void store_segment(uint16_t* out, const Segment& s) {  // an F16 GEMM's tile
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        Words4 v;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            v.w[j] = uint32_t(float_to_half(exact_segment_weight(s, 8 * k + 2 * j))) |
                     uint32_t(float_to_half(exact_segment_weight(s, 8 * k + 2 * j + 1))) << 16;
        store_16B(out + 8 * k, v);
    }
}

// Task `task` of packed row `row` into its place in `out_row` (n_cols floats, or halves:
// those floats rounded to F16): the plain types' values as they are (a padded row's tail
// is not written), the quantized types' through dequantize_task.
template <int32_t Type, class Out>
ER_HD void dequantize_task_exact(const PackedMatrix& w, int row, int task, Out* out_row) {
    if constexpr (plain_value_bytes(Type) != 0) {
        const PlainTask<Type> t = load_plain_task<Type>(w, row, task);
        for (int i = 0; i < 32 && 32 * task + i < w.n_cols; ++i) {
            const uint32_t word = t.v[i * plain_value_bytes(Type) / 16].w[(i * plain_value_bytes(Type) / 4) % 4];
            if constexpr (Type == kF32)
                store_weight(out_row + 32 * task + i, quant::bits_to_float(word));
            else
                store_weight(out_row + 32 * task + i, plain_16_to_float<Type>(i % 2 ? word >> 16 : word & 0xFFFFu));
        }
    } else {
        const Task t = dequantize_task<Type>(w, row, task);
        for (const Segment& s : t.seg) store_segment(out_row + s.pos(), s);
    }
}

}  // namespace edgerun::cuda_orin
