// Quantized GEMV, single or fused: y_o = W_o x for up to four matrices sharing x, of any
// mix of weight types, in one launch; optionally gate/up with the SwiGLU epilogue; and
// the same for up to kGemvMaxRows rows of x at once (gemv_rows_kernel).
//
// With GemvLaunch::rope_append_tickets the Q/K/V launch also does rope_append's work, in
// the block that stores each head's last rows (rope_append_in_last_blocks); with
// GemvLaunch::q8_out a launch also makes the next GEMV's 8-bit x, in the block that
// stores each group of 32 rows (q8_out_in_last_blocks), and a launch reading such x
// applies its norm's scale to its dots (Activation::norm_scale).
//
// Shape: 256-thread blocks of 8 warps. A row is handled by `warps_per_row` warps (1 when
// there are plenty of rows); each lane walks the row's tasks (32 weights = one 16-byte
// load of the quant plane, quant_tasks.hpp) with stride 32 * warps_per_row, dotting them
// with q8 activations through dp4a, or with float activations (plain types always;
// quantized ones by default). Lane sums are reduced with shuffles, slices of a row
// through shared memory. With GemvLaunch::swiglu_pairs or row_pairs a lane walks two rows
// at once (SwiGLU's gate and up, or two rows of its output a warp; row_pair_slice_dot).
//
// Float activations are first copied into the block's shared memory (stage_x,
// gemv_stage.cuh), when they fit. Read in place they made L1, not DRAM, the limit: a
// lane's task covers 32 consecutive values (128 bytes), so each 16-byte load of a warp
// touched 32 different lines. Staged, a warp's load is four conflict-free shared-memory
// wavefronts (staged_unit). The products and their order are the same either way.
//
// Before anything else each warp asks L2 for the weight bytes of its row (prefetch_row;
// GemvLaunch::prefetch): a launch of a small model is under one wave, and without it the
// weights' DRAM latency came only after the staging of x (and, under programmatic
// dependent launch, after the previous kernel's end); with it the three overlap.
//
// STATUS: see kernels.hpp.
#include "kernel_params.hpp"
#if ER_KERNEL_LAUNCHERS
#include "launch_kernel.cuh"
#endif
#include "gemv_stage.cuh"
#include "grid_dependency.cuh"
#include "last_block.cuh"
#include "quant_tasks.hpp"
#include "rope_append.cuh"
#include "task_ring.cuh"
#include "warp.cuh"
#include "weight_type_switch.cuh"

