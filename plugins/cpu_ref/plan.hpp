// A compiled graph: every node checked against the model and context, every value given
// a buffer (values whose lifetimes do not overlap share one), all scratch allocated.
// Steps then run the ops in order and allocate nothing.
#pragma once

#include "backend.hpp"
#include "ops.hpp"

#include <edgerun/abi.h>

#include <cstdint>
#include <vector>

namespace edgerun::cpu_ref {

class Plan {
public:
    // Throws sdk::Failure naming the node or value at fault.
    Plan(Context& ctx, const er_graph& graph);
    ~Plan();
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;

    er_status set_input(int32_t value, const void* data, int64_t n_rows, er_error* err);
    er_status execute(const er_step& step, er_error* err);
    er_status get_output(int32_t value, float* dst, int64_t n_rows, er_error* err);
    er_status argmax(int32_t value, int32_t* tokens, int64_t n_rows, er_error* err);

    uint64_t scratch_bytes() const { return scratch_bytes_; }

private:
    struct Value {
        int32_t type = ER_VALUE_F32;
        uint32_t flags = 0;
        int64_t width = 0;
        float* f32 = nullptr;    // F32 values: max_tokens rows in the arena
        int32_t* i32 = nullptr;  // I32 values (host inputs only)
        int32_t rows = 0;        // rows the last step left (set_input: rows given)
    };

    struct Op {
        int32_t kind = 0;  // ER_OP_*
        int32_t node = 0;
        int32_t in[3] = {-1, -1, -1};
        int32_t out = -1;
        MatmulOp matmul;   // MATMUL, MATMUL_MULTI, LOGITS
        const WeightRef* weight = nullptr;  // EMBED table, RMS_NORM weight
        er_rms_norm_params norm{};
        int32_t rope = -1;  // index into ropes_
        AttentionOp attention;
    };

    // Fills rows_ (and logit_rows_) from the step and checks them against the context.
    er_status read_rows(const er_step& step, er_error* err);
    void run_logits(const Op& op, int32_t n);

    void compile(const er_graph& graph);
    void assign_buffers(const er_graph& graph);
    void build_ops(const er_graph& graph);

    Context& ctx_;
    Model& model_;
    ThreadPool& pool_;
    int32_t max_tokens_ = 1;
    bool has_attention_ = false;
    bool stepped_ = false;  // a step has run (outputs hold its rows)
    std::vector<Value> values_;
    std::vector<Op> ops_;
    std::vector<RopeTable> ropes_;
    std::vector<float> arena_;
    std::vector<std::vector<int32_t>> int_inputs_;
    // The step's rows (sequence, position) and the rows LOGITS computes, in step order.
    std::vector<int32_t> row_seq_, row_pos_, logit_rows_;
    int32_t n_logit_rows_ = 0;
    std::vector<float> logits_in_;  // LOGITS' input rows gathered when only some ask
    std::vector<float> tiles_;   // per-thread dequantized weight tiles (prefill)
    std::vector<float> decoded_rows_;  // per-thread decoded weight row (steps of 2 to kMaxDotRows rows)
    std::vector<float> scores_;  // per-thread attention scores
    MatmulScratch matmul_scratch_;
    int64_t scores_per_thread_ = 0;
    uint64_t scratch_bytes_ = 0;
};

}  // namespace edgerun::cpu_ref
