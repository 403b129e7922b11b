// The objects behind cpu_ref's opaque handles. Lifetimes nest as the ABI requires:
// a backend outlives its models, a model its contexts, a context its plans.
#pragma once

#include "kernels.hpp"
#include "kv_cache.hpp"
#include "thread_pool.hpp"
#include "weights.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace edgerun::cpu_ref {

struct Backend {
    Isa isa = Isa::Generic;
    std::unique_ptr<ThreadPool> pool;
};

struct Model {
    Backend* backend = nullptr;
    std::vector<WeightRef> weights;
    uint64_t weights_bytes = 0;
};

struct Context {
    Model* model = nullptr;
    er_context_params params{};
    std::unique_ptr<KvCache> kv;
    // Positions [0, n_filled) of the cache hold data from earlier steps; a step may start
    // anywhere up to there (rewinding) but not past it.
    int32_t n_filled = 0;
    std::atomic<uint64_t> scratch_bytes{0};
    std::mutex step_mutex;  // one step at a time: steps of any plan write the same cache
};

}  // namespace edgerun::cpu_ref
