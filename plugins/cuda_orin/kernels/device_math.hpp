// Small portable primitives the kernels are built from. Every function here compiles as
// plain C++ on the host (so the CPU tests run the same code the GPU runs) and as
// __host__ __device__ code under nvcc, where the device pass uses the hardware
// instruction (dp4a, 16-byte loads through the read-only cache, fp16 conversion).
#pragma once

#include <edgerun/quant/blocks.hpp>

#include <cstdint>
#include <cstring>
#if !defined(__CUDA_ARCH__)
#include <cstdio>
#include <cstdlib>
#endif

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace edgerun::cuda_orin {

#if !defined(__CUDA_ARCH__)
// The host twins of the vector loads check what the GPU requires: a misaligned load
// faults there, while memcpy on the host would hide it (the CPU emulation runs these).
inline void require_aligned(const void* p, uintptr_t bytes) {
    if (reinterpret_cast<uintptr_t>(p) % bytes == 0) return;
    std::fprintf(stderr, "cuda_orin: a %u-byte load from the misaligned address %p\n", unsigned(bytes), p);
    std::abort();
}
#endif

// Registers a __shared__ array with the CPU emulation, which fills it with NaN at each
// block's start (tests/cuda/emu/cuda_emulation.hpp); nothing under nvcc. Every
// __shared__ declaration of a kernel is followed by one.
#if !defined(ER_SHARED_ARRAY)
#define ER_SHARED_ARRAY(name) static_assert(true)
#endif

// A kernel's dynamic shared memory (the launch's third <<<>>> argument) as `type name[]`,
// 16-byte aligned; the CPU emulation defines its own, filled with NaN at each block's start.
#if !defined(ER_DYNAMIC_SHARED)
#define ER_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif

// Four 32-bit words read in one 16-byte load; a plain struct so host code can hold it.
struct Words4 {
    uint32_t w[4];
};

// `p` must be 16-byte aligned (every plane of a packed matrix and every activation
// buffer is).
ER_HD Words4 load_16B(const void* p) {
#if defined(__CUDA_ARCH__)
    const uint4 v = __ldg(static_cast<const uint4*>(p));
    return {{v.x, v.y, v.z, v.w}};
#else
    require_aligned(p, 16);
    Words4 v;
    memcpy(&v, p, sizeof v);
    return v;
#endif
}

struct Words2 {
    uint32_t w[2];
};

// 16 (Words4) or 8 (Words2) bytes of shared memory, aligned to their size, in one access.
template <class Words>
ER_HD Words load_shared(const void* p) {
    static_assert(sizeof(Words) == 16 || sizeof(Words) == 8);
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(Words) == 16) {
        const uint4 v = *static_cast<const uint4*>(p);
        return {{v.x, v.y, v.z, v.w}};
    } else {
        const uint2 v = *static_cast<const uint2*>(p);
        return {{v.x, v.y}};
    }
#else
    require_aligned(p, sizeof(Words));
    Words v;
    memcpy(&v, p, sizeof v);
    return v;
#endif
}

template <class Words>
ER_HD void store_shared(void* p, const Words& v) {
    static_assert(sizeof(Words) == 16 || sizeof(Words) == 8);
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(Words) == 16)
        *static_cast<uint4*>(p) = make_uint4(v.w[0], v.w[1], v.w[2], v.w[3]);
    else
        *static_cast<uint2*>(p) = make_uint2(v.w[0], v.w[1]);
#else
    require_aligned(p, sizeof(Words));
    memcpy(p, &v, sizeof v);
#endif
}

// Sixteen bytes of global memory in one store; `p` must be 16-byte aligned. store_shared's
// access is through a generic address, so the same store serves global memory.
ER_HD void store_16B(void* p, const Words4& v) { store_shared(p, v); }

// `p` must be 8-byte aligned.
ER_HD Words2 load_8B(const void* p) {
#if defined(__CUDA_ARCH__)
    const uint2 v = __ldg(static_cast<const uint2*>(p));
    return {{v.x, v.y}};
#else
    require_aligned(p, 8);
    Words2 v;
    memcpy(&v, p, sizeof v);
    return v;
#endif
}

