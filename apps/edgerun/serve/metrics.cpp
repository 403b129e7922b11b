#include "metrics.hpp"

#include <sstream>

namespace edgerun::serve {

void Metrics::request_done(int status) {
    std::lock_guard lock(mutex_);
    ++requests_by_status_[status];
}

void Metrics::generated(int64_t n, std::chrono::steady_clock::time_point when) {
    generated_tokens_ += n;
    if (n == 0) return;
    std::lock_guard lock(mutex_);
    recent_.emplace_back(when, n);
    forget_before(when - kRateWindow);
}

void Metrics::forget_before(std::chrono::steady_clock::time_point start) {
    while (!recent_.empty() && recent_.front().first <= start) recent_.pop_front();
}

void Metrics::time_to_first_token(double seconds) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < kTtftBuckets.size(); ++i)
        if (seconds <= kTtftBuckets[i]) ++ttft_counts_[i];
    ++ttft_count_;
    ttft_sum_ += seconds;
}

std::string Metrics::prometheus_text() {
    std::ostringstream out;
    auto counter = [&](const char* name, const char* help, int64_t value) {
        out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " counter\n" << name << ' ' << value << '\n';
    };
    auto gauge = [&](const char* name, const char* help, double value) {
        out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " gauge\n" << name << ' ' << value << '\n';
    };
    counter("edgerun_prompt_tokens_total", "Prompt tokens fed to the model (cached ones not counted).", prompt_tokens_);
    counter("edgerun_prompt_tokens_cached_total", "Prompt tokens a slot's cache already held.", cached_tokens_);
    counter("edgerun_generated_tokens_total", "Tokens generated.", generated_tokens_);
    counter("edgerun_requests_cancelled_total", "Requests whose client went away before the end.", cancelled_);
    counter("edgerun_draft_tokens_total", "Tokens drafted for speculative decoding (--lookup, -md).", draft_tokens_);
    counter("edgerun_draft_tokens_accepted_total", "Drafted tokens the model's own draws kept.", draft_accepted_);
    gauge("edgerun_queue_depth", "Requests waiting for a slot.", double(queue_depth_));
    gauge("edgerun_slots_busy", "Slots running a request.", double(busy_slots_));
    gauge("edgerun_slots", "Slots (--parallel).", n_slots_);

    std::lock_guard lock(mutex_);
    // Over the window that ends now, not at the last step: an idle server reads 0.
    forget_before(std::chrono::steady_clock::now() - kRateWindow);
    int64_t recent_tokens = 0;
    for (const auto& [when, n] : recent_) recent_tokens += n;
    gauge("edgerun_tokens_per_second", "Tokens generated in the last 10 s, divided by 10.",
          double(recent_tokens) / std::chrono::duration<double>(kRateWindow).count());

    out << "# HELP edgerun_requests_total Responses sent, by HTTP status (499: the client went away first).\n"
           "# TYPE edgerun_requests_total counter\n";
    for (const auto& [status, n] : requests_by_status_) out << "edgerun_requests_total{status=\"" << status << "\"} " << n << '\n';

    out << "# HELP edgerun_time_to_first_token_seconds From a request's arrival to its first generated token.\n"
           "# TYPE edgerun_time_to_first_token_seconds histogram\n";
    for (size_t i = 0; i < kTtftBuckets.size(); ++i)
        out << "edgerun_time_to_first_token_seconds_bucket{le=\"" << kTtftBuckets[i] << "\"} " << ttft_counts_[i] << '\n';
    out << "edgerun_time_to_first_token_seconds_bucket{le=\"+Inf\"} " << ttft_count_ << '\n'
        << "edgerun_time_to_first_token_seconds_sum " << ttft_sum_ << '\n'
        << "edgerun_time_to_first_token_seconds_count " << ttft_count_ << '\n';
    return out.str();
}

}  // namespace edgerun::serve
