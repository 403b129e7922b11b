// What one GPU thread does per step of a quantized GEMV after dequantize_task.hpp has
// given it a task of 32 weights as bytes and scales: the task's dot product with the
// activations (8-bit through dp4a, or floats), and the walk of a thread's tasks along a
// row (row_slice_dot). Compiled for the device by the kernels and for the host by the CPU
// tests, which check task_dot against a double-precision dot product.
#pragma once

#include "activation.hpp"
#include "dequantize_task.hpp"

namespace edgerun::cuda_orin {

// Segment · x, with x quantized per 32 values (d_x * qx), from the segment's 16 values of
// x as read (xs): d_x * (d * Σ (q - zero) qx - m * Σ qx).
template <int32_t Type>
ER_HD float segment_dot(const Segment& s, const Q8Segment& xs) {
    constexpr int kZero = quant_zero(Type);
    int32_t qdot = 0;
    for (int i = 0; i < 4; ++i) qdot = dp4a(s.q[i], xs.q.w[i], qdot);
    if constexpr (kZero != 0) qdot -= kZero * xs.sum;  // sum of (q - zero) qx, exactly
    float r = s.d * float(qdot);
    if constexpr (has_min(Type)) r -= s.m * float(xs.sum);
    return xs.d * r;
}

template <int32_t Type, class X>
ER_HD float segment_dot(const Segment& s, const X& x) {
    return segment_dot<Type>(s, x.segment(s.group, s.offset));
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

// Tasks a GEMV lane may load before it waits for the previous launch (load_first_tasks):
// held across the staging of x in a form common to every type, four spilled at 128
// registers, two did not.
inline constexpr int kTasksAhead = 2;

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
// more take gemv.cu's bound of two (GemvLaunch::tasks_in_flight). `ahead`, if given, holds
// the bytes of the first iteration's first kTasksAhead tasks (at most), loaded earlier by
// load_first_tasks (quantized types only).
template <int32_t Type, int kInFlight = 1, class X>
ER_HD float row_slice_dot(const PackedMatrix& w, int row, const X& xr, int first_task, int stride,
                          const TaskBytes* ahead = nullptr) {
    const int n_tasks = tasks_per_row(w);
    float acc = 0.0f;
    if constexpr (plain_value_bytes(Type) != 0) {
        // A plain task is 64 or 128 bytes, four or eight loads already: at most two.
        constexpr int kPlainInFlight = kInFlight < 2 ? kInFlight : 2;
#pragma unroll 1
        for (int t = first_task; t < n_tasks; t += kPlainInFlight * stride) {
            PlainTask<Type> tasks[kPlainInFlight];
#pragma unroll
            for (int i = 0; i < kPlainInFlight; ++i)
                if (i == 0 || t + i * stride < n_tasks) tasks[i] = load_plain_task<Type>(w, row, t + i * stride);
#pragma unroll
            for (int i = 0; i < kPlainInFlight; ++i)
                if (i == 0 || t + i * stride < n_tasks) acc += plain_task_dot<Type>(tasks[i], xr, 32 * (t + i * stride));
        }
    } else {
        const TaskWalk walk = task_walk(first_task, stride, n_tasks);
#pragma unroll 1
        for (TaskIndex k = walk.first; k.group < walk.end; k.group += kInFlight * walk.groups) {
            // The loads alone first (TaskBytes: fewer registers than decoded tasks).
            TaskBytes bytes[kInFlight];
            const bool loaded = ahead && k.group == walk.first.group;
#pragma unroll
            for (int i = 0; i < kInFlight; ++i)
                if (i == 0 || k.group + i * walk.groups < walk.end)
                    bytes[i] = loaded && i < kTasksAhead ? ahead[i]
                                                         : load_task<Type>(w, row, TaskIndex{k.group + i * walk.groups, k.sub});
#pragma unroll
            for (int i = 0; i < kInFlight; ++i) {
                if (i != 0 && k.group + i * walk.groups >= walk.end) continue;
                const Task task = decode_task<Type>(bytes[i], TaskIndex{k.group + i * walk.groups, k.sub});
                if constexpr (X::kQ8)
                    acc += dequantized_task_dot<Type>(task, xr);
                else
                    acc += dequantized_task_dot_float<Type>(task, xr);
            }
        }
    }
    return acc;
}

// Task k of both rows, from their bytes, added to the rows' sums (row_pair_slice_dot's
// step, and the ring's: task_ring.cuh).
template <int32_t Type, class X>
ER_HD void pair_task_dots(const TaskBytes& bytes_a, const TaskBytes& bytes_b, TaskIndex k, const X& xr, float& acc_a,
                          float& acc_b) {
    const Task a = decode_task<Type>(bytes_a, k);
    const Q8Segment x0 = xr.segment(a.seg[0].group, a.seg[0].offset), x1 = xr.segment(a.seg[1].group, a.seg[1].offset);
    acc_a += segment_dot<Type>(a.seg[0], x0) + segment_dot<Type>(a.seg[1], x1);
    const Task b = decode_task<Type>(bytes_b, k);
    acc_b += segment_dot<Type>(b.seg[0], x0) + segment_dot<Type>(b.seg[1], x1);
}

// Two rows of one quantized type and length walked together with 8-bit x: SwiGLU's gate
// and up rows (GemvLaunch::swiglu_pairs), or two rows of one matrix (row_pairs). Each
// iteration loads both rows' task before it dots either, so a lane waits on one chain of
// DRAM round trips for the pair where row_slice_dot, called for each, makes two one after
// the other; and x's two segments of the task are read once for both rows (a task's
// place in a row depends on its index alone). Each task is decoded just before its dots,
// so that one decoded task is live at a time (two made ptxas spill in the kernel of every
// type). Each row's sum adds row_slice_dot's products in its order: the same sums bit
// for bit.
template <int32_t Type, class X>
ER_HD void row_pair_slice_dot(const PackedMatrix& wa, int row_a, const PackedMatrix& wb, int row_b, const X& xr,
                              int first_task, int stride, float& acc_a, float& acc_b) {
    static_assert(plain_value_bytes(Type) == 0 && X::kQ8, "quantized weights and 8-bit x only");
    const TaskWalk walk = task_walk(first_task, stride, tasks_per_row(wa));
    acc_a = acc_b = 0.0f;
#pragma unroll 1
    for (TaskIndex k = walk.first; k.group < walk.end; k.group += walk.groups)
        pair_task_dots<Type>(load_task<Type>(wa, row_a, k), load_task<Type>(wb, row_b, k), k, xr, acc_a, acc_b);
}

// The bytes of the first kCount (at most kTasksAhead) tasks of row_slice_dot's walk (as
// its first iteration loads them), for a kernel to load before it waits for the previous
// launch: weights are written only at load. Nothing for plain types or a row past the
// matrix.
template <int32_t Type, int kCount = kTasksAhead>
ER_HD void load_first_tasks(const PackedMatrix& w, int row, int first_task, int stride,
                            TaskBytes (&ahead)[kTasksAhead]) {
    static_assert(kCount >= 1 && kCount <= kTasksAhead);
    if constexpr (plain_value_bytes(Type) == 0) {
        if (row >= w.n_rows) return;
        const TaskWalk walk = task_walk(first_task, stride, tasks_per_row(w));
#pragma unroll
        for (int i = 0; i < kCount; ++i)
            if (walk.first.group + i * walk.groups < walk.end)
                ahead[i] = load_task<Type>(w, row, TaskIndex{walk.first.group + i * walk.groups, walk.first.sub});
    }
}

}  // namespace edgerun::cuda_orin