namespace edgerun::cuda_orin {
namespace {

// Prefetches row `row` of w (every plane) into L2 for the warps of that row: the row's
// `warps_per_row` warps share its 128-byte lines, lanes spread over them. With one warp
// per row that is exactly the bytes the warp reads; with several (split-K) the warps of
// the row together ask for the row, which they read together. A row past the matrix asks
// for nothing. Weights are written only at load, so this needs no wait for an earlier
// launch (grid_dependency.cuh).
__device__ __forceinline__ void prefetch_row(const PackedMatrix& w, int row, int slice, int warps_per_row, int lane) {
    if (row >= w.n_rows) return;
    const PlaneGeometry g = plane_geometry(w.type);
#pragma unroll
    for (int p = 0; p < kMaxPlanes; ++p)
        if (p < g.n_planes)
            prefetch_l2(plane_row(w, p, row, g.plane_bytes[p]), uint64_t(w.blocks_per_row) * g.plane_bytes[p],
                        slice * 32 + lane, 32 * warps_per_row);
}

// v, unknown to the compiler from here on (an empty asm on the device).
__device__ __forceinline__ int opaque(int v) {
#if defined(__CUDA_ARCH__)
    asm("" : "+r"(v));
#endif
    return v;
}

// Which x a launch's blocks read: float or 8-bit, in global memory or staged.
enum class XForm { kGlobal, kStagedFloat, kStagedQ8 };

__device__ XForm x_form(const GemvLaunch& p) {
    return p.quantize_x ? XForm::kStagedQ8 : p.x_stage_bytes != 0 ? XForm::kStagedFloat : XForm::kGlobal;
}

// Calls use(xr) with the reader (quant_tasks.hpp) of the launch's form of x (x_form), for
// a weight of type Type: 8-bit x staged or prepared for quantized types, else floats,
// staged or not. Plain types read floats whatever the form (plan_gemv keeps them out of a
// quantize_x launch). n_x: the rows a quantized stage holds. kPrepared: whether the
// kernel reads prepared 8-bit x (not the row loop's: plan_gemv). Inlined by force, as are
// its callers: as calls, their arguments went through a stack frame in local memory.
template <int32_t Type, bool kPrepared = true, class Use>
__device__ __forceinline__ auto with_x_reader(const Activation& x, XForm form, const Words4* stage, int n_x, Use&& use) {
    if constexpr (plain_value_bytes(Type) == 0) {
        if (form == XForm::kStagedQ8) return use(StagedQ8X::in_stage(stage, n_x, x.n_pad));
        if constexpr (kPrepared)
            if (x.q8.q) return use(GlobalQ8X{x.q8});
    }
    if (form == XForm::kStagedFloat) return use(StagedFloatX::in_stage(stage, n_x, x.n_pad));
    return use(GlobalFloatX{x.f});
}

// One row's dot in the launch's form of x; `ahead`: row_slice_dot's. kBuiltType: the weight
// type the kernel was built for (visit_weight_type_of); kPrepared: with_x_reader's.
template <int kInFlight, int32_t kBuiltType = kAnyWeightType, bool kPrepared = true>
__device__ __forceinline__ float row_slice_dot_any(const PackedMatrix& w, int row, const Activation& x, XForm form,
                                                   const Words4* stage, int first_task, int stride,
                                                   const TaskBytes* ahead = nullptr) {
    return visit_weight_type_of<kBuiltType>(w.type, 0.0f, [&](auto type) {
        constexpr int32_t kType = decltype(type)::value;
        return with_x_reader<kType, kPrepared>(x, form, stage, 1, [&](const auto& xr) {
            return row_slice_dot<kType, kInFlight>(w, row, xr, first_task, stride, ahead);
        });
    });
}

// Two rows of one quantized type walked together in the launch's form of 8-bit x
// (GemvLaunch::swiglu_pairs, row_pairs); through the warp's ring of tasks if it has one
// (ring.depth != 0: GemvLaunch::ring_depth, prepared x only, plan_gemv), which the kernel
// primed for these rows before its wait (ring_prime).
template <int32_t kBuiltType = kAnyWeightType>
__device__ __forceinline__ void row_pair_slice_dot_any(const PackedMatrix& wa, int row_a, const PackedMatrix& wb,
                                                       int row_b, const Activation& x, XForm form, const Words4* stage,
                                                       int first_task, int stride, const TaskRing& ring, float& acc_a,
                                                       float& acc_b) {
    visit_weight_type_of<kBuiltType>(wa.type, false, [&](auto type) {
        constexpr int32_t kType = decltype(type)::value;
        if constexpr (plain_value_bytes(kType) == 0) {
            if (ring.depth)
                ring_walk<kType>(ring_pair(wa, row_a, wb, row_b, first_task, stride), ring, GlobalQ8X{x.q8}, acc_a,
                                 acc_b);
            else if (form == XForm::kStagedQ8)
                row_pair_slice_dot<kType>(wa, row_a, wb, row_b, StagedQ8X::in_stage(stage, 1, x.n_pad), first_task,
                                          stride, acc_a, acc_b);
            else
                row_pair_slice_dot<kType>(wa, row_a, wb, row_b, GlobalQ8X{x.q8}, first_task, stride, acc_a, acc_b);
        }
        return true;
    });
}

__device__ void store_output(const GemvOutput& o, int64_t row, float v) { store_float_or_half(o.y, o.y_is_f16, row, v); }

__device__ float silu(float g) { return g / (1.0f + expf(-g)); }

// Row `row` of output `out` from its summed dot (and SwiGLU's up row's): x's norm scale
// (1 without one: Activation::norm_scale), the bias, SwiGLU, the residual, the store.
__device__ __forceinline__ void store_row(const GemvLaunch& p, const GemvOutput& out, int row, float acc, float acc_up,
                                          float x_scale, bool swiglu) {
    float v = acc * x_scale + (out.bias ? out.bias[row] : 0.0f);
    if (swiglu) {
        const GemvOutput& up = p.out[1];
        v = silu(v) * (acc_up * x_scale + (up.bias ? up.bias[row] : 0.0f));
    }
    if (out.residual) v += out.residual[row];
    store_output(out, row, v);
}

// Which output's rows this block computes: the range of block_begin (n_ranges of them)
// holding blockIdx.x.
__device__ __forceinline__ int block_output(const GemvLaunch& p, int n_ranges) {
    int o = 0;
    while (o + 1 < n_ranges && int(blockIdx.x) >= p.block_begin[o + 1]) ++o;
    return o;
}

// GemvLaunch::rope_append_tickets, after the block's rows (block_rows of output o, the
// block's range: q, k or v) are stored: each head they reach counts them on its ticket,
// and the block that completes a head (q's head_dim rows, or k's and v's 2 head_dim)
// does rope_append's work for it from what every block stored, in `shared` (the stage of
// x, no longer read). Block-uniform, as the barriers in it need.
__device__ __forceinline__ void rope_append_in_last_blocks(const GemvLaunch& p, int block_rows, float* shared) {
    const int o = block_output(p, p.n_outputs);
    const int begin = (int(blockIdx.x) - p.block_begin[o]) * block_rows;
    const RopeAppendParams& r = p.rope_append;
    const int dim = r.rope.head_dim, end = min(begin + block_rows, p.out[o].w.n_rows);
    for (int h = begin / dim; h * dim < end && begin < end; ++h) {
        const int rows = min(end, (h + 1) * dim) - max(begin, h * dim);
        const int head = o == 0 ? h : r.n_head + h;
        if (takes_last_ticket(p.rope_append_tickets + head, rows, o == 0 ? dim : 2 * dim))
            rope_append_head<true>(r, head, shared);
    }
}

// GemvLaunch::q8_out, after the block's rows [begin, begin + block_rows) of output 0 are
// stored: each group of 32 they reach counts them on its ticket, and the block that
// completes a group quantizes it, a value a lane of warp 0, from what every block stored.
// With a norm, that block also counts the group on the launch's last ticket, and the
// block completing the last group turns the groups' sums of squares into the norm's
// scale (lane-strided sums, then the shuffle tree). Block-uniform (the tickets' barriers).
__device__ __forceinline__ void q8_out_in_last_blocks(const GemvLaunch& p, int block_rows) {
    const Q8Out& q8 = p.q8_out;
    const float* y = static_cast<const float*>(p.out[0].y);
    const int n = p.out[0].w.n_rows, begin = int(blockIdx.x) * block_rows, end = min(begin + block_rows, n);
    const int n_groups = (n + kQ8Group - 1) / kQ8Group;
    for (int g = begin / kQ8Group; g * kQ8Group < end; ++g) {
        const int first = g * kQ8Group, rows = min(end, first + kQ8Group) - max(begin, first);
        if (!takes_last_ticket(q8.tickets + g, rows, min(kQ8Group, n - first))) continue;
        if (threadIdx.x < 32) {
            const int i = first + int(threadIdx.x);
            const float v = i < n ? load_f32_l2(y + i) : 0.0f;  // the tail up to 32: zeros
            const float u = q8.norm_weight && i < n ? v * q8.norm_weight[i] : v;
            q8.q[i] = uint8_t(quantize_q8_in_warp(u, int(threadIdx.x), g, q8.segments));
            const float sum = warp_sum(v * v);
            if (threadIdx.x == 0 && q8.norm_scale) q8.sums[g] = sum;
        }
        if (!q8.norm_scale || !takes_last_ticket(q8.tickets + n_groups, 1, n_groups) || threadIdx.x >= 32) continue;
        float sum = 0.0f;
        for (int k = int(threadIdx.x); k < n_groups; k += 32) sum += load_f32_l2(q8.sums + k);
        sum = warp_sum(sum);
        if (threadIdx.x == 0) *q8.norm_scale = rsqrtf(sum / float(n) + q8.norm_eps);
    }
}

// The work a launch's last blocks do after its rows are stored (GemvLaunch::
// rope_append_tickets or q8_out), in one call, not inlined: inlined, rope_append's
// registers and sincosf's slow-path frame (rope_append.cuh) became the whole kernel's,
// and ptxas spilled in the task loops of four tasks in flight. kQ8Out: whether q8_out may
// be asked for; not by the row loop (plan_gemv gives such launches a row a warp), where
// the callee's larger code made ptxas spill 4 words of the loop over rows.
template <bool kQ8Out>
__device__ __noinline__ void finish_in_last_blocks(const GemvLaunch& p, int block_rows, float* shared) {
    if (p.rope_append_tickets) rope_append_in_last_blocks(p, block_rows, shared);
    else if constexpr (kQ8Out) q8_out_in_last_blocks(p, block_rows);
}

// The launch struct is __grid_constant__ because it is indexed by a run-time output
// number: a plain by-value parameter indexed so is first copied, every thread its own
// ~500 bytes, into local memory (ptxas: "488 bytes stack frame"), about 125 KB of local
// stores per block before any weight is read.
//
// At least 3 blocks per SM (as many as a full stage of x lets sm_87 hold): up to 80
// registers. Left to itself ptxas picked 64 for sm_90, and spilled. With kInFlight = 2
// or 4 tasks loaded ahead (GemvLaunch::tasks_in_flight) it needs 124-128, and spilled in
// its task loops at 80: two blocks.
//
// kRowLoop: each warp takes p.rows_per_warp rows (GemvLaunch::rows_per_warp > 1), so the
// block's staging of x serves that many more rows; then a row is never split across warps
// (plan_gemv), and with warps_per_row, first task and stride known to the compiler the
// loop over rows fits the 80 registers (taking them from the launch, it spilled). It
// runs one task in flight only (two spilled 2.4 KB).
//
// kLoadAhead: the first tasks (as many as in flight, at most kTasksAhead) are loaded before
// the wait for the previous launch and the staging of x. Always with several in flight;
// with one, GemvLaunch::load_ahead (the same 80 registers, and one word more spilled:
// stored before the staging of x, reloaded once a row; bench/spill_places.py).
//
// kBuiltType: every output's weight type, when the kernel is built for one
// (gemv_kernel_for), else kAnyWeightType. kMinBlocks: blocks an SM; 4 (64 registers) only
// for a kernel of one type, where ptxas spills one word before the loops (two words and
// seven reloads for Q5_K, which keeps 3).
//
// kRing: the pairs may walk through a ring of tasks in shared memory (GemvLaunch::
// ring_depth, task_ring.cuh); a kernel of its own, so that the default one's code is as
// it was.
template <bool kRowLoop, int kInFlight, bool kLoadAhead = (kInFlight > 1), int32_t kBuiltType = kAnyWeightType,
          int kMinBlocks = (kInFlight == 1 ? 3 : 2), bool kRing = false>
__global__ void __launch_bounds__(kGemvWarps * 32, kMinBlocks)
    gemv_kernel(const __grid_constant__ GemvLaunch p) {
    static_assert(!(kRowLoop && kLoadAhead), "the row loop loads each row's tasks as it reaches it");
    // Rows walked in pairs only where plan_gemv may ask for it (a row a warp, one task in
    // flight, none loaded ahead), and at 80 registers (at 64 Q6_K's spilled:
    // gemv_kernel_for gives those launches three blocks an SM): elsewhere its code would
    // only add to the kernel's registers.
    constexpr bool kPairs = !kRowLoop && kInFlight == 1 && !kLoadAhead && kMinBlocks == 3;
    const bool row_pairs = kPairs && p.row_pairs;
    static_assert(!kRing || kPairs, "the ring serves the pairs only");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warps_per_row = kRowLoop ? 1 : p.warps_per_row;
    const int rows_per_warp = kRowLoop ? p.rows_per_warp : row_pairs ? 2 : 1;
    const int rows_per_pass = kGemvWarps / warps_per_row;

    const bool swiglu = p.epilogue == kEpilogueSwiGLU;
    const int n_ranges = swiglu ? 1 : p.n_outputs;
    const int o = block_output(p, n_ranges);
    const GemvOutput& out = p.out[o];
    const int first_row = (int(blockIdx.x) - p.block_begin[o]) * rows_per_pass * rows_per_warp + warp / warps_per_row;
    const int slice = warp % warps_per_row;
    const int first_task = slice * 32 + lane, stride = 32 * warps_per_row;

    if (p.prefetch) {
        prefetch_row(out.w, first_row, slice, warps_per_row, lane);
        if (swiglu) prefetch_row(p.out[1].w, first_row, slice, warps_per_row, lane);
    }
    // kLoadAhead: the first tasks are loaded now, before the wait: under programmatic
    // dependent launch their DRAM latency then overlaps the end of the previous kernel and
    // the staging of x, where otherwise nothing of this block's weights was on its way.
    TaskBytes ahead[kTasksAhead];
    if constexpr (kLoadAhead)
        visit_weight_type_of<kBuiltType>(out.w.type, false, [&](auto type) {
            constexpr int kCount = kInFlight < kTasksAhead ? kInFlight : kTasksAhead;
            load_first_tasks<decltype(type)::value, kCount>(out.w, first_row, first_task, stride, ahead);
            return true;
        });
    ER_DYNAMIC_SHARED(Words4, x_stage);
    // kRing: the pair's first tasks go into the warp's ring now, before the wait, as
    // kLoadAhead's go into registers. The ring has the dynamic shared memory to itself
    // (plan_gemv: no stage with it).
    const int ring_depth = kRing ? p.ring_depth : 0;
    const TaskRing ring{reinterpret_cast<uint8_t*>(x_stage) + warp * 2 * ring_depth * p.ring_slot_bytes,
                        p.ring_slot_bytes, ring_depth, lane};
    // The pair is the one the loop below walks (its two pair branches, for its one pass).
    auto prime = [&](const PackedMatrix& wb, int row_b) {
        visit_weight_type_of<kBuiltType>(out.w.type, false, [&](auto type) {
            if constexpr (plain_value_bytes(decltype(type)::value) == 0)
                ring_prime<decltype(type)::value>(ring_pair(out.w, first_row, wb, row_b, first_task, stride), ring);
            return true;
        });
    };
    if (kRing && ring.depth) {
        if (row_pairs && first_row + rows_per_pass < out.w.n_rows) prime(out.w, first_row + rows_per_pass);
        else if (first_row < out.w.n_rows && p.swiglu_pairs) prime(p.out[1].w, first_row);
    }
    wait_for_prior_grids();  // x (and the residual) come from earlier launches
    allow_next_grid();

    const XForm form = x_form(p);
    // The staging's batch: four spilled in the task loops of four tasks in flight and of
    // several rows a warp (check_kernel_resources.py), two did not.
    constexpr int kStageBatch = kRowLoop || kInFlight == 4 ? 2 : 4;
    if (form == XForm::kStagedQ8) stage_x_q8<kStageBatch>(p.x, 1, reinterpret_cast<uint8_t*>(x_stage));
    else if (form == XForm::kStagedFloat) stage_x_row<kStageBatch>(p.x, x_stage);

#pragma unroll 1
    for (int k = 0; k < rows_per_warp; k += row_pairs ? 2 : 1) {
        const int row = first_row + k * rows_per_pass, pair_row = row + rows_per_pass;
        if (p.prefetch && k + 1 < rows_per_warp) {  // the next row's weights (a pair's second row: now)
            prefetch_row(out.w, row + rows_per_pass, slice, warps_per_row, lane);
            if (swiglu) prefetch_row(p.out[1].w, row + rows_per_pass, slice, warps_per_row, lane);
        }
        // acc: the row's sum; second: the up row's (SwiGLU) or pair_row's (row_pairs).
        float acc = 0.0f, second = 0.0f;
        if (row_pairs && pair_row < out.w.n_rows) {
            row_pair_slice_dot_any<kBuiltType>(out.w, row, out.w, pair_row, p.x, form, x_stage, first_task, stride,
                                               ring, acc, second);
        } else if (row < out.w.n_rows && kPairs && p.swiglu_pairs) {
            row_pair_slice_dot_any<kBuiltType>(out.w, row, p.out[1].w, row, p.x, form, x_stage, first_task, stride,
                                               ring, acc, second);
        } else if (row < out.w.n_rows) {
            acc = row_slice_dot_any<kInFlight, kBuiltType, !kRowLoop>(out.w, row, p.x, form, x_stage, first_task, stride,
                                                                 kLoadAhead ? ahead : nullptr);
            if (swiglu)
                second = row_slice_dot_any<kInFlight, kBuiltType, !kRowLoop>(p.out[1].w, row, p.x, form, x_stage,
                                                                            first_task, stride);
        }
        // x.q8 without its norm's scale (not in the row loop, as q8_out: plan_gemv): loaded
        // by every lane before the sums' shuffles, which then hide some of its round trip.
        const float x_scale = !kRowLoop && p.x.norm_scale ? *p.x.norm_scale : 1.0f;
        acc = warp_sum(acc);
        if (swiglu || row_pairs) second = warp_sum(second);

        if (warps_per_row > 1) {
            __shared__ float slice_sums[kGemvWarps][2];
            ER_SHARED_ARRAY(slice_sums);
            if (lane == 0) {
                slice_sums[warp][0] = acc;
                slice_sums[warp][1] = second;
            }
            __syncthreads();
            if (slice == 0 && lane == 0)
                for (int s = 1; s < warps_per_row; ++s) {
                    acc += slice_sums[warp + s][0];
                    second += slice_sums[warp + s][1];
                }
        }
        if (slice != 0 || lane != 0) continue;
        if (row < out.w.n_rows) store_row(p, out, row, acc, second, x_scale, swiglu);
        if (row_pairs && pair_row < out.w.n_rows) store_row(p, out, pair_row, second, 0.0f, x_scale, false);
    }
    if (p.rope_append_tickets || (!kRowLoop && p.q8_out.q))
        finish_in_last_blocks<!kRowLoop>(p, rows_per_pass * rows_per_warp, reinterpret_cast<float*>(x_stage));
}

// ------------------------------------------------------------ several rows of x --
// The same grid, lanes and task order as gemv_kernel, but each task is dequantized (or
// loaded) once and dotted with up to kGemvMaxRows rows of x: a step of n rows reads each
// weight once instead of n times. Row r's sum adds the same products in the same order as
// gemv_kernel's, so it is that kernel's result bit for bit (unless the compiler contracts
// the two kernels' multiply-adds differently).

// xr: row 0 of x as this thread reads it (row_slice_dot's readers, quant_tasks.hpp);
// xr.row_at(r, n_pad) is
// row r, staged or not.
template <int32_t Type, class X>
__device__ void row_slice_dot_rows(const PackedMatrix& w, int row, int n_pad, const X& xr, int n_x, int first_task,
                                   int stride, float (&acc)[kGemvMaxRows]) {
    const int n_tasks = tasks_per_row(w);
    if constexpr (plain_value_bytes(Type) != 0) {
        for (int t = first_task; t < n_tasks; t += stride) {
            // plain_task_dot's sums, row by row, with the values made floats once.
            const PlainTask<Type> task = load_plain_task<Type>(w, row, t);
            float task_acc[kGemvMaxRows];
#pragma unroll
            for (int r = 0; r < kGemvMaxRows; ++r) task_acc[r] = 0.0f;
#pragma unroll
            for (int part = 0; part < 4; ++part) {
                float values[8];
                plain_part_values<Type>(task, part, values);
#pragma unroll
                for (int r = 0; r < kGemvMaxRows; ++r)
                    if (r < n_x) task_acc[r] = plain_part_dot(values, xr.row_at(r, n_pad), 32 * t + 8 * part, task_acc[r]);
            }
#pragma unroll
            for (int r = 0; r < kGemvMaxRows; ++r)
                if (r < n_x) acc[r] += task_acc[r];
        }
    } else {
        const TaskWalk walk = task_walk(first_task, stride, n_tasks);
        for (TaskIndex k = walk.first; k.group < walk.end; k.group += walk.groups) {
            const Task task = dequantize_task<Type>(w, row, k);
            if constexpr (X::kQ8) {
#pragma unroll
                for (int r = 0; r < kGemvMaxRows; ++r)
                    if (r < n_x) acc[r] += dequantized_task_dot<Type>(task, xr.row_at(r, n_pad));
            } else {
                // dequantized_task_dot_float's sums, row by row, with each segment's quants
                // made floats once for all rows.
                float task_acc[kGemvMaxRows];
#pragma unroll
                for (int r = 0; r < kGemvMaxRows; ++r) task_acc[r] = 0.0f;
#pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const SegmentQuants quants = segment_quants<Type>(task.seg[s]);
#pragma unroll
                    for (int r = 0; r < kGemvMaxRows; ++r)
                        if (r < n_x) task_acc[r] += segment_dot_float<Type>(task.seg[s], quants, xr.row_at(r, n_pad));
                }
#pragma unroll
                for (int r = 0; r < kGemvMaxRows; ++r)
                    if (r < n_x) acc[r] += task_acc[r];
            }
        }
    }
}

// As row_slice_dot_any, for several rows of x.
__device__ __forceinline__ void row_slice_dot_rows_any(const PackedMatrix& w, int row, const Activation& x, XForm form,
                                                       const Words4* stage, int n_x, int first_task, int stride,
                                                       float (&acc)[kGemvMaxRows]) {
    visit_weight_type(w.type, false, [&](auto type) {
        constexpr int32_t kType = decltype(type)::value;
        return with_x_reader<kType>(x, form, stage, n_x, [&](const auto& xr) {
            row_slice_dot_rows<kType>(w, row, x.n_pad, xr, n_x, first_task, stride, acc);
            return true;
        });
    });
}

// At least 2 blocks per SM: up to 128 registers. ptxas's own choice for sm_87 (64)
// spilled, and so did 80 (3 blocks) once the dequantizers knew their indices are not
// negative (ER_ASSUME_NON_NEGATIVE: fewer instructions per task). It takes 90-94.
__global__ void __launch_bounds__(kGemvWarps * 32, 2) gemv_rows_kernel(const __grid_constant__ GemvLaunch p) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int rows_per_block = kGemvWarps / p.warps_per_row;
    const int n_x = p.n_x_rows;

