// Which MATMUL nodes of a graph cuda_orin runs together with the one node that consumes
// their result, in the same GEMV launch: a residual ADD (the GEMV's residual epilogue)
// or a SWIGLU of a gate/up pair (its SwiGLU epilogue). A fused pair saves a launch and a
// round trip of the product through memory; the consumer node is then not launched.
// Every pattern keeps its unfused path: Plan launches both nodes whenever the step does
// not take the GEMV (the GEMM path for long steps; SwiGLU fuses only one-row steps).
#pragma once

#include <edgerun/abi.h>

#include <cstdint>
#include <vector>

namespace edgerun::cuda_orin {

struct GemvFusion {
    enum Kind { kNone, kResidual, kSwiGLU };
    Kind kind = kNone;
    int32_t consumer = -1;  // the ADD or SWIGLU node the GEMV absorbs
    int32_t residual = -1;  // kResidual: the ADD's other input, added to each output
};

// One entry per node; kNone for nodes that are not fused. A MATMUL is fused when its
// every output is read by that consumer alone (and is not a graph output), and a
// residual is computed before the MATMUL runs.
std::vector<GemvFusion> find_gemv_fusions(const er_graph& graph);

// last_use (per value, the last node that reads it) with each fused MATMUL's input kept
// alive up to its consumer: the fused launch writes the consumer's output, which must not
// take the input's memory while the GEMV still reads it.
std::vector<int32_t> extend_fused_lifetimes(const er_graph& graph, const std::vector<GemvFusion>& fusions,
                                            std::vector<int32_t> last_use);

}  // namespace edgerun::cuda_orin
