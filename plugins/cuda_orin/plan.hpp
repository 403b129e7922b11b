// A compiled graph on the device: every node checked (edgerun/graph_check.hpp) and turned
// into kernel launches, every value given device memory (values whose lifetimes do not
// overlap share it), all scratch allocated here. A step copies its per-row table into
// device memory, launches (or replays a captured step of the same shape) and
// synchronizes; it allocates nothing.
#pragma once

#include "backend.hpp"
#include "fusion.hpp"

#include <functional>
#include <memory>
#include <vector>

namespace edgerun::cuda_orin {

// Attention goes to the split flash-decode kernel (every row of any step) for the head
// dims it is built for over F16 or INT8 caches; an F32 cache (a debugging choice, twice
// the bytes of F16) and other head dims take the general row kernel.
inline bool takes_split_attention(const er_attention_params& a, int32_t kv_type) {
    static_assert(int(ER_KV_F16) == int(kKvF16) && int(ER_KV_Q8) == int(kKvQ8));
    return split_attention_supports(a.head_dim_k, kv_type);
}

// One slot of 8-bit x handed between one-row GEMVs (option prepare=gemv; Q8Out), for rows
// of n_pad values: the bytes, then a word pair per 16 values (q8_segment_words), then a
// sum of squares per 32, then the norm's scale (16 bytes kept for it). Byte offsets, and
// the slot's size.
struct Q8SlotLayout {
    int64_t segments, sums, norm_scale, bytes;
};

inline Q8SlotLayout q8_slot_layout(int64_t n_pad) {
    const int64_t segments = n_pad, sums = segments + n_pad / 16 * int64_t(sizeof(Words2));
    const int64_t norm_scale = sums + n_pad / 32 * 4;
    return {segments, sums, norm_scale, norm_scale + 16};
}

class Plan {
public:
    Plan(Context& ctx, const er_graph& graph);  // throws sdk::Failure
    ~Plan();
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;

    void set_input(int32_t value, const void* data, int64_t n_rows);
    void execute(const er_step& step);
    void get_output(int32_t value, float* dst, int64_t n_rows);
    uint64_t scratch_bytes() const { return scratch_bytes_; }

private:
    struct Value {
        int32_t type = ER_VALUE_F32;
        uint32_t flags = 0;
        int64_t width = 0;
        float* f32 = nullptr;    // device: max_tokens rows
        int32_t* i32 = nullptr;  // device: max_tokens rows (token ids)
        int32_t rows = 0;
    };

