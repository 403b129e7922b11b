// --trace: every op of one decode step with the weight it reads (GGUF type id and name,
// M outputs, K inputs, bytes), then the totals, in the style of the GEMV traces people
// already read ("[GEMV #0] type=12 M=2560 K=2560").
#pragma once

#include <edgerun/graph.hpp>

#include <cstdio>

namespace edgerun::cli {

void print_decode_trace(std::FILE* out, const Graph& decode, const WeightTable& weights, int64_t kv_len,
                        int32_t kv_type);

}  // namespace edgerun::cli
