// What one GPU thread does first per step of a quantized GEMV: load one "task" of 32
// weights of a packed row (load_task) and decode it into bytes and scales (decode_task;
// both together, dequantize_task). Compiled for the device by the kernels and for the host
// by the CPU tests, which check dequantize_task against gguf's dequantizers: the exact
// code path the GPU runs. The dot products with the activations: quant_tasks.hpp.
//
// A task is two "segments" of 16 consecutive weights each. A segment dequantizes to
// sixteen bytes q and two floats with weight_i = d (q_i - zero) - m (quant_zero below).
// The segments of a task are the 16 low and 16 high nibbles of one 16-byte load of the
// quant plane, so one task is one vector load of weights:
//   Q4_0/Q4_1/Q5_0/Q5_1/Q8_0  task t = block t; segments at 32t and 32t + 16
//   Q2_K/Q3_K            task t: super-block t/8, o = t%8, half = o/4, h = o%2,
//                        j = 2((o%4)/2) + {0,1}: segments at 128half + 32j + 16h (one
//                        16-byte load of 2-bit quants holds 16 weights of four j's)
//   Q4_K/Q5_K            task t: super-block t/8, j = t%8, chunk c = j/2, h = j%2;
//                        segments at 64c + 16h (sub-block 2c) and 64c + 32 + 16h (2c+1)
//   Q6_K                 task t: super-block t/8, o = t%8, half = o/4, k = o%4;
//                        k<2: segments at 128half + 16k and +64; k>=2: +32+16(k-2), +96
#pragma once

#include "device_math.hpp"
#include "weight_layout.hpp"

#if !defined(__CUDACC_RTC__)  // NVRTC has no C library headers; task_walk's check is host-only
#include <cstdio>
#include <cstdlib>
#endif

