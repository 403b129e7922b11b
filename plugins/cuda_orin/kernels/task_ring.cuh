// The GEMV's ring of tasks (GemvLaunch::ring_depth): each lane walking two rows
// (row_pair_slice_dot) has its next `depth` tasks of weights on their way into shared
// memory by cp.async (async_copy.cuh) while it dots the current one, where the register
// walk has one task's loads in flight at a time. A row of 2560 Q4_K weights is 2.5 tasks a
// lane, so with the register walk most of a lane's time is round trips to DRAM one after
// another; the copies take no registers, so the ring holds two or three tasks of both
// rows a lane at the same 80 registers and three blocks an SM (more tasks in registers,
// GemvLaunch::tasks_in_flight, took 128 registers and two blocks, and lost).
//
// Every type's loads are load_task's (dequantize_task.hpp) through two more memories:
// RingCopyIn issues each load as a copy into the lane's place of a slot, RingReadBack
// reads them back in the same order, so the bytes dotted are the register walk's and the
// sums the same bit for bit (pair_task_dots). A 16-byte load is one 16-byte copy; a
// narrower one is a copy of the aligned 4-byte word holding it, inside its plane (planes
// start and end on 256-byte boundaries, weight_layout.hpp), the load's bytes picked from
// it on the way back.
//
// A slot is one task of one row for the 32 lanes of a warp: the 16-byte loads first, each
// as 32 lanes' consecutive 16 bytes, then the narrow words, each as 32 consecutive words,
// so that a warp's copy and read of each are conflict-free. The warp's ring is `depth`
// pairs of slots (both rows), slot_bytes apart (the largest of the launch's types);
// lane slots are private, so a lane needs no barrier, only its own waits.
#pragma once

#include "async_copy.cuh"
#include "quant_tasks.hpp"

namespace edgerun::cuda_orin {

// Where one lane's loads of one task go in a slot, as task_load_counts(Type) lays it out.
struct RingPlace {
    uint8_t* slot;  // the slot's start (lane 0's first 16 bytes)
    int lane;
    int wide_count;  // the type's 16-byte loads, before the narrow words
    int wide = 0, narrow = 0;  // loads placed so far

    ER_HD uint8_t* next_wide() {
        check(wide < wide_count && narrow == 0, "a 16-byte load after a narrow one, or more than the layout's");
        return slot + 16 * (32 * wide++ + lane);
    }
    ER_HD uint8_t* next_narrow() { return slot + 16 * 32 * wide_count + 4 * (32 * narrow++ + lane); }

    ER_HD static void check(bool ok, const char* what) {
#if !defined(__CUDA_ARCH__)
        if (!ok) {
            std::fprintf(stderr, "cuda_orin: task ring: %s\n", what);
            std::abort();
        }
#else
        (void)ok;
        (void)what;
#endif
    }
};

// The aligned 4-byte word holding a load of 1 or 2 bytes.
ER_HD const uint8_t* word_holding(const uint8_t* p) {
    return reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
}

// load_task's loads issued as copies into the lane's place of a slot (their values unused).
struct RingCopyIn {
    RingPlace place;
    __device__ __forceinline__ Words4 load_16B(const uint8_t* p) {
        copy_async<16>(place.next_wide(), p, true);
        return {};
    }
    __device__ __forceinline__ uint32_t load_4B(const uint8_t* p) {
        copy_async<4>(place.next_narrow(), p, true);
        return 0;
    }
    __device__ __forceinline__ uint32_t load_2B(const uint8_t* p) { return load_4B(word_holding(p)); }
    __device__ __forceinline__ uint32_t load_1B(const uint8_t* p) { return load_4B(word_holding(p)); }
};

// The same loads read back from the slot once its copies have landed.
struct RingReadBack {
    RingPlace place;
    __device__ __forceinline__ Words4 load_16B(const uint8_t*) { return load_shared<Words4>(place.next_wide()); }
    __device__ __forceinline__ uint32_t load_4B(const uint8_t*) {
        return *reinterpret_cast<const uint32_t*>(place.next_narrow());
    }
    __device__ __forceinline__ uint32_t load_2B(const uint8_t* p) { return (load_4B(p) >> byte_shift(p)) & 0xFFFFu; }
    __device__ __forceinline__ uint32_t load_1B(const uint8_t* p) { return (load_4B(p) >> byte_shift(p)) & 0xFFu; }
    // Where the load's bytes lie in the word holding them (little-endian).
    __device__ __forceinline__ static uint32_t byte_shift(const uint8_t* p) {
        return 8u * uint32_t(reinterpret_cast<uintptr_t>(p) & 3u);
    }
};

// A warp's ring as one lane sees it.
struct TaskRing {
    uint8_t* warp_ring;  // the warp's `depth` pairs of slots
    int slot_bytes;      // GemvLaunch::ring_slot_bytes
    int depth;           // 2 or 3 (GemvLaunch::ring_depth)
    int lane;

