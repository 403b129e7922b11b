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

// The most sequences one context holds (er_device_info.max_seqs): only a bound on the
// table sizes; the KV cache of each costs n_ctx positions.
inline constexpr int32_t kMaxSeqs = 64;

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
    // Per sequence: positions [0, n_filled[s]) of its cache hold data from earlier steps;
    // a step may start the sequence anywhere up to there (rewinding) but not past it.
    std::vector<int32_t> n_filled;
    std::vector<int32_t> next_pos;  // per sequence, while a step is checked (-1: no row yet)
    std::atomic<uint64_t> scratch_bytes{0};
    std::mutex step_mutex;  // one step at a time: steps of any plan write the same cache
};

}  // namespace edgerun::cpu_ref
