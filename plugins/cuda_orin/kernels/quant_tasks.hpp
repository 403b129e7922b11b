// What one GPU thread does per step of a quantized GEMV: dequantize one "task" of 32
// weights of a packed row into bytes and scales, and dot it with the activations.
// Compiled for the device by the kernels and for the host by the CPU tests, which check
// dequantize_task against gguf's dequantizers and task_dot against a double-precision
// dot product: the exact code path the GPU runs.
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

#include "activation.hpp"
#include "device_math.hpp"
#include "weight_layout.hpp"

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

template <int32_t Type>
ER_HD Task dequantize_task(const PackedMatrix& w, int row, TaskIndex task);

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

template <>
ER_HD Task dequantize_task<kQ4_0>(const PackedMatrix& w, int row, TaskIndex k) {
    ER_ASSUME_TASK_INDEX(k);
    const int task = 8 * k.group + k.sub;  // the block
    const Words4 qs = load_16B(plane_row(w, 0, row, 16) + 16 * task);
    const float d = half_to_float(load_2B(plane_row(w, 1, row, 2) + 2 * task));
    Task t;
    for (int i = 0; i < 4; ++i) {
        t.seg[0].q[i] = qs.w[i] & 0x0F0F0F0Fu;
        t.seg[1].q[i] = (qs.w[i] >> 4) & 0x0F0F0F0Fu;
    }
    t.seg[0].d = t.seg[1].d = d;
    t.seg[0].m = t.seg[1].m = 0.0f;
    t.seg[0].zero = t.seg[1].zero = quant_zero(kQ4_0);
    place_block_segments(t, k);
    return t;
}

template <>
ER_HD Task dequantize_task<kQ4_1>(const PackedMatrix& w, int row, TaskIndex k) {
    ER_ASSUME_TASK_INDEX(k);
    const int task = 8 * k.group + k.sub;  // the block
    const Words4 qs = load_16B(plane_row(w, 0, row, 16) + 16 * task);
    const uint32_t dm = load_4B(plane_row(w, 1, row, 4) + 4 * task);
    const float d = half_to_float(uint16_t(dm & 0xFFFFu));
    const float m = -half_to_float(uint16_t(dm >> 16));  // weight = d*q + min
    Task t;
    for (int i = 0; i < 4; ++i) {
        t.seg[0].q[i] = qs.w[i] & 0x0F0F0F0Fu;
        t.seg[1].q[i] = (qs.w[i] >> 4) & 0x0F0F0F0Fu;
    }
    t.seg[0].d = t.seg[1].d = d;
    t.seg[0].m = t.seg[1].m = m;
    place_block_segments(t, k);
    return t;
}

template <>
ER_HD Task dequantize_task<kQ5_0>(const PackedMatrix& w, int row, TaskIndex k) {
    ER_ASSUME_TASK_INDEX(k);
    const int task = 8 * k.group + k.sub;  // the block
    const Words4 qs = load_16B(plane_row(w, 0, row, 16) + 16 * task);
    const uint32_t qh = load_4B(plane_row(w, 1, row, 4) + 4 * task);
    const float d = half_to_float(load_2B(plane_row(w, 2, row, 2) + 2 * task));
    Task t;
    for (int i = 0; i < 4; ++i) {
        const uint32_t lo = (qs.w[i] & 0x0F0F0F0Fu) | spread_bits_to_bit4(qh >> (4 * i));
        const uint32_t hi = ((qs.w[i] >> 4) & 0x0F0F0F0Fu) | spread_bits_to_bit4(qh >> (16 + 4 * i));
        t.seg[0].q[i] = lo;
        t.seg[1].q[i] = hi;
    }
    t.seg[0].d = t.seg[1].d = d;
    t.seg[0].m = t.seg[1].m = 0.0f;
    t.seg[0].zero = t.seg[1].zero = quant_zero(kQ5_0);
    place_block_segments(t, k);
    return t;
}

template <>
ER_HD Task dequantize_task<kQ5_1>(const PackedMatrix& w, int row, TaskIndex k) {
    ER_ASSUME_TASK_INDEX(k);
    const int task = 8 * k.group + k.sub;  // the block
    const Words4 qs = load_16B(plane_row(w, 0, row, 16) + 16 * task);
    const uint32_t qh = load_4B(plane_row(w, 1, row, 4) + 4 * task);
    const uint32_t dm = load_4B(plane_row(w, 2, row, 4) + 4 * task);
    const float d = half_to_float(uint16_t(dm & 0xFFFFu));
    const float m = -half_to_float(uint16_t(dm >> 16));  // weight = d*q + min
    Task t;
    for (int i = 0; i < 4; ++i) {
        t.seg[0].q[i] = (qs.w[i] & 0x0F0F0F0Fu) | spread_bits_to_bit4(qh >> (4 * i));
        t.seg[1].q[i] = ((qs.w[i] >> 4) & 0x0F0F0F0Fu) | spread_bits_to_bit4(qh >> (16 + 4 * i));
    }
    t.seg[0].d = t.seg[1].d = d;
    t.seg[0].m = t.seg[1].m = m;
    place_block_segments(t, k);
    return t;
}