    const int o = block_output(p, p.n_outputs);
    const GemvOutput& out = p.out[o];
    const int row = (int(blockIdx.x) - p.block_begin[o]) * rows_per_block + warp / p.warps_per_row;
    const int slice = warp % p.warps_per_row;
    const int first_task = slice * 32 + lane, stride = 32 * p.warps_per_row;

    // The prefetch reads its output's fields through an index the compiler cannot see
    // through: reused by the main loop, those loads stayed live across it and made ptxas
    // spill here (tests/cuda/check_kernel_resources.py).
    if (p.prefetch) prefetch_row(p.out[opaque(o)].w, row, slice, p.warps_per_row, lane);
    wait_for_prior_grids();
    allow_next_grid();

    ER_DYNAMIC_SHARED(Words4, x_stage);
    const XForm form = x_form(p);
    if (form == XForm::kStagedQ8) stage_x_q8<4>(p.x, n_x, reinterpret_cast<uint8_t*>(x_stage));
    else if (form == XForm::kStagedFloat) stage_x<4>(p.x, n_x, x_stage);

    float acc[kGemvMaxRows];
#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r) acc[r] = 0.0f;
    if (row < out.w.n_rows) row_slice_dot_rows_any(out.w, row, p.x, form, x_stage, n_x, first_task, stride, acc);
#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r)
        if (r < n_x) acc[r] = warp_sum(acc[r]);