namespace edgerun::cuda_orin {

// Tasks come eight to a group of 256 weights (a K-quant super-block, or eight blocks of
// 32): task 8 group + sub. A thread's tasks t, t + stride, ... (stride a multiple of 8,
// row_slice_dot) keep their `sub` and walk `group`, so whatever a task derives from
// `sub` alone (its weights' places in a block, its scales' shifts, where its segments of
// x lie in a group and the stage's swizzle of them) is the same for every task of a
// thread: the compiler computes it once, before the loop, instead of once a task.
struct TaskIndex {
    int group, sub;
};

ER_HD TaskIndex task_index(int task) { return {task / 8, task % 8}; }

// What the dequantizers tell the compiler of their task (as ER_ASSUME_NON_NEGATIVE).
#define ER_ASSUME_TASK_INDEX(k)               \
    do {                                      \
        ER_ASSUME_NON_NEGATIVE((k).group);    \
        ER_ASSUME_NON_NEGATIVE((k).sub);      \
    } while (0)

// A thread's tasks first, first + stride, ... below n_tasks, as the loop
//   for (TaskIndex k = walk.first; k.group < walk.end; k.group += walk.groups)
// (stride a multiple of 8, so that `sub` stays).
struct TaskWalk {
    TaskIndex first;
    int end, groups;
};

ER_HD TaskWalk task_walk(int first_task, int stride, int n_tasks) {
#if !defined(__CUDA_ARCH__)
    if (stride <= 0 || stride % 8 != 0) {
        std::fprintf(stderr, "cuda_orin: a task stride of %d, not a positive multiple of 8\n", stride);
        std::abort();
    }
#endif
    const TaskIndex first = task_index(first_task);
    return {first, (n_tasks - first.sub + 7) / 8, stride / 8};
}

// The quant that stands for 0 in the types whose weights are d (q - zero): their quants
// stay unsigned, as the file has them, and `zero` comes off where it costs nothing: in
// the float dot, inside the subtraction that makes a byte a float; in the dp4a dot, as
// zero times the activations' sum, which the stage holds (segment_dot). Both give the
// products of (q - zero) exactly, as signed bytes did, so the sums are unchanged.
ER_HD constexpr int quant_zero(int32_t type) {
    return type == kQ4_0 ? 8 : type == kQ5_0 ? 16 : type == kQ3_K ? 4 : type == kQ6_K ? 32 : 0;
}

struct Segment {
    uint32_t q[4];  // sixteen bytes: Q8_0's signed, every other type's in 0..127
    float d;
    float m;        // 0 for types without a minimum
    int group;      // the segment's first weight is weight 256 group + offset of the row
    int offset;     // 0..240, a multiple of 16
    int zero = 0;   // quant_zero of the type
    ER_HD int pos() const { return 256 * group + offset; }
};

struct Task {
    Segment seg[2];
};

// Types whose weights are d*q - m with m != 0, so the dot needs the sum of x as well.
ER_HD constexpr bool has_min(int32_t type) {
    return type == kQ4_1 || type == kQ5_1 || type == kQ2_K || type == kQ4_K || type == kQ5_K;
}

// Byte k (0..15) of four words. Selects rather than indexes, so the words stay in
// registers (a run-time index into a register array would send it to local memory): the
// pair of words holding it, then the byte by one byte_perm with k as its selector.
ER_HD uint32_t byte_of(const Words4& v, int k) {
    ER_ASSUME_NON_NEGATIVE(k);
    const bool low = k < 8;
    return byte_perm(low ? v.w[0] : v.w[2], low ? v.w[1] : v.w[3], uint32_t(k % 8)) & 0xFFu;
}

// A task's bytes as loaded, before any arithmetic on them (load_task), apart from their
// decoding into segments (decode_task), so that a lane can have several tasks' loads in
// flight while it decodes and dots one (row_slice_dot's kInFlight). Each type fills the
// fields it reads; the others are never set or read, so they take no registers.
struct TaskBytes {
    Words4 a, b, c;        // 16-byte loads, the quants first
    uint32_t narrow[3];    // loads of 1-4 bytes: scales, minima, high bits
};

// Where a task's loads read (load_task's Memory): global memory through the read-only
// path, each load as it is asked for. The GEMV's ring of tasks (task_ring.cuh) has two
// more: one that issues the same loads as copies into shared memory, and one that reads
// them back from there, so every type's loads are written once, here, for all three.
// Every load_task asks for its 16-byte loads before its narrower ones.
struct GlobalTaskMemory {
    ER_HD Words4 load_16B(const uint8_t* p) const { return cuda_orin::load_16B(p); }
    ER_HD uint32_t load_4B(const uint8_t* p) const { return cuda_orin::load_4B(p); }
    ER_HD uint32_t load_2B(const uint8_t* p) const { return cuda_orin::load_2B(p); }
    ER_HD uint32_t load_1B(const uint8_t* p) const { return *p; }
};

// The task's loads (the overloads below, one a type) through `mem`.
template <int32_t Type, class Memory>
ER_HD TaskBytes load_task(const PackedMatrix& w, int row, TaskIndex task, Memory& mem) {
    return load_task(TypeTag<Type>{}, w, row, task, mem);
}

template <int32_t Type>
ER_HD TaskBytes load_task(const PackedMatrix& w, int row, TaskIndex task) {
    GlobalTaskMemory mem;
    return load_task<Type>(w, row, task, mem);
}

template <int32_t Type>
ER_HD Task decode_task(const TaskBytes& bytes, TaskIndex task);

template <int32_t Type>
ER_HD Task dequantize_task(const PackedMatrix& w, int row, TaskIndex task) {
    return decode_task<Type>(load_task<Type>(w, row, task), task);
}

template <int32_t Type>
ER_HD Task dequantize_task(const PackedMatrix& w, int row, int task) {
    return dequantize_task<Type>(w, row, task_index(task));
}

// The two segments of a 32-weight block: its low and high 16 weights.
ER_HD void place_block_segments(Task& t, TaskIndex k) {
    t.seg[0].group = t.seg[1].group = k.group;
    t.seg[0].offset = 32 * k.sub;
    t.seg[1].offset = 32 * k.sub + 16;
}

// The block of a task of a 32-weight type.
ER_HD int block_of(TaskIndex k) {
    ER_ASSUME_TASK_INDEX(k);
    return 8 * k.group + k.sub;
}

// Low and high nibbles of 16 quant bytes: the two segments of a 32-weight block.
ER_HD void split_nibbles(const Words4& qs, Task& t) {
    for (int i = 0; i < 4; ++i) {
        t.seg[0].q[i] = qs.w[i] & 0x0F0F0F0Fu;
        t.seg[1].q[i] = (qs.w[i] >> 4) & 0x0F0F0F0Fu;
    }
}

// d of a block from its half (no minimum), and the quant that stands for 0.
ER_HD void set_scale(uint32_t d_bits, int zero, Task& t) {
    t.seg[0].d = t.seg[1].d = half_to_float(uint16_t(d_bits));
    t.seg[0].m = t.seg[1].m = 0.0f;
    t.seg[0].zero = t.seg[1].zero = zero;
}

// d and m of a block from its (d, -min) pair of halves: weight = d*q + min.
ER_HD void set_scale_min(uint32_t dm, Task& t) {
    t.seg[0].d = t.seg[1].d = half_to_float(uint16_t(dm & 0xFFFFu));
    t.seg[0].m = t.seg[1].m = -half_to_float(uint16_t(dm >> 16));
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ4_0>, const PackedMatrix& w, int row, TaskIndex k, Memory& mem) {
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 16) + 16 * block_of(k));
    b.narrow[0] = mem.load_2B(plane_row(w, 1, row, 2) + 2 * block_of(k));
    return b;
}