    template <int32_t Type>
    ER_HD RingPlace place(int i, int row) const {
        return {warp_ring + (2 * i + row) * slot_bytes, lane, task_load_counts(Type).wide};
    }
};

// Row `row` of w as a matrix of one row: its planes' starts.
ER_HD PackedMatrix row_view(const PackedMatrix& w, int row) {
    PackedMatrix v = w;
    const PlaneGeometry g = plane_geometry(w.type);
    for (int p = 0; p < kMaxPlanes; ++p)
        if (p < g.n_planes) v.plane[p] = plane_row(w, p, row, g.plane_bytes[p]);
    v.n_rows = 1;
    return v;
}

// The two rows a lane walks through its ring, as one-row views, and its walk of their tasks.
struct RingPair {
    PackedMatrix a, b;
    TaskWalk walk;
};

ER_HD RingPair ring_pair(const PackedMatrix& wa, int row_a, const PackedMatrix& wb, int row_b, int first_task,
                         int stride) {
    return {row_view(wa, row_a), row_view(wb, row_b), task_walk(first_task, stride, tasks_per_row(wa))};
}

// Task k of both rows copied into slot pair i, as one group of copies (an empty one past
// the rows' end, so that every iteration commits one).
template <int32_t Type>
__device__ __forceinline__ void ring_copy_in(const RingPair& pair, const TaskRing& ring, TaskIndex k, int i) {
    if (k.group < pair.walk.end) {
        RingCopyIn a{ring.place<Type>(i, 0)}, b{ring.place<Type>(i, 1)};
        load_task<Type>(pair.a, 0, k, a);
        load_task<Type>(pair.b, 0, k, b);
        a.place.check(a.place.wide == task_load_counts(Type).wide && a.place.narrow == task_load_counts(Type).narrow,
                      "load_task's loads differ from task_load_counts");
    }
    commit_async_copies();
}

// The walk's first `depth` tasks on their way. Weights are written only at load, so a
// kernel may do this before it waits for the previous launch (gemv.cu): their DRAM
// latency then overlaps that launch's end and this one's start, at no cost in registers.
template <int32_t Type>
__device__ __forceinline__ void ring_prime(const RingPair& pair, const TaskRing& ring) {
    for (int i = 0; i < ring.depth; ++i)
        ring_copy_in<Type>(pair, ring, TaskIndex{pair.walk.first.group + i * pair.walk.groups, pair.walk.first.sub}, i);
}

// row_pair_slice_dot through a primed ring: the same tasks in the same order, each copied
// in `depth` iterations before its dots. Waiting for all but the newest depth - 1 groups
// is waiting for this iteration's; a slot is refilled only after its bytes were read into
// registers.
template <int32_t Type, class X>
__device__ __forceinline__ void ring_walk(const RingPair& pair, const TaskRing& ring, const X& xr, float& acc_a,
                                          float& acc_b) {
    static_assert(plain_value_bytes(Type) == 0 && X::kQ8, "quantized weights and 8-bit x only");
    acc_a = acc_b = 0.0f;
    int i = 0;
#pragma unroll 1
    for (TaskIndex k = pair.walk.first; k.group < pair.walk.end; k.group += pair.walk.groups) {
        if (ring.depth == 3)
            wait_async_copies<2>();
        else
            wait_async_copies<1>();
        RingReadBack a{ring.place<Type>(i, 0)}, b{ring.place<Type>(i, 1)};
        const TaskBytes bytes_a = load_task<Type>(pair.a, 0, k, a);
        const TaskBytes bytes_b = load_task<Type>(pair.b, 0, k, b);
        pair_task_dots<Type>(bytes_a, bytes_b, k, xr, acc_a, acc_b);
        ring_copy_in<Type>(pair, ring, TaskIndex{k.group + ring.depth * pair.walk.groups, k.sub}, i);
        i = i + 1 == ring.depth ? 0 : i + 1;
    }
}

// row_pair_slice_dot through the ring, primed here.
template <int32_t Type, class X>
__device__ __forceinline__ void row_pair_slice_dot_ring(const PackedMatrix& wa, int row_a, const PackedMatrix& wb,
                                                        int row_b, const X& xr, int first_task, int stride,
                                                        const TaskRing& ring, float& acc_a, float& acc_b) {
    const RingPair pair = ring_pair(wa, row_a, wb, row_b, first_task, stride);
    ring_prime<Type>(pair, ring);
    ring_walk<Type>(pair, ring, xr, acc_a, acc_b);
}

}  // namespace edgerun::cuda_orin