    if (p.warps_per_row > 1) {
        __shared__ float slice_sums[kGemvWarps][kGemvMaxRows];
        ER_SHARED_ARRAY(slice_sums);
        if (lane == 0)
            for (int r = 0; r < n_x; ++r) slice_sums[warp][r] = acc[r];
        __syncthreads();
        if (slice == 0 && lane == 0)
            for (int s = 1; s < p.warps_per_row; ++s)
#pragma unroll
                for (int r = 0; r < kGemvMaxRows; ++r)
                    if (r < n_x) acc[r] += slice_sums[warp + s][r];
    }
    if (slice != 0 || lane != 0 || row >= out.w.n_rows) return;

#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r)
        if (r < n_x) {
            const int64_t at = int64_t(r) * out.y_row_stride + row;
            float v = acc[r] + (out.bias ? out.bias[row] : 0.0f);
            if (out.residual) v += out.residual[at];
            store_output(out, at, v);
        }
}

// The weight type of all of a launch's matrices, or kAnyWeightType where they differ (a
// Q/K/V launch of Q4_K_M, whose V is Q6_K in some layers).
inline int32_t launch_weight_type(const GemvLaunch& l) {
    const int n = l.epilogue == kEpilogueSwiGLU ? 2 : l.n_outputs;
    for (int o = 1; o < n; ++o)
        if (l.out[o].w.type != l.out[0].w.type) return kAnyWeightType;
    return l.out[0].w.type;
}