template <>
ER_HD Task decode_task<kQ4_0>(const TaskBytes& b, TaskIndex k) {
    Task t;
    split_nibbles(b.a, t);
    set_scale(b.narrow[0], quant_zero(kQ4_0), t);
    place_block_segments(t, k);
    return t;
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ4_1>, const PackedMatrix& w, int row, TaskIndex k, Memory& mem) {
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 16) + 16 * block_of(k));
    b.narrow[0] = mem.load_4B(plane_row(w, 1, row, 4) + 4 * block_of(k));
    return b;
}

template <>
ER_HD Task decode_task<kQ4_1>(const TaskBytes& b, TaskIndex k) {
    Task t;
    split_nibbles(b.a, t);
    set_scale_min(b.narrow[0], t);
    place_block_segments(t, k);
    return t;
}

// Q5_0/Q5_1: the nibbles with their fifth bits from the 32-bit qh (bit l of weight l).
ER_HD void add_fifth_bits(const Words4& qs, uint32_t qh, Task& t) {
    for (int i = 0; i < 4; ++i) {
        t.seg[0].q[i] = (qs.w[i] & 0x0F0F0F0Fu) | spread_bits_to_bit4(qh >> (4 * i));
        t.seg[1].q[i] = ((qs.w[i] >> 4) & 0x0F0F0F0Fu) | spread_bits_to_bit4(qh >> (16 + 4 * i));
    }
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ5_0>, const PackedMatrix& w, int row, TaskIndex k, Memory& mem) {
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 16) + 16 * block_of(k));
    b.narrow[0] = mem.load_4B(plane_row(w, 1, row, 4) + 4 * block_of(k));
    b.narrow[1] = mem.load_2B(plane_row(w, 2, row, 2) + 2 * block_of(k));
    return b;
}

template <>
ER_HD Task decode_task<kQ5_0>(const TaskBytes& b, TaskIndex k) {
    Task t;
    add_fifth_bits(b.a, b.narrow[0], t);
    set_scale(b.narrow[1], quant_zero(kQ5_0), t);
    place_block_segments(t, k);
    return t;
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ5_1>, const PackedMatrix& w, int row, TaskIndex k, Memory& mem) {
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 16) + 16 * block_of(k));
    b.narrow[0] = mem.load_4B(plane_row(w, 1, row, 4) + 4 * block_of(k));
    b.narrow[1] = mem.load_4B(plane_row(w, 2, row, 4) + 4 * block_of(k));
    return b;
}

template <>
ER_HD Task decode_task<kQ5_1>(const TaskBytes& b, TaskIndex k) {
    Task t;
    add_fifth_bits(b.a, b.narrow[0], t);
    set_scale_min(b.narrow[1], t);
    place_block_segments(t, k);
    return t;
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ8_0>, const PackedMatrix& w, int row, TaskIndex k, Memory& mem) {
    const uint8_t* qs = plane_row(w, 0, row, 32) + 32 * block_of(k);
    TaskBytes b;
    b.a = mem.load_16B(qs);
    b.b = mem.load_16B(qs + 16);
    b.narrow[0] = mem.load_2B(plane_row(w, 1, row, 2) + 2 * block_of(k));
    return b;
}

template <>
ER_HD Task decode_task<kQ8_0>(const TaskBytes& b, TaskIndex k) {
    Task t;
    for (int i = 0; i < 4; ++i) {
        t.seg[0].q[i] = b.a.w[i];
        t.seg[1].q[i] = b.b.w[i];
    }
    set_scale(b.narrow[0], quant_zero(kQ8_0), t);
    place_block_segments(t, k);
    return t;
}

