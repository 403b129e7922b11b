// Parameters of the cuda_orin kernels: plain structs shared by the kernels, their
// launchers (kernels.hpp) and the tests; no CUDA header, so the kernel sources can also
// be compiled as C++ for the CPU emulation test (tests/cuda/emu/). The attention's are in
// attention_params.hpp.
#pragma once


#include "activation.hpp"
#include "launch_math.hpp"
#include "planted_faults.hpp"
#include "rope.hpp"
#include "weight_layout.hpp"

#include <algorithm>
#include <cstdint>

// The host-side launch code of a kernel source is compiled only by nvcc (NVRTC and the
// CPU emulation take the kernels alone).
#if defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#define ER_KERNEL_LAUNCHERS 1
#else
#define ER_KERNEL_LAUNCHERS 0
#endif

namespace edgerun::cuda_orin {

// -------------------------------------------------------------- activations --

// x (+ residual) -> optional RMSNorm -> float and q8 copies for the GEMVs. When
// residual is given, h = x + residual is written to residual_out (the new hidden state;
// it may alias x or residual) and normalised. One block; n up to a few ten thousands.
struct PrepareParams {
    const void* x = nullptr;
    int32_t x_is_f16 = 0;
    const float* residual = nullptr;
    float* residual_out = nullptr;
    const float* norm_weight = nullptr;  // nullptr: no normalisation
    float norm_eps = 1e-6f;
    int32_t n = 0;
    // Outputs, each padded to n_pad = round_up(n, 32) (the tail written as zeros).
    float* out_f = nullptr;
    int8_t* out_q = nullptr;
    Words2* out_segments = nullptr;  // n_pad / 16 (q8_segment_words)
};

ER_HD int32_t padded_length(int32_t n) { return (n + kQ8Group - 1) / kQ8Group * kQ8Group; }

// ------------------------------------------------------------ KV cache, RoPE --

enum KvType : int32_t { kKvF32 = 0, kKvF16 = 1, kKvQ8 = 2 };  // the ABI's ER_KV_F32 / ER_KV_F16 / ER_KV_Q8

// Bytes of one cached K or V value (Q8 scales apart).
ER_HD int kv_value_bytes(int32_t type) { return type == kKvF32 ? 4 : type == kKvF16 ? 2 : 1; }

// One layer's cache. K and V are [n_head_kv][n_ctx][head_dim], floats, halves or int8; for Q8
// the scales are [n_head_kv][n_ctx][head_dim / 32] fp16 (one per 32 values of a token
// and head, so appending a token never touches older ones).
struct KvCacheLayer {
    int32_t type = kKvF16;
    void* k = nullptr;
    void* v = nullptr;
    uint16_t* k_scales = nullptr;
    uint16_t* v_scales = nullptr;
    int32_t n_ctx = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
};

// Where a cache writer stores the Q8 scale of the 32-value group holding dim d of a token's
// row (token = kv_head * n_ctx + pos). Every writer (kv_append, rope_append) takes it from
// here, so the planted INT8-scale fault reaches each of them.
ER_HD size_t kv_q8_scale_index(size_t token, int head_dim, int d) {
    return planted(PlantedFault::KvScaleStride) ? token + d / 32 : token * size_t(head_dim / 32) + d / 32;
}

// The cache of sequence `seq` when a layer holds its sequences one after another,
// stride_values values and stride_scales Q8 scales apart (c: sequence 0's).
ER_HD KvCacheLayer sequence_cache(KvCacheLayer c, int64_t seq, int64_t stride_values, int64_t stride_scales) {
    const int64_t bytes = kv_value_bytes(c.type);
    c.k = static_cast<uint8_t*>(c.k) + seq * stride_values * bytes;
    c.v = static_cast<uint8_t*>(c.v) + seq * stride_values * bytes;
    if (c.k_scales) {
        c.k_scales += seq * stride_scales;
        c.v_scales += seq * stride_scales;
    }
    return c;
}

// Values of one layer's K (or V), and their bytes and scales'.
inline uint64_t kv_values(const KvCacheLayer& c) { return uint64_t(c.n_head_kv) * c.n_ctx * c.head_dim; }
inline uint64_t kv_values_bytes(const KvCacheLayer& c) { return kv_values(c) * kv_value_bytes(c.type); }
inline uint64_t kv_scales_bytes(const KvCacheLayer& c) {
    return c.type == kKvQ8 ? uint64_t(c.n_head_kv) * c.n_ctx * (c.head_dim / 32) * 2 : 0;
}

// For the token at *pos: optional per-head RMSNorm of q and k (Qwen3), RoPE of q (in
// place) and k, then k and v (already projected, [n_head_kv][head_dim] floats) stored
// into the cache at *pos (quantized for Q8 with the rule in activation.hpp).
// A *pos outside [0, n_ctx) writes nothing to the cache.
struct RopeAppendParams {
    float* q = nullptr;
    int32_t n_head = 0;
    const float* k = nullptr;
    const float* v = nullptr;
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    float norm_eps = 1e-6f;
    RopeConfig rope{};
    const int32_t* pos = nullptr;
    KvCacheLayer cache{};  // sequence 0's, or the token's own when seq is null
    // The token's sequence (device memory, read at run time so the launch is graph-safe
    // for any sequence); its cache lies seq_stride_values / seq_stride_scales after 0's.
    const int32_t* seq = nullptr;
    int64_t seq_stride_values = 0, seq_stride_scales = 0;
};

// A head is done by a thread a dimension (rope_append.cuh), warps of whole Q8 groups.
inline constexpr int kRopeAppendMaxHeadDim = 256;
// Shared memory for a head: its rotated row and a block reduction's 32 partial sums.
inline constexpr int kRopeAppendSharedBytes = (kRopeAppendMaxHeadDim + 32) * 4;

inline bool valid_rope_append(const RopeAppendParams& p) {
    const int dim = p.rope.head_dim;
    return p.q && p.k && p.v && p.pos && p.n_head > 0 && p.cache.n_head_kv > 0 && dim > 0 &&
           dim <= kRopeAppendMaxHeadDim && dim % 32 == 0 && p.rope.n_rot >= 0 && p.rope.n_rot <= dim &&
           p.rope.n_rot % 2 == 0 && p.cache.head_dim == dim && p.cache.k && p.cache.v &&
           (!p.seq || p.seq_stride_values >= int64_t(p.cache.n_head_kv) * p.cache.n_ctx * dim) &&
           (p.cache.type == kKvF16 || (p.cache.type == kKvQ8 && p.cache.k_scales && p.cache.v_scales));
}

// --------------------------------------------------------------------- GEMV --

inline constexpr int kMaxGemvOutputs = 4;

enum GemvEpilogue : int32_t {
    kEpilogueStore = 0,   // y = W x (+ bias) (+ residual)
    kEpilogueSwiGLU = 1,  // y = silu(W0 x + b0) * (W1 x + b1): gate = output 0, up = output 1
};

struct GemvOutput {
    PackedMatrix w;
    const float* bias = nullptr;
    const float* residual = nullptr;  // added after the bias; may alias y
    void* y = nullptr;
    int32_t y_is_f16 = 0;
    // With several rows of x (GemvLaunch::n_x_rows): elements from the output of one row of
    // x to the next, in y and in residual (at least w.n_rows).
    int64_t y_row_stride = 0;
};

// The most rows of x one GEMV launch multiplies (rows of a batched or speculative step);
// more rows take further launches.
inline constexpr int kGemvMaxRows = 8;

// The most shared memory a GEMV block takes for its copy of the float activations (one
// row of up to 11296 values with its segment sums, FloatStage; wider rows of x are read
// in place). A launch gets 48 KiB of shared memory without opting in to more, on sm_87
// as on sm_90, static arrays included: the GEMV kernels' own (slice and row sums) take
// the last KiB (tests/cuda/check_kernel_resources.py checks the sum).
inline constexpr int kGemvMaxStageBytes = 47 * 1024;

// Whether n_x_rows rows of float x (n_pad values apart) fit a GEMV block's stage.
inline bool gemv_stage_fits(int n_x_rows, int n_pad) {
    return n_pad % 32 == 0 && n_pad <= (1 << 20) && n_x_rows <= kGemvMaxRows &&
           float_stage(n_x_rows, n_pad).bytes <= kGemvMaxStageBytes;
}

// The same for x quantized as it is staged (GemvLaunch::quantize_x): 1.5 bytes a
// value instead of 4.
inline bool gemv_q8_stage_fits(int n_x_rows, int n_pad) {
    return n_pad % 32 == 0 && n_pad <= (1 << 20) && n_x_rows <= kGemvMaxRows &&
           q8_stage(n_x_rows, n_pad).bytes <= kGemvMaxStageBytes;
}

inline constexpr int kGemvMaxTasksInFlight = 4;
inline bool valid_tasks_in_flight(int n) { return n == 1 || n == 2 || n == 4; }
// GemvLaunch::asked_warps_per_row: 0 (the plan's choice) or a power of two up to a block.
inline bool valid_asked_warps_per_row(int n) { return n == 0 || n == 1 || n == 2 || n == 4 || n == kGemvWarps; }

// The 8-bit input of the next GEMV, made by the GEMV that writes its rows
// (GemvLaunch::q8_out: the backend's option prepare=gemv, instead of a prepare launch).
// Per group of 32 rows of output 0: the q8 form (activation.hpp's rule) of y times
// norm_weight (null: of y). The block that stores a group's last rows quantizes it (a
// ticket a group, zero before the launch and put back to zero by it). An RMS norm's scale
// 1/rms(y) is left out: it multiplies the whole row alike, so the bytes do not depend on
// it (up to rounding); the block that quantizes the last group (one more ticket) writes
// it to norm_scale from the groups' sums of y^2, and the reading GEMV multiplies its
// dots by it (Activation::norm_scale).
struct Q8Out {
    uint8_t* q = nullptr;  // the rows rounded up to 32, the tail zero
    Words2* segments = nullptr;  // a word pair a segment of 16 (q8_segment_words)
    const float* norm_weight = nullptr;
    float* norm_scale = nullptr;  // with an RMS norm after y: its scale, else null
    float norm_eps = 0.0f;
    float* sums = nullptr;        // with norm_scale: a sum of squares a group
    int32_t* tickets = nullptr;   // a counter a group, one more with norm_scale
};

// Several outputs sharing one input in one launch; their weight types may differ
// (Q/K/V of Q4_K_M: Q4_K, Q4_K, Q6_K). Every output's row length equals x.n.
struct GemvLaunch {
    Activation x{};
    // Rows of x, 1..kGemvMaxRows. Row r of x lies r * x.n_pad values after row 0 in x.f and
    // x.q8.q (r * x.n_pad / 16 word pairs in x.q8.segments). One row takes the one-row
    // kernel; several the multi-row kernel, which dequantizes each weight once for all of
    // them and gives every row the one-row kernel's sum (the same tasks, lanes and order).
    // Store only.
    int32_t n_x_rows = 1;
    GemvOutput out[kMaxGemvOutputs];
    int32_t n_outputs = 0;
    int32_t epilogue = kEpilogueStore;
    // 1: float activations are copied into each block's shared memory first, when they fit
    // (kGemvMaxStageBytes); 0: always read in place (the backend's option stage_x=0, to
    // compare the two). The results are the same.
    int32_t stage_x = 1;
    // 1: each warp first asks L2 for the weight bytes its rows will read (every plane),
    // before the staging of x and before waiting for the previous launch (gemv.cu), so the
    // weights' DRAM latency overlaps both; 0: not (the backend's option prefetch=0, to
    // compare). The results are the same.
    int32_t prefetch = 1;
    // 1: x.f is quantized to 8 bits per 32 values (the q8 rule, activation.hpp) by each
    // block as it stages it, and dotted by dp4a, with a fused norm if x.norm: the
    // backend's activations=q8 without a prepare launch. x.q8 must be null, every output
    // quantized, and the stage must fit (gemv_q8_stage_fits); stage_x is not consulted.
    // Without a norm the bytes and scales are prepare's, so are the sums.
    int32_t quantize_x = 0;
    // Rows each warp of the one-row kernel takes, one after another (1..kGemvMaxRowsPerWarp),
    // so that a block's staging of x serves that many more rows. 0: plan_gemv chooses
    // (choose_rows_per_warp, for quantize_x; 1 otherwise); else kept (the backend's option
    // gemv_rows_per_warp=N, to compare). The multi-row kernel, rows split across warps,
    // prepared 8-bit x (nothing staged for the rows to share) and q8_out take 1 (gemv.cu:
    // the row loop has no code for the last two, which made ptxas spill there).
    int32_t rows_per_warp = 0;
    // Tasks of weights each lane of the one-row kernel loads before it dots the first of
    // them (row_slice_dot's kInFlight: 1, 2 or 4): more loads waiting on DRAM at once, for
    // more registers (two or four: two blocks an SM instead of three). The backend's
    // option gemv_tasks_in_flight=N, to compare; a launch of several rows a warp or of
    // several rows of x takes 1. The results are the same.
    int32_t tasks_in_flight = 1;
    // 1: with one task in flight, each lane's first task of weights is loaded before the
    // wait for the previous launch and the staging of x (as two or four in flight always
    // do), so that its DRAM latency overlaps them; the same 80 registers. The backend's
    // option gemv_load_ahead=1, to compare; one row of x and a row a warp only. The results
    // are the same.
    int32_t load_ahead = 0;
    // 1: the default one-row form runs the kernel built for the launch's weight type where
    // it has one (gemv.cu, gemv_kernel_for); 0: the kernel of every type. With 1, that
    // kernel's blocks an SM: 3 (80 registers) or 4 (64). The backend's option
    // gemv_kernels=generic|typed|typed_4_blocks, to compare. The results are the same.
    int32_t typed_kernel = 0;
    int32_t typed_blocks_per_sm = 3;
    // Rows walked in pairs by each lane of the one-row kernel (row_pair_slice_dot: one
    // chain of loads for both rows, 8-bit x read once for both). swiglu_pairs: SwiGLU's
    // gate and up rows; row_pairs: each warp takes two rows of its output, first_row and
    // first_row + the block's warps' rows, so a launch has half as many warps (Q/K/V,
    // output and down projections fit in one wave of an H100's). Both where x is 8-bit,
    // the matrices quantized (both of SwiGLU's of one type), and a warp takes a row with
    // one task in flight; plan_gemv sets them to 0 elsewhere, row_pairs also for SwiGLU.
    // The backend's option gemv_pairs=none|swiglu|all (`all` by default). The results are
    // the same.
    int32_t swiglu_pairs = 0;
    int32_t row_pairs = 0;
    // Tasks of both rows each lane of a pair has on their way into shared memory while it
    // dots one (task_ring.cuh): 0 (none: loads into registers, a task at a time), 2 or 3.
    // With pairs, prepared 8-bit x and no stage only; plan_gemv lowers it to what fits a
    // block's 48 KB of shared memory (ring_bytes) and sets it to 0 elsewhere. The backend's
    // option gemv_ring=0|2|3. The results are the same.
    int32_t ring_depth = 0;
    int32_t ring_slot_bytes = 0;  // filled by plan_gemv: the largest ring_slot_bytes of the outputs' types
    // Warps that share each row (split-K inside a block: 1, 2, 4 or 8). 0: plan_gemv
    // chooses (choose_warps_per_row: split only when there are too few rows to fill the
    // GPU); else kept (the backend's option gemv_warps_per_row=N, to compare: more warps a
    // row are shorter chains of loads a lane, and fewer rows a block). Sums are reduced
    // in another order, so results differ by float rounding.
    int32_t asked_warps_per_row = 0;
    // With these counters (one a head: the n_head query heads, then the KV heads; zero
    // before the first launch and again after each), outputs 0, 1 and 2 are q, k and v of
    // one token (rope_append.q, .k, .v), and the block that stores the last rows of a head
    // does rope_append's work for it (rope_append.cuh): the backend's option
    // rope_append=gemv, one launch fewer a layer. One row of x and the store epilogue only.
    int32_t* rope_append_tickets = nullptr;
    RopeAppendParams rope_append{};
    // With q8_out.q, output 0 (the one output, or SwiGLU's) is also written as the next
    // GEMV's 8-bit x (Q8Out). One row of x; an F32 output; not with rope_append_tickets.
    Q8Out q8_out{};
    // Filled by launch_gemv: split-K width, the first block of each output, the shared
    // memory the staged rows of x take (0: read in place), and a block's dynamic shared
    // memory: the stage, or rope_append's (after the stage's last use) if that is more.
    int32_t warps_per_row = 1;
    int32_t block_begin[kMaxGemvOutputs + 1] = {0, 0, 0, 0, 0};
    int32_t x_stage_bytes = 0;
    int32_t shared_bytes = 0;
};


// Shared memory of a block's rings of tasks (GemvLaunch::ring_depth): each warp's `depth`
// pairs of slots.
inline int ring_bytes(int depth, int slot_bytes) { return kGemvWarps * 2 * depth * slot_bytes; }
inline constexpr int kGemvMaxRingBytes = 48 * 1024;  // a block's without an opt-in attribute
inline bool valid_ring_depth(int depth) { return depth == 0 || depth == 2 || depth == 3; }

// The Q/K/V launch that does rope_append's work (GemvLaunch::rope_append_tickets): its
// outputs are rope_append's q, k and v, floats without a residual, a head's rows each.
inline bool valid_gemv_rope_append(const GemvLaunch& launch) {
    const RopeAppendParams& r = launch.rope_append;
    if (!valid_rope_append(r) || launch.n_outputs != 3 || launch.epilogue != kEpilogueStore || launch.n_x_rows != 1)
        return false;
    const void* ys[3] = {r.q, r.k, r.v};
    const int64_t rows[3] = {int64_t(r.n_head) * r.rope.head_dim, int64_t(r.cache.n_head_kv) * r.rope.head_dim,
                             int64_t(r.cache.n_head_kv) * r.rope.head_dim};
    for (int i = 0; i < 3; ++i) {
        const GemvOutput& o = launch.out[i];
        if (o.y != ys[i] || o.y_is_f16 || o.residual || o.w.n_rows != rows[i]) return false;
    }
    return true;
}

// The launch that also makes the next GEMV's 8-bit x (GemvLaunch::q8_out).
inline bool valid_gemv_q8_out(const GemvLaunch& launch) {
    const Q8Out& q = launch.q8_out;
    const bool one_output = launch.n_outputs == 1 && launch.epilogue == kEpilogueStore;
    return q.q && q.segments && q.tickets && (!q.norm_scale || q.sums) && (one_output || launch.epilogue == kEpilogueSwiGLU) &&
           launch.n_x_rows == 1 && !launch.out[0].y_is_f16 && !launch.rope_append_tickets;
}

// Validates a GEMV launch and fills warps_per_row and block_begin for a device with
// n_sms multiprocessors; returns the number of blocks, 0 when the launch is invalid.
inline int plan_gemv(GemvLaunch& launch, int n_sms) {
    const bool swiglu = launch.epilogue == kEpilogueSwiGLU;
    if (launch.n_outputs < 1 || launch.n_outputs > kMaxGemvOutputs || (swiglu && launch.n_outputs != 2) ||
        (launch.epilogue != kEpilogueStore && !swiglu) || launch.x.n <= 0 || launch.n_x_rows < 1 ||
        launch.n_x_rows > kGemvMaxRows || (swiglu && launch.n_x_rows != 1))
        return 0;
    int64_t total_rows = 0;
    int min_tasks = 1 << 30;
    bool any_plain = false;
    for (int i = 0; i < launch.n_outputs; ++i) {
        const PackedMatrix& w = launch.out[i].w;
        const PlaneGeometry g = plane_geometry(w.type);
        any_plain = any_plain || plain_value_bytes(w.type) != 0;
        if (g.n_planes == 0 || w.n_cols != launch.x.n || w.n_rows <= 0 || !launch.out[i].y || !w.plane[0])
            return 0;
        if (swiglu && w.n_rows != launch.out[0].w.n_rows) return 0;
        if (launch.n_x_rows > 1 && launch.out[i].y_row_stride < w.n_rows) return 0;
        min_tasks = std::min(min_tasks, w.blocks_per_row * (g.block_elems / 32));
        total_rows += w.n_rows;
    }
    // SwiGLU: one range of blocks over the gate rows; each also computes the up row.
    // warps_per_row depends on the matrices only, never on n_x_rows: the multi-row kernel's
    // sums then split and reduce as the one-row kernel's do.
    const int n_ranges = swiglu ? 1 : launch.n_outputs;
    const bool reads_float_x = !launch.x.q8.q || any_plain;  // plain types read float x in any case
    if (!valid_asked_warps_per_row(launch.asked_warps_per_row)) return 0;
    launch.warps_per_row = launch.asked_warps_per_row
                               ? launch.asked_warps_per_row
                               : choose_warps_per_row(swiglu ? total_rows / 2 : total_rows, min_tasks, n_sms);
    bool stage = false;
    if (launch.quantize_x) {
        if (launch.x.q8.q || !launch.x.f || any_plain || !gemv_q8_stage_fits(launch.n_x_rows, launch.x.n_pad)) return 0;
        stage = true;
        launch.x_stage_bytes = q8_stage(launch.n_x_rows, launch.x.n_pad).bytes;
    } else {
        stage = launch.stage_x && reads_float_x && gemv_stage_fits(launch.n_x_rows, launch.x.n_pad);
        launch.x_stage_bytes = stage ? float_stage(launch.n_x_rows, launch.x.n_pad).bytes : 0;
    }
    if (launch.rope_append_tickets && !valid_gemv_rope_append(launch)) return 0;
    if (launch.q8_out.q && !valid_gemv_q8_out(launch)) return 0;
    // x.q8 without its norm's scale: every output must read it (no float x, no stage).
    if (launch.x.norm_scale && (reads_float_x || launch.x.norm || launch.n_x_rows != 1 || launch.quantize_x)) return 0;
    if (launch.rows_per_warp < 0 || launch.rows_per_warp > kGemvMaxRowsPerWarp) return 0;
    if (!valid_tasks_in_flight(launch.tasks_in_flight)) return 0;
    if (launch.n_x_rows > 1) {  // the multi-row kernel's own loop
        launch.tasks_in_flight = 1;
        launch.load_ahead = 0;
    }
    if (launch.tasks_in_flight > 1) launch.load_ahead = 0;  // they load ahead in any case
    if ((launch.tasks_in_flight > 1 || launch.load_ahead) && launch.rows_per_warp > 1) return 0;  // no such kernel
    if (launch.warps_per_row > 1 || launch.n_x_rows > 1 || launch.tasks_in_flight > 1 || launch.load_ahead ||
        launch.x.q8.q || launch.q8_out.q) {
        launch.rows_per_warp = 1;
    } else if (launch.rows_per_warp == 0) {
        int64_t rows[kMaxGemvOutputs] = {};
        for (int i = 0; i < n_ranges; ++i) rows[i] = launch.out[i].w.n_rows;
        // A float copy is cheap beside the float loop; its launches keep a row a warp
        // (all the SM's warp slots) until a GPU says that sharing it pays.
        const double stage_cost = launch.quantize_x ? kGemvQuantizeStageCost : 0.0;
        launch.rows_per_warp = choose_rows_per_warp(rows, n_ranges, kGemvBlocksPerSm, n_sms, stage_cost);
    }
    const bool pairs_possible = (launch.x.q8.q || launch.quantize_x) && !any_plain && launch.n_x_rows == 1 &&
                                launch.rows_per_warp == 1 && launch.tasks_in_flight == 1 && !launch.load_ahead;
    launch.swiglu_pairs = launch.swiglu_pairs && pairs_possible && swiglu && launch.out[1].w.type == launch.out[0].w.type;
    launch.row_pairs = launch.row_pairs && pairs_possible && !swiglu;
    if (!valid_ring_depth(launch.ring_depth)) return 0;
    launch.ring_slot_bytes = 0;
    if ((launch.swiglu_pairs || launch.row_pairs) && launch.x.q8.q && !stage)
        for (int i = 0; i < launch.n_outputs; ++i)
            launch.ring_slot_bytes = std::max(launch.ring_slot_bytes, ring_slot_bytes(launch.out[i].w.type));
    while (launch.ring_depth > 0 && ring_bytes(launch.ring_depth, launch.ring_slot_bytes) > kGemvMaxRingBytes)
        --launch.ring_depth;
    if (launch.ring_depth < 2 || launch.ring_slot_bytes == 0) launch.ring_depth = launch.ring_slot_bytes = 0;
    const int rows_per_block = kGemvWarps / launch.warps_per_row * launch.rows_per_warp * (launch.row_pairs ? 2 : 1);
    launch.block_begin[0] = 0;
    for (int i = 0; i < kMaxGemvOutputs; ++i) {
        const int rows = launch.out[i].w.n_rows;
        int blocks = i < n_ranges ? (rows + rows_per_block - 1) / rows_per_block : 0;
        if (i < n_ranges && planted(PlantedFault::GemvRowTail)) blocks = std::max(1, rows / rows_per_block);
        launch.block_begin[i + 1] = launch.block_begin[i] + blocks;
    }
    if (launch.x.norm && (!stage || launch.n_x_rows != 1 || launch.x.q8.q || launch.x.n != launch.x.n_pad)) return 0;
    launch.shared_bytes = std::max(launch.x_stage_bytes, ring_bytes(launch.ring_depth, launch.ring_slot_bytes));
    if (launch.rope_append_tickets) launch.shared_bytes = std::max(launch.shared_bytes, kRopeAppendSharedBytes);
    return launch.block_begin[n_ranges];
}

// ----------------------------------------------------------- small kernels --

// Row r of out (n_cols floats, r < n_tokens) = row token[r] of a weight, dequantized
// exactly as blocks.hpp does; a token outside [0, n_rows) gives zeros. The weight is read
// from `packed` (the GEMV layout, any GEMV type: a weight that is also a matrix is held
// once) when it is set, else from `table`, its GGUF bytes (any type blocks.hpp decodes).
struct EmbedParams {
    int32_t type = 0;
    int32_t n_rows = 0;
    int32_t n_cols = 0;
    PackedMatrix packed{};
    const void* table = nullptr;
    int64_t row_bytes = 0;  // of the table
    const int32_t* token = nullptr;
    int32_t n_tokens = 1;
    float* out = nullptr;
};

// The per-step counters a captured decode step reads, advanced on the device.
struct StepCounters {
    int32_t pos;     // position of the token being decoded
    int32_t kv_len;  // pos + 1 once its K/V are appended
    int32_t token;   // its id
};
// pos += 1, kv_len = pos + 1 (the token is left to the sampler).

// ------------------------------------------------------------------ device --


}  // namespace edgerun::cuda_orin