// The weight type launch l's kernel is built for: that of all its matrices where the
// default one-row form (one task in flight, a row a warp) has a kernel for it (the
// K-quants of Q4_K_M and Q5_K_M, Q8_0, Q4_0), else kAnyWeightType (the kernel of every type).
inline int32_t gemv_built_type(const GemvLaunch& l) {
    if (!l.typed_kernel || l.n_x_rows > 1 || l.rows_per_warp > 1 || l.tasks_in_flight > 1 || l.load_ahead ||
        l.ring_depth)
        return kAnyWeightType;
    const int32_t type = launch_weight_type(l);
    return type == kQ4_K || type == kQ5_K || type == kQ6_K || type == kQ8_0 || type == kQ4_0 ? type : kAnyWeightType;
}

// The kernel built for weight type `type` (gemv_built_type's), at kBlocks blocks an SM.
template <int kBlocks>
auto typed_gemv_kernel(int32_t type) {
    switch (type) {
        case kQ4_K: return gemv_kernel<false, 1, false, kQ4_K, kBlocks>;
        case kQ5_K: return gemv_kernel<false, 1, false, kQ5_K, 3>;
        case kQ6_K: return gemv_kernel<false, 1, false, kQ6_K, kBlocks>;
        case kQ8_0: return gemv_kernel<false, 1, false, kQ8_0, kBlocks>;
        case kQ4_0: return gemv_kernel<false, 1, false, kQ4_0, kBlocks>;
        default: return gemv_kernel<false, 1>;  // not one of gemv_built_type's
    }
}

