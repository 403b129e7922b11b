// The generation loop: feed a prompt (only what the cache does not already hold), then
// sample, stream text and stop on an end-of-generation token, a stop string, the token
// budget, a full context, or a cancel request.
#pragma once

#include <edgerun/constrained_sampling.hpp>
#include <edgerun/drafter.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/runner.hpp>
#include <edgerun/speculative.hpp>
#include <edgerun/text/grammar.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <atomic>
#include <optional>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun {

struct GenerationSettings {
    int32_t n_predict = -1;          // < 0: until the end of generation or a full context
    std::vector<std::string> stop;   // stop strings (not printed)
    bool ignore_eos = false;
    // Constrained decoding: the generated text is a sentence of this grammar, and
    // generation ends when the sentence can go no further (nullptr: free text).
    std::shared_ptr<const text::Grammar> grammar;
    // Added to the logits before sampling (tokens within the vocabulary, |bias| <= 100).
    std::vector<LogitBias> logit_bias;
};

struct GenerationStats {
    int32_t prompt_tokens = 0;       // fed this call (the part the cache did not hold)
    int32_t reused_tokens = 0;       // already in the cache from earlier calls
    double prompt_seconds = 0;
    int32_t generated_tokens = 0;
    double generate_seconds = 0;
    // "eog", "stop string", "length", "context full", "cancelled", "grammar" (the sentence
    // is complete: nothing may follow)
    std::string stop_reason;
    std::vector<int32_t> tokens;     // the generated tokens (an end-of-generation token excluded)
    // Speculative decoding (zero without a drafter): target steps during generation,
    // those that verified a draft, and the draft tokens proposed and accepted.
    bool speculative = false;        // a drafter was attached
    int32_t target_steps = 0;
    int32_t draft_steps = 0;
    int32_t drafted_tokens = 0;
    int32_t accepted_tokens = 0;
};

struct SpeculationSettings {
    int32_t max_draft = 0;         // most tokens proposed per step; 0: plain decode
    bool adaptive = true;          // choose the length per step (DraftLength), else always max_draft
    // What one more row costs in a verify step, relative to a one-token decode step
    // (`edgerun bench --draft` prints it; about 0.3 on cpu_ref with SmolLM2 on 2 cores,
    // where a multi-row step is compute-bound).
    double verify_row_cost = 0.3;
    SpeculativeFault fault = SpeculativeFault::none;  // tests only
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

    // Speculative decoding with `drafter` from the next generate() on (nullptr: plain).
    // The drafter must outlive the generator.
    void speculate(Drafter* drafter, const SpeculationSettings& settings);

private:
    // One target step from `pending` (the last token; already in the cache with its
    // logits when `pending_fed`), drafting up to `max_draft` tokens first; returns the
    // tokens it produced and sets `pending` to the next one to feed.
    std::span<const int32_t> step(int32_t& pending, bool pending_fed, int32_t max_draft, GenerationStats& stats);

    // Feeds tokens after the cache's current content, in chunks, checking `cancel`.
    bool feed(std::span<const int32_t> tokens, const std::atomic<bool>* cancel);

    Runner& runner_;
    Sampler& sampler_;
    const text::Tokenizer& tokenizer_;
    std::vector<int32_t> cached_;
    Drafter* drafter_ = nullptr;
    SpeculationSettings speculation_;
    Draft draft_;
    std::vector<int32_t> verify_tokens_, produced_;
    std::vector<float> rows_;
    // The grammar and the biases of the generate() call under way, if any, and the
    // vocabulary's trie (built at the first constrained call, kept for the next ones).
    std::optional<text::TokenConstraint> constraint_;
    std::shared_ptr<const text::VocabTrie> trie_;
    std::vector<LogitBias> bias_;
    SamplingScratch scratch_;
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