    // Shares value buffers by lifetime; refuses, before allocating, when they and the
    // plan's fixed scratch do not fit. *optional_scratch (bytes the plan can run without)
    // is set to 0 when only it does not fit.
    void assign_buffers(const er_graph& graph, const std::vector<int32_t>& last_use, uint64_t fixed_scratch,
                        uint64_t* optional_scratch);
    void read_rows(const er_step& step);
    uint64_t counted_bytes() const;  // the context, GEMM, weights, KV cache and scratch
    void report_memory() const;
    void launch_all(int32_t n);
    void launch_node(size_t index, int32_t n);
    void launch_matmul(size_t index, int32_t n);
    bool takes_gemm(int32_t n) const;  // a step of n rows multiplies through the GEMM path
    // Whether, in a step of n rows, node `index`'s work is done inside its absorber's launch.
    bool absorbed(size_t index, int32_t n) const;
    bool epilogue_fused(size_t matmul, int32_t n) const;  // the MATMUL at `matmul` runs with its consumer
    const float* norm_fused(size_t matmul, int32_t n, float* eps) const;  // its RMS_NORM's weight, or null
    bool rope_append_fused(size_t attention, int32_t n) const;
    // Whether that work is done by the attention's Q/K/V GEMV (option rope_append=gemv).
    bool rope_append_in_gemv(size_t attention, int32_t n) const;
    RopeAppendParams rope_append_params(size_t attention) const;
    // KV splits of the split attention in a step of n rows: the rows share the splits a
    // decode step takes, so the workspace stays within n_splits_ + max_tokens_ per head.
    int32_t attention_splits(int32_t n) const { return std::max(1, (n_splits_ + n - 1) / n); }
    // Whether a step of n rows takes the tiled attention (option tiled_attention), in how
    // many tiles at most (its grid) and KV splits.
    bool takes_tiled_attention(int32_t n) const;
    int32_t attention_tiles(int32_t n) const { return max_attention_tiles(n, ctx_.n_seqs, rows_per_tile_); }
    int32_t tiled_splits(int32_t n) const;
    // K/V tiles in flight in its blocks over a cache of this type (option
    // tiled_attention_stages, or the backend's choice per type).
    int32_t tile_stages(int32_t kv_type) const;
    // Whether the step's n rows are all of one sequence (a prompt chunk), and whether the
    // tiled attention of such a step reads an INT8 cache widened to halves first (option
    // widen_kv=1; widened_kv_).
    bool rows_of_one_sequence(int32_t n) const;
    bool widens_kv(const KvCacheLayer& cache, int32_t n) const;
    // x: the step's rows, floats (row stride width) or, for F16 GEMMs, halves (dense).
    void matmul_by_gemm(const void* x, int64_t width, const DeviceWeight& w, const float* bias, float* out, int32_t n);
    void launch_logits(size_t index, int32_t n);
    RopeConfig rope_config(const er_node& rope) const;
    void launch_attention(size_t index, int32_t n);
    // What a GEMV multiplies: rows of x, normalised first when norm is given (a fused
    // RMS_NORM's weight).
    struct GemvInput {
        const float* x = nullptr;
        int64_t width = 0;
        const float* norm = nullptr;
        float norm_eps = 0.0f;
    };
    GemvInput gemv_input(size_t matmul, int32_t n) const;
    // 8-bit x handed between one-row GEMVs (option prepare=gemv): the launch makes its
    // reader's (`out`), and reads its own from its maker (`in`) instead of a prepare's.
    struct GemvQ8Handoff {
        bool makes = false, reads = false;
        Q8Out out, in;
    };
    GemvQ8Handoff q8_handoff(size_t gemv, int32_t n) const;
    // Option merge_q8=1: whether, in a step of n rows, ATTENTION node `attention`'s merge
    // writes the 8-bit x of its output's reader (AttentionFusion::q8_reader) into act_q_'s
    // first slot, which that GEMV then reads instead of a prepare's.
    bool merge_makes_q8(size_t attention, int32_t n) const;
    // residual: added to output 0 (rows of its width); epilogue: GemvLaunch's.
    void gemv_rows(const GemvInput& in, const std::vector<const DeviceWeight*>& weights,
                   const std::vector<const float*>& biases, const std::vector<float*>& outs, int32_t n_rows,
                   const int32_t* row_index, const float* residual, int32_t epilogue,
                   const RopeAppendParams* rope_append, const GemvQ8Handoff& handoff);
    const DeviceWeight& weight(int32_t index) const { return ctx_.model->weights[size_t(index)]; }
    // Whether a GEMV launch of these outputs reads 8-bit x (activations=q8; its plain
    // weights read float x whatever this says).
    bool reads_q8_x(const std::vector<const DeviceWeight*>& weights) const;
    // Whether GEMV node `gemv`'s launch reads 8-bit x and nothing else (no plain weight,
    // which reads float x): a launch whose x another launch can make.
    bool reads_only_q8_x(size_t gemv) const;
    // Option prepare=gemv: whether, in a step of n rows, GEMV `maker`'s launch makes the
    // 8-bit x of its q8_reader (fusion.hpp), which then takes it instead of a prepare's.
    bool q8_handed(size_t maker, int32_t n) const;
    // The buffers of maker's slot, with its reader's norm weight (and the sums and the scale
    // they make) if it has one.
    Q8Out q8_slot(size_t maker, int32_t n) const;