template <>
ER_HD Task dequantize_task<kQ8_0>(const PackedMatrix& w, int row, TaskIndex k) {
    ER_ASSUME_TASK_INDEX(k);
    const int task = 8 * k.group + k.sub;  // the block
    const uint8_t* qs = plane_row(w, 0, row, 32) + 32 * task;
    const Words4 a = load_16B(qs), b = load_16B(qs + 16);
    const float d = half_to_float(load_2B(plane_row(w, 1, row, 2) + 2 * task));
    Task t;
    for (int i = 0; i < 4; ++i) {
        t.seg[0].q[i] = a.w[i];
        t.seg[1].q[i] = b.w[i];
    }
    t.seg[0].d = t.seg[1].d = d;
    t.seg[0].m = t.seg[1].m = 0.0f;
    place_block_segments(t, k);
    return t;
}

// Where a Q2_K/Q3_K task's segments lie (see the top of this file).
struct LowBitTask {
    int block, half, h, j0;
};

ER_HD LowBitTask low_bit_task(TaskIndex t) {
    const int o = t.sub;
    return {t.group, o / 4, o % 2, 2 * ((o % 4) / 2)};
}

template <>
ER_HD Task dequantize_task<kQ2_K>(const PackedMatrix& w, int row, TaskIndex task) {
    ER_ASSUME_TASK_INDEX(task);
    const LowBitTask k = low_bit_task(task);
    const Words4 qs = load_16B(plane_row(w, 0, row, 64) + (64 * k.block + 32 * k.half + 16 * k.h));
    const Words4 scales = load_16B(plane_row(w, 1, row, 16) + 16 * k.block);  // scale | min << 4
    const uint32_t dm = load_4B(plane_row(w, 2, row, 4) + 4 * k.block);
    const float d = half_to_float(uint16_t(dm & 0xFFFFu)), dmin = half_to_float(uint16_t(dm >> 16));
    Task t;
    for (int s = 0; s < 2; ++s) {
        const int j = k.j0 + s;
        for (int i = 0; i < 4; ++i) t.seg[s].q[i] = (qs.w[i] >> (2 * j)) & 0x03030303u;
        const uint32_t sc = byte_of(scales, 8 * k.half + 2 * j + k.h);
        t.seg[s].d = d * float(sc & 0xF);
        t.seg[s].m = dmin * float(sc >> 4);
        t.seg[s].group = k.block;
        t.seg[s].offset = 128 * k.half + 32 * j + 16 * k.h;
    }
    return t;
}