// The instantiation that takes launch l (the CUDA launcher's and the emulation's).
inline auto gemv_kernel_for(const GemvLaunch& l) {
    if (const int32_t type = gemv_built_type(l); type != kAnyWeightType)
        return l.typed_blocks_per_sm == 4 && !l.swiglu_pairs && !l.row_pairs ? typed_gemv_kernel<4>(type)
                                                                         : typed_gemv_kernel<3>(type);
    if (l.ring_depth) return gemv_kernel<false, 1, false, kAnyWeightType, 3, true>;
    if (l.n_x_rows > 1) return gemv_rows_kernel;
    if (l.rows_per_warp > 1) return gemv_kernel<true, 1>;
    if (l.tasks_in_flight == 2) return gemv_kernel<false, 2>;
    if (l.tasks_in_flight == 4) return gemv_kernel<false, 4>;
    if (l.load_ahead) return gemv_kernel<false, 1, true>;
    return gemv_kernel<false, 1>;
}

}  // namespace

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_gemv(GemvLaunch launch, int n_sms, LaunchStream stream) {
    const int n_blocks = plan_gemv(launch, n_sms);
    if (n_blocks == 0) return cudaErrorInvalidValue;
    return launch_kernel(gemv_kernel_for(launch), dim3(n_blocks), dim3(kGemvWarps * 32), size_t(launch.shared_bytes),
                         stream, launch);
}

bool kernels_wait_for_prior_grids(std::string* why) {
    cudaFuncAttributes attributes{};
    if (const cudaError_t err = cudaFuncGetAttributes(&attributes, gemv_kernel<false, 1>); err != cudaSuccess) {
        *why = std::string("cudaFuncGetAttributes: ") + cudaGetErrorString(err);
        return false;
    }
    if (attributes.ptxVersion >= 90) return true;
    *why = "the kernels running here come from compute_" + std::to_string(attributes.ptxVersion) +
           " code, which has no griddepcontrol.wait (built for sm_90 and later only)";
    return false;
}
#endif

}  // namespace edgerun::cuda_orin
