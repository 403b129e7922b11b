// The backend's own threads. run() hands out task indices [0, n) to the calling thread
// and the workers and returns when all are done; which thread runs a task never
// changes its result (tasks write disjoint outputs), which is what makes results the
// same for every thread count. Dispatch allocates nothing: the task is passed by
// reference, workers spin briefly for the next dispatch and then sleep on a futex.
//
// The caller never waits for a worker that has not started: workers join a job while
// it is open, the caller closes it once no task is left and waits only for those that
// joined. On a machine busy with other work a descheduled worker therefore costs
// nothing; the caller simply runs the tasks itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace edgerun::cpu_ref {

class ThreadPool {
public:
    // n_threads counts the calling thread; <= 0 means std::thread::hardware_concurrency().
    // Throws sdk::Failure when the system cannot start that many threads.
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Calls task(index, thread) for every index in [0, n_tasks); thread is in
    // [0, size()) and identifies per-thread scratch. One run at a time per pool
    // (concurrent callers wait their turn).
    template <typename Task>
    void run(int64_t n_tasks, Task&& task) {
        if (n_tasks <= 0) return;
        if (n_threads_ == 1 || n_tasks == 1) {
            for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
            return;
        }
        using Body = std::remove_reference_t<Task>;
        dispatch(n_tasks, [](void* ctx, int64_t i, int thread) { (*static_cast<Body*>(ctx))(i, thread); },
                 const_cast<void*>(static_cast<const void*>(&task)));
    }

private:
    using TaskFn = void (*)(void* ctx, int64_t index, int thread);

    void dispatch(int64_t n_tasks, TaskFn fn, void* ctx);
    void stop_workers();
    void worker_main(int thread);
    void work(int thread);
    bool join();  // a worker enters the current job unless it is closed

    int n_threads_;
    std::vector<std::thread> workers_;
    std::mutex run_mutex_;

    // The current job, published by bumping generation_.
    TaskFn fn_ = nullptr;
    void* ctx_ = nullptr;
    int64_t n_tasks_ = 0;
    alignas(64) std::atomic<int64_t> next_task_{0};
    alignas(64) std::atomic<uint32_t> generation_{0};
    // Workers that joined the current job, with kClosed set once it takes no more.
    alignas(64) std::atomic<uint32_t> joined_{0};
    alignas(64) std::atomic<uint32_t> finished_{0};
    static constexpr uint32_t kClosed = 1u << 31;
    std::atomic<bool> stop_{false};
};

}  // namespace edgerun::cpu_ref
