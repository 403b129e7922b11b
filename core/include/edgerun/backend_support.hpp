// What the runtime asks a backend before handing it a model: whether it runs every op of
// the graphs (and with which weight and KV types), and what each weight is used for.
// Kept apart from the graph builder: the builder says what a model computes, this says
// whether a given backend can compute it.
#pragma once

#include <edgerun/graph.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace edgerun {

class Backend;

// "MATMUL with Q4_K weights", "ATTENTION with an F16 KV cache, head_dim 64", ...
std::string describe_op_query(const er_op_query& query);

// Every (op, weight type) of `graph` the backend says it does not run, as readable lines
// such as "MATMUL with Q4_1 weights"; empty when it runs them all.
std::vector<std::string> unsupported_ops(const Backend& backend, const Graph& graph, const WeightTable& weights,
                                         int32_t kv_type);

// What each weight is used for (abi.h ER_USE_*), gathered over graphs.
std::vector<uint32_t> weight_usage(const WeightTable& weights, std::initializer_list<const Graph*> graphs);

}  // namespace edgerun