// Where a Q2_K/Q3_K task's segments lie (see the top of this file).
struct LowBitTask {
    int block, half, h, j0;
};

ER_HD LowBitTask low_bit_task(TaskIndex t) {
    ER_ASSUME_TASK_INDEX(t);
    const int o = t.sub;
    return {t.group, o / 4, o % 2, 2 * ((o % 4) / 2)};
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ2_K>, const PackedMatrix& w, int row, TaskIndex task, Memory& mem) {
    const LowBitTask k = low_bit_task(task);
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 64) + (64 * k.block + 32 * k.half + 16 * k.h));
    b.b = mem.load_16B(plane_row(w, 1, row, 16) + 16 * k.block);  // scale | min << 4
    b.narrow[0] = mem.load_4B(plane_row(w, 2, row, 4) + 4 * k.block);
    return b;
}

template <>
ER_HD Task decode_task<kQ2_K>(const TaskBytes& b, TaskIndex task) {
    const LowBitTask k = low_bit_task(task);
    const float d = half_to_float(uint16_t(b.narrow[0] & 0xFFFFu)), dmin = half_to_float(uint16_t(b.narrow[0] >> 16));
    Task t;
    for (int s = 0; s < 2; ++s) {
        const int j = k.j0 + s;
        for (int i = 0; i < 4; ++i) t.seg[s].q[i] = (b.a.w[i] >> (2 * j)) & 0x03030303u;
        const uint32_t sc = byte_of(b.b, 8 * k.half + 2 * j + k.h);
        t.seg[s].d = d * float(sc & 0xF);
        t.seg[s].m = dmin * float(sc >> 4);
        t.seg[s].group = k.block;
        t.seg[s].offset = 128 * k.half + 32 * j + 16 * k.h;
    }
    return t;
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ3_K>, const PackedMatrix& w, int row, TaskIndex task, Memory& mem) {
    const LowBitTask k = low_bit_task(task);
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 64) + (64 * k.block + 32 * k.half + 16 * k.h));
    // hmask byte l holds the third bit of weight l of each of the 8 groups of 32: bit g
    // for group g; a clear bit means the value is 4 lower.
    b.b = mem.load_16B(plane_row(w, 1, row, 32) + (32 * k.block + 16 * k.h));
    const uint8_t* packed = plane_row(w, 2, row, 12) + 12 * k.block;  // 4-byte aligned
    b.c = {{mem.load_4B(packed), mem.load_4B(packed + 4), mem.load_4B(packed + 8), 0u}};
    b.narrow[0] = mem.load_2B(plane_row(w, 3, row, 2) + 2 * k.block);
    return b;
}

template <>
ER_HD Task decode_task<kQ3_K>(const TaskBytes& b, TaskIndex task) {
    const LowBitTask k = low_bit_task(task);
    const Words4& qs = b.a;
    const Words4& hmask = b.b;
    const Words4& sc = b.c;
    const float d = half_to_float(uint16_t(b.narrow[0]));
    Task t;
    // The two segments' groups are adjacent (j0, j0 + 1): one shift of each quant word
    // serves both, and one rotation of each hmask word puts bit `group` of every byte at
    // bit 2 (right by group - 2, mod 32: for groups 0 and 1 the bits come round from the
    // byte above, whose own bits the mask drops), bit group + 1 at bit 3.
    const int group0 = 4 * k.half + k.j0;
    for (int i = 0; i < 4; ++i) {
        const uint32_t low = qs.w[i] >> (2 * k.j0), high = rotate_right(hmask.w[i], (group0 + 30) & 31);
        t.seg[0].q[i] = (low & 0x03030303u) | (high & 0x04040404u);
        t.seg[1].q[i] = ((low >> 2) & 0x03030303u) | ((high >> 1) & 0x04040404u);
    }
    for (int s = 0; s < 2; ++s) {
        const int j = k.j0 + s;
        // 16 six-bit scales: low nibbles in bytes 0..7 (scales 0-7 low, 8-15 high
        // nibble), the top two bits in bytes 8..11 (scale n: byte 8 + n%4, bits 2(n/4)).
        const int n = 8 * k.half + 2 * j + k.h;
        const uint32_t low = (byte_perm(sc.w[0], sc.w[1], uint32_t(n % 8)) >> (4 * (n / 8))) & 0xF;
        const uint32_t high = (byte_perm(sc.w[2], 0u, uint32_t(n % 4)) >> (2 * (n / 4))) & 3;
        t.seg[s].d = d * float(int(low | (high << 4)) - 32);
        t.seg[s].m = 0.0f;
        t.seg[s].zero = quant_zero(kQ3_K);
        t.seg[s].group = k.block;
        t.seg[s].offset = 128 * k.half + 32 * j + 16 * k.h;
    }
    return t;
}