ER_HD uint32_t load_4B(const void* p) {
#if defined(__CUDA_ARCH__)
    return __ldg(static_cast<const unsigned int*>(p));
#else
    require_aligned(p, 4);
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
#endif
}

ER_HD uint16_t load_2B(const void* p) {
#if defined(__CUDA_ARCH__)
    return __ldg(static_cast<const unsigned short*>(p));
#else
    require_aligned(p, 2);
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
#endif
}

ER_HD float load_f32(const float* p) {
#if defined(__CUDA_ARCH__)
    return __ldg(p);
#else
    return *p;
#endif
}

// A float another block of the same launch wrote, read from L2 (ld.global.cg): an SM's
// L1 is not kept coherent with other SMs' writes, and __ldg's read-only path may hold a
// stale line. Used after the fences of last_block.cuh's ticket.
ER_HD float load_f32_l2(const float* p) {
#if defined(__CUDA_ARCH__)
    return __ldcg(p);
#else
    return *p;
#endif
}

// A float of a launch's results: kFromL2 where other blocks of the same launch wrote it
// (load_f32_l2, after last_block.cuh's ticket), a plain load where an earlier launch did.
template <bool kFromL2>
ER_HD float load_written(const float* p) {
    if constexpr (kFromL2)
        return load_f32_l2(p);
    else
        return *p;
}

// Asks L2 for the bytes [begin, begin + bytes), one prefetch.global.L2 per 128-byte line
// they touch; the caller numbered `first` of `stride` takes lines first, first + stride,
// ... Every address given lies inside the range (a line's first byte in it), so a range
// that overruns its buffer is the caller's bug: the host twin touches the first and the
// last byte of each line's part of the range with a real read, which AddressSanitizer
// (the emulated tests run under it) reports when it lies outside the allocation.
inline constexpr uint64_t kCacheLineBytes = 128;

// Asks L2 for the line of `at` (its host twin reads that byte, and the line's last byte
// before `end`: the part of the line the caller's range holds).
ER_HD void prefetch_l2_line(const void* at, const void* end) {
#if defined(__CUDA_ARCH__)
    (void)end;
    // A global-space address: a generic pointer converted (identical on today's GPUs).
    asm volatile("prefetch.global.L2 [%0];" ::"l"(__cvta_generic_to_global(at)));
#else
    const uintptr_t line_end = (reinterpret_cast<uintptr_t>(at) / kCacheLineBytes + 1) * kCacheLineBytes;
    const uintptr_t last = (line_end < reinterpret_cast<uintptr_t>(end) ? line_end : reinterpret_cast<uintptr_t>(end)) - 1;
    [[maybe_unused]] const uint8_t touched = *static_cast<const volatile uint8_t*>(at) ^
                                             *reinterpret_cast<const volatile uint8_t*>(last);
#endif
}

ER_HD void prefetch_l2(const void* begin, uint64_t bytes, int first, int stride) {
    if (bytes == 0) return;
    const uintptr_t start = reinterpret_cast<uintptr_t>(begin), end = start + bytes;
    const uintptr_t first_line = start / kCacheLineBytes;
    const uintptr_t n_lines = (end - 1) / kCacheLineBytes - first_line + 1;
    for (uintptr_t i = uintptr_t(first); i < n_lines; i += uintptr_t(stride)) {
        const uintptr_t line = (first_line + i) * kCacheLineBytes;
        prefetch_l2_line(reinterpret_cast<const void*>(line > start ? line : start), reinterpret_cast<const void*>(end));
    }
}

// Sum of the four signed-byte products of a and b, plus c.
ER_HD int32_t dp4a(uint32_t a, uint32_t b, int32_t c) {
#if defined(__CUDA_ARCH__)
    return __dp4a(int(a), int(b), c);
#else
    for (int k = 0; k < 4; ++k) c += int32_t(int8_t(a >> (8 * k))) * int32_t(int8_t(b >> (8 * k)));
    return c;
#endif
}