template <>
ER_HD Task dequantize_task<kQ3_K>(const PackedMatrix& w, int row, TaskIndex task) {
    ER_ASSUME_TASK_INDEX(task);
    const LowBitTask k = low_bit_task(task);
    const Words4 qs = load_16B(plane_row(w, 0, row, 64) + (64 * k.block + 32 * k.half + 16 * k.h));
    // hmask byte l holds the third bit of weight l of each of the 8 groups of 32: bit g
    // for group g; a clear bit means the value is 4 lower.
    const Words4 hmask = load_16B(plane_row(w, 1, row, 32) + (32 * k.block + 16 * k.h));
    const uint8_t* packed = plane_row(w, 2, row, 12) + 12 * k.block;  // 4-byte aligned
    const Words4 sc = {{load_4B(packed), load_4B(packed + 4), load_4B(packed + 8), 0u}};
    const float d = half_to_float(load_2B(plane_row(w, 3, row, 2) + 2 * k.block));
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

template <>
ER_HD Task dequantize_task<kQ4_K>(const PackedMatrix& w, int row, TaskIndex task) {
    ER_ASSUME_TASK_INDEX(task);
    const int block = task.group, j = task.sub, c = j / 2, h = j % 2;
    const Words4 qs = load_16B(plane_row(w, 0, row, 128) + (128 * block + 32 * c + 16 * h));
    const Words4 meta = load_16B(plane_row(w, 1, row, 16) + 16 * block);
    Task t;
    for (int i = 0; i < 4; ++i) {
        t.seg[0].q[i] = qs.w[i] & 0x0F0F0F0Fu;
        t.seg[1].q[i] = (qs.w[i] >> 4) & 0x0F0F0F0Fu;
    }
    k_quant_sub_scales(meta, c, &t.seg[0], &t.seg[1]);
    t.seg[0].group = t.seg[1].group = block;
    t.seg[0].offset = 64 * c + 16 * h;
    t.seg[1].offset = t.seg[0].offset + 32;
    return t;
}

template <>
ER_HD Task dequantize_task<kQ5_K>(const PackedMatrix& w, int row, TaskIndex task) {
    ER_ASSUME_TASK_INDEX(task);
    const int block = task.group, j = task.sub, c = j / 2, h = j % 2;
    const Words4 qs = load_16B(plane_row(w, 0, row, 128) + (128 * block + 32 * c + 16 * h));
    // qh byte l holds the fifth bit of weight l of every sub-block: bit s for sub-block s.
    const Words4 qh = load_16B(plane_row(w, 1, row, 32) + (32 * block + 16 * h));
    const Words4 meta = load_16B(plane_row(w, 2, row, 16) + 16 * block);
    Task t;
    for (int i = 0; i < 4; ++i) {
        const uint32_t high = qh.w[i] >> (2 * c);  // bit 0: sub-block 2c's fifth bits, bit 1: 2c + 1's
        t.seg[0].q[i] = (qs.w[i] & 0x0F0F0F0Fu) | ((high << 4) & 0x10101010u);
        t.seg[1].q[i] = ((qs.w[i] >> 4) & 0x0F0F0F0Fu) | ((high << 3) & 0x10101010u);
    }
    k_quant_sub_scales(meta, c, &t.seg[0], &t.seg[1]);
    t.seg[0].group = t.seg[1].group = block;
    t.seg[0].offset = 64 * c + 16 * h;
    t.seg[1].offset = t.seg[0].offset + 32;
    return t;
}

template <>
ER_HD Task dequantize_task<kQ6_K>(const PackedMatrix& w, int row, TaskIndex task) {
    ER_ASSUME_TASK_INDEX(task);
    const int block = task.group, o = task.sub, half = o / 4, k = o % 4;
    const int pair = k / 2;  // 0: groups 0 and 2, 1: groups 1 and 3 of this half
    const int l0 = 16 * (k % 2);
    const Words4 ql = load_16B(plane_row(w, 0, row, 128) + (128 * block + 64 * half + 16 * k));
    const Words4 qh = load_16B(plane_row(w, 1, row, 64) + (64 * block + 32 * half + l0));
    const uint8_t* scales = plane_row(w, 2, row, 16) + 16 * block;
    const float d = half_to_float(load_2B(plane_row(w, 3, row, 2) + 2 * block));
    Task t;
    for (int i = 0; i < 4; ++i) {
        // The two high bits of segment 0 are bits 2 pair, 2 pair + 1 of each qh byte, those
        // of segment 1 four above: one shift puts the latter at bits 4-5, where they go.
        const uint32_t high = qh.w[i] >> (2 * pair);
        t.seg[0].q[i] = (ql.w[i] & 0x0F0F0F0Fu) | ((high << 4) & 0x30303030u);
        t.seg[1].q[i] = ((ql.w[i] >> 4) & 0x0F0F0F0Fu) | (high & 0x30303030u);
    }
    t.seg[0].group = t.seg[1].group = block;
    t.seg[0].offset = 128 * half + 32 * pair + l0;
    t.seg[1].offset = t.seg[0].offset + 64;
    // One signed 8-bit scale per 16 weights.
    const int8_t s0 = int8_t(scales[t.seg[0].offset / 16]);
    const int8_t s1 = int8_t(scales[t.seg[1].offset / 16]);
    t.seg[0].d = d * float(s0);
    t.seg[1].d = d * float(s1);
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

// Segment · x, with x quantized per 32 values (d_x * qx):
// d_x * (d * Σ (q - zero) qx - m * Σ qx).
template <int32_t Type, class X>
ER_HD float segment_dot(const Segment& s, const X& x) {
    constexpr int kZero = quant_zero(Type);
    const Q8Segment xs = x.template segment<has_min(Type) || kZero != 0>(s.group, s.offset);
    int32_t qdot = 0;
    for (int i = 0; i < 4; ++i) qdot = dp4a(s.q[i], xs.q.w[i], qdot);
    if constexpr (kZero != 0) qdot -= kZero * xs.sum;  // sum of (q - zero) qx, exactly
    float r = s.d * float(qdot);
    if constexpr (has_min(Type)) r -= s.m * float(xs.sum);
    return xs.d * r;
}

// A dequantized task dotted with one row of 8-bit activations (GlobalQ8X or StagedQ8X).
// The multi-row GEMV dequantizes a task once and calls this for every row, so each row's
// sum is the one-row kernel's.
template <int32_t Type, class X>
ER_HD float dequantized_task_dot(const Task& t, const X& x) {
    return segment_dot<Type>(t.seg[0], x) + segment_dot<Type>(t.seg[1], x);
}

// Float activations: exact to float rounding (no 8-bit activation noise), at the cost of
// reading 4 bytes of x per weight instead of 1: four 16-byte loads per segment (a segment
// starts at a multiple of 16 values of a 16-byte aligned row). A segment's weights are
// d q - m, so its dot is d (q . x) - m (sum of x): one FMA a weight, and for the types
// with a minimum the segment's sum of x, which the stage holds (StagedFloatX) or the
// loads give (GlobalFloatX). Fully unrolled: a run-time index into s.q became chains of
// compares and selects (kernels/README.md).
//
// The quants as floats come first (SegmentQuants), so that the multi-row GEMV converts
// them once for all its rows of x: converted inside each row's dot, the conversions (two
// instructions a weight) were repeated for every row, about 40% of an 8-row task.
struct SegmentQuants {
    float q[16];
};

template <int32_t Type>
ER_HD SegmentQuants segment_quants(const Segment& s) {
    SegmentQuants f;
#pragma unroll
    for (int i = 0; i < 16; ++i)
        f.q[i] = Type == kQ8_0 ? signed_byte_to_float(s.q[i / 4], i % 4)
                               : small_unsigned_byte_to_float(s.q[i / 4], i % 4, quant_zero(Type));
    return f;
}

// d (q . x) - m (sum of x) for one segment and one row of x.
template <int32_t Type, class X>
ER_HD float segment_dot_float(const Segment& s, const SegmentQuants& f, const X& x) {
    const auto xs = x.segment(s.group, s.offset);
    float qx = 0.0f, part_sums[4];
#pragma unroll
    for (int part = 0; part < 4; ++part) {
        const Words4 xv = xs.load4(part);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float xi = quant::bits_to_float(xv.w[i]);
            qx += f.q[4 * part + i] * xi;
            part_sums[part] = i == 0 ? xi : part_sums[part] + xi;
        }
    }
    if constexpr (has_min(Type))
        return s.d * qx - s.m * xs.sum(part_sums);
    else
        return s.d * qx;
}

template <int32_t Type, class X>
ER_HD float dequantized_task_dot_float(const Task& t, const X& x) {
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 2; ++k) acc += segment_dot_float<Type>(t.seg[k], segment_quants<Type>(t.seg[k]), x);
    return acc;
}