// Scale and minimum of sub-blocks 2c and 2c+1 of a Q4_K/Q5_K block from its 16-byte
// meta field (d, dmin, 12 bytes q[0..11] of packed 6-bit scales and mins): blocks.hpp's
// q4k_scale_min unpacking. Sub-block j < 4: scale q[j] & 63, min q[j+4] & 63; j >= 4: scale
// (q[j+4] & 15) | (q[j-4] >> 6) << 4, min (q[j+4] >> 4) | (q[j] >> 6) << 4. Sub-blocks 2c
// and 2c+1 use bytes 2c%4 and 2c%4+1 of each of the words q[0..3], q[4..7] and q[8..11],
// so both are worked out at once on 16-bit pairs, without a branch: the lanes of a warp
// take different c, and the two cases as branches diverged.
ER_HD void k_quant_sub_scales(const Words4& meta, int c, Segment* s0, Segment* s1) {
    ER_ASSUME_NON_NEGATIVE(c);
    const float d = half_to_float(uint16_t(meta.w[0] & 0xFFFFu));
    const float dmin = half_to_float(uint16_t(meta.w[0] >> 16));
    const int shift = 16 * (c & 1);  // bytes 0-1 or 2-3 of each word
    const uint32_t b0 = (meta.w[1] >> shift) & 0xFFFFu;  // q[j-4] (c >= 2) or q[j] (c < 2)
    const uint32_t b1 = (meta.w[2] >> shift) & 0xFFFFu;  // q[j] (c >= 2) or q[j+4] (c < 2)
    const uint32_t b2 = (meta.w[3] >> shift) & 0xFFFFu;  // q[j+4] (c >= 2)
    const bool high = c >= 2;
    const uint32_t sc = high ? (b2 & 0x0F0Fu) | ((b0 >> 2) & 0x3030u) : b0 & 0x3F3Fu;
    const uint32_t mn = high ? ((b2 >> 4) & 0x0F0Fu) | ((b1 >> 2) & 0x3030u) : b1 & 0x3F3Fu;
    s0->d = d * float(sc & 0xFFu);
    s0->m = dmin * float(mn & 0xFFu);
    s1->d = d * float(sc >> 8);
    s1->m = dmin * float(mn >> 8);
}


// Where a Q4_K/Q5_K task's segments lie (see the top of this file).
struct KQuantTask {
    int block, c, h;
};

ER_HD KQuantTask k_quant_task(TaskIndex task) {
    ER_ASSUME_TASK_INDEX(task);
    return {task.group, task.sub / 2, task.sub % 2};
}

ER_HD void place_k_quant_segments(Task& t, const KQuantTask& k) {
    t.seg[0].group = t.seg[1].group = k.block;
    t.seg[0].offset = 64 * k.c + 16 * k.h;
    t.seg[1].offset = t.seg[0].offset + 32;
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ4_K>, const PackedMatrix& w, int row, TaskIndex task, Memory& mem) {
    const KQuantTask k = k_quant_task(task);
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 128) + (128 * k.block + 32 * k.c + 16 * k.h));
    b.b = mem.load_16B(plane_row(w, 1, row, 16) + 16 * k.block);  // d, dmin, scales
    return b;
}

template <>
ER_HD Task decode_task<kQ4_K>(const TaskBytes& b, TaskIndex task) {
    const KQuantTask k = k_quant_task(task);
    Task t;
    split_nibbles(b.a, t);
    k_quant_sub_scales(b.b, k.c, &t.seg[0], &t.seg[1]);
    place_k_quant_segments(t, k);
    return t;
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ5_K>, const PackedMatrix& w, int row, TaskIndex task, Memory& mem) {
    const KQuantTask k = k_quant_task(task);
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 128) + (128 * k.block + 32 * k.c + 16 * k.h));
    // qh byte l holds the fifth bit of weight l of every sub-block: bit s for sub-block s.
    b.b = mem.load_16B(plane_row(w, 1, row, 32) + (32 * k.block + 16 * k.h));
    b.c = mem.load_16B(plane_row(w, 2, row, 16) + 16 * k.block);  // d, dmin, scales
    return b;
}

