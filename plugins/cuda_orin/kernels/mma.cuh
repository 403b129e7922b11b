// The tensor-core instruction the kernels use, mma.sync.aligned.m16n8k16.row.col with
// F16 inputs and F32 accumulation (compute capability 8.0 and later: Orin's sm_87 and the
// H200's sm_90 alike), D = A B + D for a 16x16 A, a 16x8 B and a 16x8 D held by a warp.
//
// Which elements a lane holds is fixed by the PTX ISA ("Matrix Fragments for
// mma.m16n8k16 with floating point type"); with g = lane / 4 and t = lane % 4:
//   A (4 registers, 2 halves each, low half first): element i of the 8 is at
//       row g + 8 * ((i / 2) % 2), column 2t + (i % 2) + 8 * (i / 4)
//   B (2 registers): element i of the 4 is at row (k) 2t + (i % 2) + 8 * (i / 2), column g
//   D (4 floats): element i at row g + 8 * (i / 2), column 2t + (i % 2)
// So a lane's D rows are its A rows: a kernel can rescale its own accumulator rows, and
// two D tiles side by side (columns 0-7, 8-15) are, as halves, exactly the A fragment of
// the next product (attention_tiles.cu does both).
//
// On the CPU emulation (tests/cuda/emu) the warp's lanes meet and each computes its four
// results from the whole A and B by these same formulas (ER_WARP_MMA), so a kernel that
// puts an element in the wrong lane or register gets wrong numbers there, as it would on
// the GPU.
#pragma once

#include "device_math.hpp"
#include "warp.cuh"

#include <cstdint>

namespace edgerun::cuda_orin {

// Two floats as one f16x2 register: lo in the low half (the lower column or row).
ER_HD uint32_t pack_halves(float lo, float hi) {
    return uint32_t(float_to_half(lo)) | (uint32_t(float_to_half(hi)) << 16);
}

// Element-wise f16x2 arithmetic on packed registers, each result rounded to nearest
// even. The explicit rounding keeps the compiler from fusing a product into a following
// sum, so a chain of these rounds as written. The host versions compute each half in
// float, which is exact for the products of two halves and for the sums the kernels make
// (small integers); a sum that needs more than 24 bits would round twice.
__device__ __forceinline__ uint32_t add_halves(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pack_halves(half_to_float(uint16_t(a)) + half_to_float(uint16_t(b)),
                       half_to_float(uint16_t(a >> 16)) + half_to_float(uint16_t(b >> 16)));
#endif
}
__device__ __forceinline__ uint32_t mul_halves(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pack_halves(half_to_float(uint16_t(a)) * half_to_float(uint16_t(b)),
                       half_to_float(uint16_t(a >> 16)) * half_to_float(uint16_t(b >> 16)));
#endif
}

// INT8 cache values as halves, exactly: a signed byte s XOR 0x80 is s + 128; put under
// the exponent byte 0x64 it is the half 1024 + s + 128, and adding -1152 leaves s.
inline constexpr uint32_t kHalf1024Bytes = 0x64646464u;  // 0x64 above a byte b: the half 1024 + b
inline constexpr uint32_t kHalfMinus1152 = 0xE480E480u;  // -1152 in both halves
inline constexpr uint32_t kByteBias = 0x80808080u;       // XOR: signed byte s -> s + 128

// Two INT8 values of `biased` (cache bytes XOR kByteBias), the bytes `selector` names
// (0x4140: bytes 0, 1; 0x4342: bytes 2, 3), as the halves s0 d0, s1 d1 of `scales`: each
// product of two halves rounded once, as float_to_half(s * d) would.
__device__ __forceinline__ uint32_t int8_pair_to_halves(uint32_t biased, uint32_t selector, uint32_t scales) {
    return mul_halves(add_halves(byte_perm(biased, kHalf1024Bytes, selector), kHalfMinus1152), scales);
}

// The max (or sum) over the four lanes that hold one fragment row (lanes 4g..4g+3).
__device__ __forceinline__ float fragment_row_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, 1));
    return fmaxf(v, __shfl_xor_sync(kFullMask, v, 2));
}
__device__ __forceinline__ float fragment_row_sum(float v) {
    v += __shfl_xor_sync(kFullMask, v, 1);
    return v + __shfl_xor_sync(kFullMask, v, 2);
}

// Four 8x8 matrices of halves from shared memory, a warp's registers laid out as the mma
// operands want them (ldmatrix.sync.aligned.m8n8.x4.shared.b16): lane 8i + j passes the
// address of row j of matrix i (8 halves, 16-byte aligned); register i of lane (g, t)
// holds matrix i's row g, columns 2t, 2t + 1. Transposed (.trans): column g, rows 2t and
// 2t + 1. One instruction instead of four 32-bit loads, and no index arithmetic per
// register.
__device__ __forceinline__ void load_matrices_x4(uint32_t (&r)[4], const void* row) {
#if defined(__CUDA_ARCH__)
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
#elif defined(ER_WARP_LDMATRIX)
    ER_WARP_LDMATRIX(r, row, false);
#endif
}
__device__ __forceinline__ void load_matrices_x4_transposed(uint32_t (&r)[4], const void* row) {
#if defined(__CUDA_ARCH__)
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
#elif defined(ER_WARP_LDMATRIX)
    ER_WARP_LDMATRIX(r, row, true);
#endif
}

__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ < 800
#error "mma.m16n8k16 with F16 inputs needs compute capability 8.0 or later"
#endif
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(ER_WARP_MMA)
    ER_WARP_MMA(d, a, b);
#elif !defined(__CUDACC__)
#error "mma.cuh on the host needs the CUDA emulation (tests/cuda/emu/cuda_emulation.hpp) included first"
#endif
}

}  // namespace edgerun::cuda_orin
