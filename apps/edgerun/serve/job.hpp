// One request's trip through the scheduler: what it asks for (JobSpec), and the events
// the scheduler thread sends back to the connection that waits on it (text as it is
// generated, then the end or an error). The connection may cancel it at any time (the
// client went away); the scheduler notices at its next step.
#pragma once

#include <edgerun/abi.h>
#include <edgerun/constrained_sampling.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/text/grammar.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace edgerun::serve {

// A generated token's log-probability under the model (the log-softmax of its logits,
// before temperature and penalties, as vLLM reports them by default), and the most
// likely tokens at its position with theirs.
struct TokenLogprob {
    int32_t token = -1;
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;  // most likely first
};

struct JobSpec {
    std::vector<int32_t> prompt;
    int32_t top_logprobs = -1;  // < 0: no logprobs; else this many alternatives with each token
    bool prompt_logprobs = false;  // the prompt's tokens' too (completions' echo); the first has none (NaN)
    int32_t max_tokens = -1;  // < 0: until an end-of-generation token or a full context; 0: the prompt only
    std::vector<std::string> stop;
    er_sampler_params sampler{};
    // The answer must be a sentence of this grammar (response_format, a forced tool call,
    // llama.cpp's `grammar`); the answer ends when the sentence is complete. nullptr: free.
    std::shared_ptr<const text::Grammar> grammar;
    text::GrammarTrigger grammar_trigger;  // text not empty: the grammar applies from the trigger on (lazy)
    std::vector<LogitBias> logit_bias;  // added to the logits before sampling (OpenAI's logit_bias)
    // llama.cpp's speculative.n_max: the most draft tokens a step of this request takes
    // (0: none), within the server's own; unset: the server's.
    std::optional<int32_t> draft_max;
};

// Where a request's time went, as llama.cpp's server reports it (`timings`): the prompt
// fed (from the slot taking the request to its first token) and the tokens generated
// after it; the drafts of speculative decoding, when the server drafts.
struct Timings {
    double prompt_ms = 0, predicted_ms = 0;
    bool drafting = false;
    int32_t draft_tokens = 0, draft_accepted = 0;
};

struct Usage {
    int32_t prompt_tokens = 0;
    int32_t completion_tokens = 0;
    int32_t cached_tokens = 0;  // prompt tokens the slot's cache already held
    Timings timings;
};

struct JobEvent {
    enum class Kind { Text, Done, Error };
    Kind kind = Kind::Text;
    std::string text;           // Text: the next piece; Error: the message
    std::string finish_reason;  // Done: "stop" or "length"
    Usage usage;                // Done
    int status = 500;           // Error: the HTTP status it maps to
    std::vector<TokenLogprob> logprobs;  // Text, when asked for: the token this text came with
};

class Job {
public:
    // The sampler is made from spec.sampler before the job exists, so that parameters the
    // plugin refuses are a 400 before any answer starts, never an error mid-stream.
    Job(JobSpec spec, Sampler sampler)
        : spec_(std::move(spec)), sampler_(std::move(sampler)), created_(std::chrono::steady_clock::now()) {}

    const JobSpec& spec() const { return spec_; }
    const Sampler& sampler() const { return sampler_; }
    std::chrono::steady_clock::time_point created() const { return created_; }

    // Scheduler side.
    void push(JobEvent event) {
        {
            std::lock_guard lock(mutex_);
            events_.push_back(std::move(event));
        }
        ready_.notify_one();
    }

    // Connection side: moves the events that arrived into `out`, waiting up to `timeout`
    // for the first one. False when none came in time.
    bool wait(std::vector<JobEvent>& out, std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
        for (JobEvent& e : events_) out.push_back(std::move(e));
        events_.clear();
        return true;
    }

    void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
    bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

private:
    JobSpec spec_;
    Sampler sampler_;
    std::chrono::steady_clock::time_point created_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<JobEvent> events_;
    std::atomic<bool> cancelled_{false};
};

}  // namespace edgerun::serve