template <>
ER_HD Task decode_task<kQ5_K>(const TaskBytes& b, TaskIndex task) {
    const KQuantTask k = k_quant_task(task);
    Task t;
    for (int i = 0; i < 4; ++i) {
        const uint32_t high = b.b.w[i] >> (2 * k.c);  // bit 0: sub-block 2c's fifth bits, bit 1: 2c + 1's
        t.seg[0].q[i] = (b.a.w[i] & 0x0F0F0F0Fu) | ((high << 4) & 0x10101010u);
        t.seg[1].q[i] = ((b.a.w[i] >> 4) & 0x0F0F0F0Fu) | ((high << 3) & 0x10101010u);
    }
    k_quant_sub_scales(b.c, k.c, &t.seg[0], &t.seg[1]);
    place_k_quant_segments(t, k);
    return t;
}

// Where a Q6_K task's segments lie (see the top of this file): segment 1 is 64 weights
// after segment 0.
struct Q6KTask {
    int block, half, k, pair, l0, offset0;
};

ER_HD Q6KTask q6_k_task(TaskIndex task) {
    ER_ASSUME_TASK_INDEX(task);
    const int half = task.sub / 4, k = task.sub % 4;
    const int pair = k / 2;  // 0: groups 0 and 2, 1: groups 1 and 3 of this half
    const int l0 = 16 * (k % 2);
    return {task.group, half, k, pair, l0, 128 * half + 32 * pair + l0};
}

template <class Memory>
ER_HD TaskBytes load_task(TypeTag<kQ6_K>, const PackedMatrix& w, int row, TaskIndex task, Memory& mem) {
    const Q6KTask k = q6_k_task(task);
    TaskBytes b;
    b.a = mem.load_16B(plane_row(w, 0, row, 128) + (128 * k.block + 64 * k.half + 16 * k.k));
    b.b = mem.load_16B(plane_row(w, 1, row, 64) + (64 * k.block + 32 * k.half + k.l0));
    // One signed 8-bit scale per 16 weights: the two segments'.
    const uint8_t* scales = plane_row(w, 2, row, 16) + 16 * k.block;
    b.narrow[0] = mem.load_1B(scales + k.offset0 / 16);
    b.narrow[1] = mem.load_1B(scales + k.offset0 / 16 + 4);
    b.narrow[2] = mem.load_2B(plane_row(w, 3, row, 2) + 2 * k.block);
    return b;
}

template <>
ER_HD Task decode_task<kQ6_K>(const TaskBytes& b, TaskIndex task) {
    const Q6KTask k = q6_k_task(task);
    const float d = half_to_float(uint16_t(b.narrow[2]));
    Task t;
    for (int i = 0; i < 4; ++i) {
        // The two high bits of segment 0 are bits 2 pair, 2 pair + 1 of each qh byte, those
        // of segment 1 four above: one shift puts the latter at bits 4-5, where they go.
        const uint32_t high = b.b.w[i] >> (2 * k.pair);
        t.seg[0].q[i] = (b.a.w[i] & 0x0F0F0F0Fu) | ((high << 4) & 0x30303030u);
        t.seg[1].q[i] = ((b.a.w[i] >> 4) & 0x0F0F0F0Fu) | (high & 0x30303030u);
    }
    t.seg[0].group = t.seg[1].group = k.block;
    t.seg[0].offset = k.offset0;
    t.seg[1].offset = k.offset0 + 64;
    t.seg[0].d = d * float(int8_t(b.narrow[0]));
    t.seg[1].d = d * float(int8_t(b.narrow[1]));
    t.seg[0].m = t.seg[1].m = 0.0f;
    t.seg[0].zero = t.seg[1].zero = quant_zero(kQ6_K);
    return t;
}

// Quant i of a segment as the integer its weight multiplies: q - zero.
ER_HD int segment_quant(const Segment& s, int i) {
    return int(int8_t(s.q[i / 4] >> (8 * (i % 4)))) - s.zero;
}

// weight_i of a segment as a float: the value every dot product of the kernels implies.
ER_HD float segment_weight(const Segment& s, int i) { return s.d * float(segment_quant(s, i)) - s.m; }

}  // namespace edgerun::cuda_orin
