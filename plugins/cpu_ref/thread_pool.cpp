#include "thread_pool.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <string>
#include <system_error>

namespace edgerun::cpu_ref {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// How long an idle worker spins before it sleeps: long enough to catch the next op of
// a step (microseconds away), short enough not to burn a core between requests.
constexpr int kSpinsBeforeSleep = 1 << 16;
// How long the caller spins on stragglers before it starts yielding the core (when the
// machine is oversubscribed a descheduled worker must get to run).
constexpr int kSpinsBeforeYield = 1 << 12;

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = static_cast<int>(std::thread::hardware_concurrency());
    n_threads_ = n_threads < 1 ? 1 : n_threads;
    workers_.reserve(n_threads_ - 1);
    try {
        for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_main(t); });
    } catch (const std::system_error& e) {
        // The OS's thread limit: stop those already started (a joinable std::thread
        // destroyed during unwinding would terminate the process) and say how far it got.
        const size_t started = workers_.size() + 1;
        stop_workers();
        throw sdk::Failure(ER_E_OUT_OF_MEMORY, "could not start " + std::to_string(n_threads_) +
                                                   " threads (the system refused after " + std::to_string(started) +
                                                   ": " + e.what() + "); use fewer --threads");
    }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    for (auto& w : workers_) w.join();
}

void ThreadPool::work(int thread) {
    for (;;) {
        const int64_t i = next_task_.fetch_add(1, std::memory_order_relaxed);
        if (i >= n_tasks_) return;
        fn_(ctx_, i, thread);
    }
}

void ThreadPool::dispatch(int64_t n_tasks, TaskFn fn, void* ctx) {
    std::lock_guard<std::mutex> lock(run_mutex_);
    // No worker is inside a job now (the last one waited for all that joined), so the
    // job fields can be rewritten; opening joined_ with a release store publishes them
    // to any worker that joins, even one still holding an older generation number.
    fn_ = fn;
    ctx_ = ctx;
    n_tasks_ = n_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    finished_.store(0, std::memory_order_relaxed);
    joined_.store(0, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    work(0);
    const uint32_t joined = joined_.fetch_or(kClosed, std::memory_order_acq_rel) & ~kClosed;
    for (int spins = 0; finished_.load(std::memory_order_acquire) != joined; ++spins) {
        if (spins < kSpinsBeforeYield)
            cpu_relax();
        else
            std::this_thread::yield();
    }
}

bool ThreadPool::join() {
    uint32_t state = joined_.load(std::memory_order_relaxed);
    while (!(state & kClosed))
        if (joined_.compare_exchange_weak(state, state + 1, std::memory_order_acquire, std::memory_order_relaxed))
            return true;
    return false;
}

void ThreadPool::worker_main(int thread) {
    uint32_t seen = 0;  // workers start before the first dispatch, at generation 0
    for (;;) {
        uint32_t now = generation_.load(std::memory_order_acquire);
        for (int spins = 0; now == seen && spins < kSpinsBeforeSleep; ++spins) {
            cpu_relax();
            now = generation_.load(std::memory_order_acquire);
        }
        while (now == seen) {
            generation_.wait(seen, std::memory_order_acquire);
            now = generation_.load(std::memory_order_acquire);
        }
        seen = now;
        if (stop_.load(std::memory_order_relaxed)) return;
        if (!join()) continue;  // too late: the caller already did it all
        work(thread);
        finished_.fetch_add(1, std::memory_order_release);
    }
}

}  // namespace edgerun::cpu_ref