template <int32_t Type, class X>
ER_HD float task_dot(const PackedMatrix& w, int row, TaskIndex task, const X& x) {
    return dequantized_task_dot<Type>(dequantize_task<Type>(w, row, task), x);
}

template <int32_t Type, class X>
ER_HD float task_dot_float(const PackedMatrix& w, int row, TaskIndex task, const X& x) {
    return dequantized_task_dot_float<Type>(dequantize_task<Type>(w, row, task), x);
}

// A 16-bit value of a plain row as a float: fp16, or bf16 (the top half of a float).
template <int32_t Type>
ER_HD float plain_16_to_float(uint32_t bits) {
    if constexpr (Type == kBF16)
        return quant::bits_to_float(bits << 16);
    else
        return half_to_float(uint16_t(bits));
}

// Plain rows (F32, F16, BF16): a task is 32 values, dotted with float activations. The
// values are loaded once (PlainTask) and dotted with one or several rows of x.
template <int32_t Type>
struct PlainTask {
    Words4 v[plain_value_bytes(Type) * 2];  // 32 values: eight 16-byte loads (F32), four (16-bit)
};

template <int32_t Type>
ER_HD PlainTask<Type> load_plain_task(const PackedMatrix& w, int row, int task) {
    constexpr int kBytes = 32 * plain_value_bytes(Type);
    const uint8_t* p = plane_row(w, 0, row, kBytes) + kBytes * task;
    PlainTask<Type> t;
    for (int part = 0; part < plain_value_bytes(Type) * 2; ++part) t.v[part] = load_16B(p + 16 * part);
    return t;
}

// Values 8 part .. 8 part + 7 of a plain task as floats: made once for all the rows of
// x a multi-row GEMV dots them with (as SegmentQuants).
template <int32_t Type>
ER_HD void plain_part_values(const PlainTask<Type>& t, int part, float (&v)[8]) {
    if constexpr (Type == kF32) {
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = quant::bits_to_float(t.v[2 * part + i / 4].w[i % 4]);
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[2 * i] = plain_16_to_float<Type>(t.v[part].w[i] & 0xFFFFu);
            v[2 * i + 1] = plain_16_to_float<Type>(t.v[part].w[i] >> 16);
        }
    }
}