// IEEE half bits to float; the hardware conversion on the device, the exact software
// one (blocks.hpp) on the host. Both are exact for every input.
ER_HD float half_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    return quant::fp16_to_fp32(h);
#endif
}

// Round to nearest even, like the hardware conversion.
ER_HD uint16_t float_to_half(float f) {
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f));
#else
    return quant::fp32_to_fp16(f);
#endif
}

// out[at] = v, out holding floats, or halves (rounded to nearest even) when as_half.
ER_HD void store_float_or_half(void* out, bool as_half, size_t at, float v) {
    if (as_half)
        static_cast<uint16_t*>(out)[at] = float_to_half(v);
    else
        static_cast<float*>(out)[at] = v;
}

// Tells the compiler that v >= 0 (task, block and byte indices always are): its divisions
// and remainders by powers of two then compile to shifts and masks, without the fix-up
// instructions a possibly negative int needs (several per division in the dequantizers).
#define ER_ASSUME_NON_NEGATIVE(v)            \
    do {                                     \
        if ((v) < 0) __builtin_unreachable(); \
    } while (0)

// Four bytes picked from the eight of x (bytes 0-3) and y (bytes 4-7): byte n of the
// result is byte (s >> 4n) & 7 of them. One PRMT instruction on the device; the host twin
// follows the CUDA documentation of __byte_perm, so the emulation checks the selectors.
ER_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
    return __byte_perm(x, y, s);
#else
    const uint64_t bytes = uint64_t(x) | (uint64_t(y) << 32);
    uint32_t r = 0;
    for (int n = 0; n < 4; ++n) r |= uint32_t((bytes >> (8 * ((s >> (4 * n)) & 7))) & 0xFFu) << (8 * n);
    return r;
#endif
}

// Signed byte k (0..3) of a word as a float without an int-to-float conversion
// instruction (those run at a quarter of the FMA rate): x + 128 goes into the low
// mantissa bits of 2^23, and the float subtraction takes 2^23 + 128 off again. Exact.
// The bias is one XOR for the word's four bytes (the compiler shares it among the four
// calls), and putting byte k under the exponent byte 0x4B is one byte_perm: two
// instructions a weight and a quarter, where shift, mask, XOR and subtract took four.
ER_HD float signed_byte_to_float(uint32_t word, int k) {
    const uint32_t biased = word ^ 0x80808080u;  // each byte x + 128, in 0..255
    // Result bytes: biased byte k, 0x00, 0x00, 0x4B (bytes 4, 5 and 7 of y = 0x4B000000).
    return quant::bits_to_float(byte_perm(biased, 0x4B000000u, 0x7540u | uint32_t(k))) - 8388736.0f;
}

// The same for a byte known to be below 128 (the quants of every weight type but Q8_0),
// less `zero`: no bias, so no XOR, and the quant's zero point comes off in the same
// subtraction (2^23 + zero, exact for the small integers involved).
ER_HD float small_unsigned_byte_to_float(uint32_t word, int k, int zero = 0) {
    return quant::bits_to_float(byte_perm(word, 0x4B000000u, 0x7540u | uint32_t(k))) - (8388608.0f + float(zero));
}

// x rotated right by n bits (0..31): one funnel shift on the device.
ER_HD uint32_t rotate_right(uint32_t x, int n) {
#if defined(__CUDA_ARCH__)
    return __funnelshift_r(x, x, uint32_t(n));
#else
    return n == 0 ? x : (x >> n) | (x << (32 - n));
#endif
}

// Bits 0..3 of `bits` spread to bit 4 of bytes 0..3 (the fifth bit of four Q5 weights).
// One multiply: bit i lands at i + 4, i + 11, i + 18 and i + 25, sixteen distinct places
// (so nothing carries), of which the mask keeps 4 + 8i.
ER_HD uint32_t spread_bits_to_bit4(uint32_t bits) {
    return ((bits & 0xFu) * 0x02040810u) & 0x10101010u;
}

ER_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace edgerun::cuda_orin
