// The generation loop: feed a prompt (only what the cache does not already hold), then
// sample, stream text and stop on an end-of-generation token, a stop string, the token
// budget, a full context, or a cancel request.
#pragma once

#include <edgerun/host_api.hpp>
#include <edgerun/runner.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun {

struct GenerationSettings {
    int32_t n_predict = -1;          // < 0: until the end of generation or a full context
    std::vector<std::string> stop;   // stop strings (not printed)
    bool ignore_eos = false;
};

struct GenerationStats {
    int32_t prompt_tokens = 0;       // fed this call (the part the cache did not hold)
    int32_t reused_tokens = 0;       // already in the cache from earlier calls
    double prompt_seconds = 0;
    int32_t generated_tokens = 0;
    double generate_seconds = 0;
    std::string stop_reason;         // "eog", "stop string", "length", "context full", "cancelled"
};

class Generator {
public:
    Generator(Runner& runner, Sampler& sampler, const text::Tokenizer& tokenizer);

    // Runs `prompt` (the whole conversation so far: a common prefix with what the cache
    // holds is reused) and generates after it. `on_text` receives complete UTF-8 text as
    // it is produced. The generated tokens are appended to `history()`.
    GenerationStats generate(std::span<const int32_t> prompt, const GenerationSettings& settings,
                             const std::function<void(std::string_view)>& on_text,
                             const std::atomic<bool>* cancel = nullptr);

    // The tokens the cache holds, in order.
    const std::vector<int32_t>& history() const { return cached_; }

private:
    // Feeds tokens after the cache's current content, in chunks, checking `cancel`.
    bool feed(std::span<const int32_t> tokens, const std::atomic<bool>* cancel);

    Runner& runner_;
    Sampler& sampler_;
    const text::Tokenizer& tokenizer_;
    std::vector<int32_t> cached_;
};

// Holds back text that may be the start of a stop string until it is known not to be.
class StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
    // Adds text; returns what can be printed now. Sets stopped() when a stop string was
    // completed (the returned text ends right before it).
    std::string push(std::string_view text);
    std::string flush();  // at the end: whatever is held back
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace edgerun