// acc plus those eight values dotted in order with x's values first .. first + 7.
template <class X>
ER_HD float plain_part_dot(const float (&v)[8], const X& x, int first, float acc) {
    const Words8 xv = x.load8(first);
    const Words4 &xa = xv.a, &xb = xv.b;
#pragma unroll
    for (int i = 0; i < 4; ++i) acc += v[i] * quant::bits_to_float(xa.w[i]);
#pragma unroll
    for (int i = 0; i < 4; ++i) acc += v[4 + i] * quant::bits_to_float(xb.w[i]);
    return acc;
}

// The task's 32 activations start at `first` (32 * task) of x's row.
template <int32_t Type, class X>
ER_HD float plain_task_dot(const PlainTask<Type>& t, const X& x, int first) {
    float acc = 0.0f;
#pragma unroll
    for (int part = 0; part < 4; ++part) {
        float v[8];
        plain_part_values<Type>(t, part, v);
        acc = plain_part_dot(v, x, first + 8 * part, acc);
    }
    return acc;
}

template <int32_t Type, class X>
ER_HD float task_dot_plain(const PackedMatrix& w, int row, int task, const X& x) {
    return plain_task_dot<Type>(load_plain_task<Type>(w, row, task), x, 32 * task);
}

// Tasks per row: one task is 32 weights for every type.
ER_HD int tasks_per_row(const PackedMatrix& w) {
    return w.blocks_per_row * (plane_geometry(w.type).block_elems / 32);
}

// A thread's share of one row's dot in the GEMV (gemv.cu): tasks first_task, first_task +
// stride, ... of row `row`, with x read through xr: GlobalFloatX or StagedFloatX (float
// activations, exact), GlobalQ8X or StagedQ8X (8-bit ones, dp4a; quantized weights only).
// The stride is a multiple of 8 (gemv.cu's is 32 per warp of a row), so a quantized
// type's loop walks TaskIndex::group. bench/gemv_task_instructions.py counts this loop's
// instructions.
//
// kInFlight tasks an iteration: their loads are all issued before the first is dotted, so
// a lane has kInFlight loads of weights waiting on DRAM at once instead of one (a row of
// 2560 Q4_K weights is 2.5 tasks a lane, 9728 is 9.5: with one, as many round trips one
// after another). The sums are added in task order whatever kInFlight is, so the result
// is the same bit for bit. One (the default) fits the 80 registers of three blocks an SM;
// more take gemv.cu's bound of two (GemvLaunch::tasks_in_flight).
template <int32_t Type, int kInFlight = 1, class X>
ER_HD float row_slice_dot(const PackedMatrix& w, int row, const X& xr, int first_task, int stride) {
    const int n_tasks = tasks_per_row(w);
    float acc = 0.0f;
    if constexpr (plain_value_bytes(Type) != 0) {
#pragma unroll 1
        for (int t = first_task; t < n_tasks; t += kInFlight * stride) {
            PlainTask<Type> tasks[kInFlight];
#pragma unroll
            for (int i = 0; i < kInFlight; ++i)
                if (i == 0 || t + i * stride < n_tasks) tasks[i] = load_plain_task<Type>(w, row, t + i * stride);
#pragma unroll
            for (int i = 0; i < kInFlight; ++i)
                if (i == 0 || t + i * stride < n_tasks) acc += plain_task_dot<Type>(tasks[i], xr, 32 * (t + i * stride));
        }
    } else {
        const TaskWalk walk = task_walk(first_task, stride, n_tasks);
#pragma unroll 1
        for (TaskIndex k = walk.first; k.group < walk.end; k.group += kInFlight * walk.groups) {
            Task tasks[kInFlight];
#pragma unroll
            for (int i = 0; i < kInFlight; ++i)
                if (i == 0 || k.group + i * walk.groups < walk.end)
                    tasks[i] = dequantize_task<Type>(w, row, TaskIndex{k.group + i * walk.groups, k.sub});
#pragma unroll
            for (int i = 0; i < kInFlight; ++i) {
                if (i != 0 && k.group + i * walk.groups >= walk.end) continue;
                if constexpr (X::kQ8)
                    acc += dequantized_task_dot<Type>(tasks[i], xr);
                else
                    acc += dequantized_task_dot_float<Type>(tasks[i], xr);
            }
        }
    }
    return acc;
}

}  // namespace edgerun::cuda_orin
