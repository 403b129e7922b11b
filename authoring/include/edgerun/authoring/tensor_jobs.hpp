// What the model writers (synthesize.hpp, requantize.hpp) share: a tensor's rows spread
// over threads, and a progress bar. Ctrl-C stops them through edgerun/interrupt.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace edgerun::authoring {

int default_thread_count();

// Calls work(first_row, end_row) over [0, n_rows) in chunks of `chunk_rows` on up to
// `n_threads` threads (the caller's included). The first exception stops the rest and is
// rethrown; so is an interrupt (InterruptGuard, edgerun/interrupt.hpp).
void parallel_rows(int64_t n_rows, int64_t chunk_rows, int n_threads,
                   const std::function<void(int64_t, int64_t)>& work);

// A one-line bar on stderr when it is a terminal (nothing otherwise): done/total units,
// rate, and the item being worked on. advance() may be called from any thread.
class Progress {
public:
    Progress(uint64_t total, std::string unit);
    ~Progress();
    void set_label(std::string label);
    void advance(uint64_t n);
    void finish();  // draws the final state and ends the line

private:
    void draw(bool final);

    uint64_t total_;
    std::string unit_;
    std::string label_;
    std::atomic<uint64_t> done_{0};
    std::mutex draw_mutex_;
    std::chrono::steady_clock::time_point start_, last_draw_;
    bool enabled_;
    bool finished_ = false;
};

}  // namespace edgerun::authoring