    Context& ctx_;
    Device& device_;
    int32_t max_tokens_ = 1;
    bool has_attention_ = false;
    bool stepped_ = false;
    std::vector<er_node> nodes_;
    Fusions fusions_;  // fusion.hpp
    std::vector<Value> values_;
    std::vector<std::vector<int32_t>> host_ids_;  // token ids as set, for the range check
    std::vector<DeviceBuffer> buffers_;
    // The step's rows: host copies and the device table (seq, pos, kv_len per row).
    std::vector<int32_t> row_seq_, row_pos_, logit_rows_;
    int32_t n_logit_rows_ = 0;
    // Cache positions the step's attention reads, each once: per sequence, up to its last
    // row (read_rows; the launch profile's bytes only).
    int64_t positions_read_ = 0;
    // The per-step table (ints), host copy and row_table_ alike: seq, pos and kv_len of
    // max_tokens_ rows, then the tiled attention's tile rows (max_tokens_) and (first,
    // count) pairs of max_tiles_ tiles (fill_attention_tiles).
    enum RowTablePart { kRowSeq, kRowPos, kRowKvLen, kTileRows, kTiles };
    size_t row_table_at(RowTablePart part) const { return size_t(part) * size_t(max_tokens_); }
    size_t row_table_ints() const { return row_table_at(kTiles) + 2 * size_t(max_tiles_); }
    DeviceBuffer row_table_;
    DeviceRows device_rows_{};
    // rows_per_tile_: for the widest query-head group of the graph's attention; 0 when
    // some attention cannot take the tiled kernel.
    const int32_t* device_tile_rows_ = nullptr;
    const int32_t* device_tiles_ = nullptr;
    int32_t rows_per_tile_ = 0, max_tiles_ = 0;
    // GEMV input: the q8 and float forms of up to gemv_slots_ rows (prepare's outputs),
    // n_pad apart; one GEMV launch multiplies them all.
    DeviceBuffer act_f_, act_q_, act_segments_;
    // Option prepare=gemv: two slots of a GEMV's 8-bit x made by the GEMV before it
    // (q8_slot_layout), and a ticket per 32 rows and one more.
    DeviceBuffer q8_slots_[2], q8_tickets_;
    // With activations=q8, GEMV launches of fewer outputs than this still read float x.
    // Such a launch is a few blocks, bound by latency, not by the bytes that 8-bit x saves;
    // and its few outputs are where one dot product's 8-bit rounding shows (a one-output
    // matrix missed the suite's NMSE bound at 2.3e-3). Model matrices have hundreds of rows.
    static constexpr int64_t kQ8ActivationsMinRows = 32;
    int32_t gemv_slots_ = 1;
    int64_t max_gemv_width_ = 0;
    // Attention scratch: the split kernel's partials and merge tickets, the row kernel's
    // scores; the Q/K/V GEMV's tickets for rope_append=gemv (one a head).
    DeviceBuffer split_workspace_, merge_tickets_, scores_, rope_append_tickets_;
    // Option widen_kv=1: one layer's K and V of one sequence as halves (WidenKvParams),
    // made anew by every layer's widen_kv launch; none without the option, an INT8 cache
    // and steps that take the tiled attention.
    DeviceBuffer widened_kv_;
    // The matrix-matrix path's tile of dequantized weight rows (none: steps keep the GEMV).
    static constexpr int64_t kGemmTileRowMultiple = 128;  // matmul_by_gemm's tiles after the first
    uint64_t gemm_tile_values_ = 0;
    DeviceBuffer gemm_tile_;
    DeviceBuffer gemm_x_;  // F16 GEMMs: the step's rows of x as halves
    int32_t n_splits_ = 1;
    uint64_t scratch_bytes_ = 0;
    // Captured steps (CUDA Graphs), one per step shape: a step whose key (step_key) equals
    // a captured one's replays it. At most kMaxCapturedShapes are kept, the least recently
    // used dropped: a plan's steady shapes (the decode step, a batch's decode step of k
    // sequences, a verification step) stay while one-off shapes (a prompt's last chunk)
    // pass through. A shape is captured the first time it is seen, so a decode step is
    // replayed from its first occurrence. A failed capture turns capture off for the plan.
    // How the plan's steps ran is reported when it ends (a silent fallback would look the
    // same as a replay).
    struct StepKey {
        int32_t rows = 0;
        std::vector<int32_t> logit_rows;
        bool one_sequence = true;  // rows_of_one_sequence: whether a tiled attention widens the cache
        bool operator==(const StepKey&) const = default;
    };
    struct CapturedShape {
        StepKey key;
        std::unique_ptr<CapturedStep> step;
        int64_t kernels = 0;  // what a replay launches
        uint64_t last_used = 0;
    };
    static constexpr size_t kMaxCapturedShapes = 8;
    StepKey step_key(int32_t n) const;
    // The captured step for this step's key, captured now when there is none; null when
    // capture is off or failed (the step is then launched plainly).
    CapturedShape* captured_step(int32_t n);
    std::vector<CapturedShape> captured_;
    bool capture_failed_ = false;
    uint64_t steps_seen_ = 0;  // the clock of last_used
    int64_t replayed_steps_ = 0, launched_steps_ = 0;
    // Kernels launched per step, and per launch kind with option profile=1 (whose steps
    // are launched plainly: per-launch timing inside a captured step would change it).
    LaunchProfile launches_;
};

}  // namespace edgerun::cuda_orin
