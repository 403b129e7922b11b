// Which nodes of a graph cuda_orin runs inside the launch of another node. A fused node is
// not launched: its work is done by its absorber, saving a launch and a round trip of its
// result through memory.
//   - GEMV epilogues: a MATMUL runs with the one node that consumes its result, a residual
//     ADD (added to each output) or a SWIGLU of its gate/up pair.
//   - GEMV prologue: a one-row MATMUL, MATMUL_MULTI or LOGITS normalises its own input,
//     doing the whole-row RMS_NORM before it (while staging x, or in `prepare`).
//   - 8-bit x: a one-row GEMV whose input (before its norm, if it absorbs one) another
//     GEMV writes, through its epilogue or as its one product, and no other GEMV reads,
//     can take that input's 8-bit form from the writer's launch instead of `prepare`'s.
//   - Decode attention: the ROPEs of q and k and Qwen3's per-head RMS_NORMs before them run
//     in one rope_append launch with the KV append, q rotated in place; or (option
//     rope_append=gemv) in the launch of the Q/K/V MATMUL_MULTI whose three outputs are
//     the attention's q, k and v before them.
// Every pattern keeps its unfused path: Plan launches the absorbed nodes whenever the step
// does not take the fused form (the GEMM path for long steps; SwiGLU, the norm and the
// attention fusion only for one-row steps; option fuse=0).
#pragma once

#include <edgerun/abi.h>

#include <cstdint>
#include <vector>

namespace edgerun::cuda_orin {

// Per MATMUL / MATMUL_MULTI / LOGITS node.
struct GemvFusion {
    enum Kind { kNone, kResidual, kSwiGLU };
    Kind kind = kNone;      // the epilogue
    int32_t consumer = -1;  // the ADD or SWIGLU node the GEMV absorbs
    int32_t residual = -1;  // kResidual: the ADD's other input, added to each output
    int32_t norm = -1;      // the RMS_NORM node whose work the GEMV's input does, or -1
    int32_t rope_append = -1;  // the ATTENTION whose rope_append work this Q/K/V GEMV can do, or -1
    // The 8-bit x of a GEMV made by the GEMV that writes it (option prepare=gemv): the
    // GEMV this one's launch can make it for, and the buffers' slot (0 or 1: a reader's
    // slot is never written again before it has read it); the GEMV that can make this
    // one's. -1: none.
    int32_t q8_reader = -1, q8_slot = -1, q8_maker = -1;
    // The ATTENTION whose merge can make this GEMV's 8-bit x (option merge_q8), or -1.
    int32_t q8_merge = -1;
};

// Per ATTENTION node (q_rope < 0: nothing fused).
struct AttentionFusion {
    int32_t q_rope = -1, k_rope = -1;  // the ROPE nodes giving the attention its q and k
    int32_t q_norm = -1, k_norm = -1;  // per-head RMS_NORMs before them, or -1
    int32_t q = -1, k = -1;            // the values rope_append reads (q: rotated in place)
    int32_t qkv = -1;                  // the MATMUL_MULTI whose outputs 0, 1, 2 are q, k and v, or -1
    // The GEMV (MATMUL or MATMUL_MULTI) that alone reads the output, with no norm fused into
    // its input and no GEMV between the two, whose 8-bit x the merge can make (option
    // merge_q8), or -1. Set whether or not anything above is fused.
    int32_t q8_reader = -1;
};

struct Fusions {
    std::vector<GemvFusion> gemv;            // per node
    std::vector<AttentionFusion> attention;  // per node
    std::vector<int32_t> absorbed_by;        // per node: the node doing its work when fused, or -1
};

// A node is absorbed only when the value it hands on is read by its absorber's chain alone
// (and not by the host), and what the absorber reads instead exists before it runs. q is
// rotated in place, so the value it comes from must have no other reader either.
Fusions find_fusions(const er_graph& graph);

// last_use (per value, the last node that reads it) with what each absorber reads in place
// of the absorbed nodes' results kept alive up to the absorber (the fused launch may also
// write the consumer's output, which must not take an input's memory while it is read).
std::vector<int32_t> extend_fused_lifetimes(const er_graph& graph, const Fusions& fusions,
                                            std::vector<int32_t> last_use);

}  // namespace edgerun::cuda_orin
