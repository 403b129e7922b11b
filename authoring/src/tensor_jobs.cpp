#include <edgerun/authoring/tensor_jobs.hpp>

#include <edgerun/host_api.hpp>
#include <edgerun/interrupt.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

#include <unistd.h>

namespace edgerun::authoring {

int default_thread_count() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : int(n);
}

void parallel_rows(int64_t n_rows, int64_t chunk_rows, int n_threads,
                   const std::function<void(int64_t, int64_t)>& work) {
    if (chunk_rows < 1) chunk_rows = 1;
    const int64_t n_chunks = (n_rows + chunk_rows - 1) / chunk_rows;
    std::atomic<int64_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr first_error;
    std::mutex error_mutex;
    auto run = [&] {
        try {
            for (int64_t c = next++; c < n_chunks && !failed; c = next++) {
                InterruptGuard::throw_if_requested();
                const int64_t first = c * chunk_rows;
                work(first, std::min(n_rows, first + chunk_rows));
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!first_error) first_error = std::current_exception();
            failed = true;
        }
    };
    const int extra = int(std::min<int64_t>(n_threads, n_chunks)) - 1;
    std::vector<std::thread> threads;
    for (int i = 0; i < extra; ++i) threads.emplace_back(run);
    run();
    for (auto& t : threads) t.join();
    if (first_error) std::rethrow_exception(first_error);
}

Progress::Progress(uint64_t total, std::string unit)
    : total_(total), unit_(std::move(unit)), start_(std::chrono::steady_clock::now()),
      last_draw_(start_), enabled_(::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
    // An unfinished bar (an error) still needs its line ended before the message.
    if (enabled_ && !finished_) std::fputc('\n', stderr);
}

void Progress::set_label(std::string label) {
    std::lock_guard<std::mutex> lock(draw_mutex_);
    label_ = std::move(label);
}

void Progress::advance(uint64_t n) {
    done_ += n;
    if (!enabled_) return;
    std::unique_lock<std::mutex> lock(draw_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(false);
}

void Progress::finish() {
    if (finished_) return;
    std::lock_guard<std::mutex> lock(draw_mutex_);
    if (enabled_) draw(true);
    finished_ = true;
}

void Progress::draw(bool final) {
    const uint64_t done = final ? total_ : std::min(done_.load(), total_);
    const double fraction = total_ ? double(done) / double(total_) : 1.0;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    constexpr int kWidth = 30;
    const int filled = int(fraction * kWidth);
    std::string bar(size_t(filled), '=');
    if (filled < kWidth) bar += '>' + std::string(size_t(kWidth - filled - 1), ' ');
    const double rate = seconds > 0 ? double(done) / seconds / 1e6 : 0.0;
    std::string label = final ? "done" : label_;
    if (label.size() > 40) label = "..." + label.substr(label.size() - 37);
    std::fprintf(stderr, "\r[%s] %3d%% %6.1f M%s/s %5.1fs  %-40s", bar.c_str(), int(fraction * 100), rate,
                 unit_.c_str(), seconds, label.c_str());
    if (final) std::fputc('\n', stderr);
    std::fflush(stderr);
}

}  // namespace edgerun::authoring
