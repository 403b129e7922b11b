// The slots of `edgerun serve` and the thread that steps them. Each slot is one sequence
// of a BatchRunner with its own sampler. A request goes to the free slot whose cache
// shares the longest token prefix with its prompt and feeds only the rest; requests
// beyond the slots wait in a bounded queue. Every step carries one decode row of each
// generating slot plus prompt chunks of the others, at most `chunk` rows in all, so a
// long prompt arriving delays the others by one chunk per step, not by the whole prompt.
// With a drafter (speculative decoding) a decoding slot's row is followed by its draft's
// tokens, verified against the rows' logits as the generation loop does (speculative.hpp).
#pragma once

#include "job.hpp"
#include "metrics.hpp"

#include <edgerun/drafter.hpp>
#include <edgerun/engine.hpp>
#include <edgerun/generate.hpp>
#include <edgerun/plugin_registry.hpp>
#include <edgerun/speculative.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace edgerun::serve {

struct SchedulerOptions {
    int32_t n_slots = 4;
    int32_t queue_limit = 16;  // requests waiting for a slot; more get 429
    int32_t chunk = 64;        // most rows of one step (at most the engine's n_batch)
    std::string sampler_plugin = "sampler";
    // Speculative decoding: makes each slot's drafter (unset, or nullptr made: plain decode),
    // and the draft length's settings.
    std::function<std::unique_ptr<Drafter>()> new_drafter;
    SpeculationSettings speculation;
};

class Scheduler {
public:
    Scheduler(const Engine& engine, const PluginRegistry& registry, const text::Tokenizer& tokenizer,
              const SchedulerOptions& options, Metrics& metrics);
    ~Scheduler();

    enum class Refusal { None, QueueFull, Stopping };
    // The job, queued; or nullptr and why not. Throws Error when the sampler plugin
    // refuses spec.sampler (nothing is queued then).
    std::shared_ptr<Job> submit(JobSpec spec, Refusal& refusal);

    // Takes no more requests, lets the running and queued ones finish for up to `grace`,
    // ends the rest with an error event, and stops the thread.
    void stop(std::chrono::milliseconds grace);

    int32_t n_ctx() const { return runner_->n_ctx(); }
    bool batched() const { return runner_->batched(); }

private:
    struct Slot {
        int32_t seq = 0;
        std::shared_ptr<Job> job;
        std::vector<int32_t> cached;  // the tokens this sequence's cache holds
        size_t prompt_fed = 0;        // prompt tokens in the cache (prefill done at prompt.size())
        int32_t next_token = -1;      // sampled, not yet fed (decoding)
        int32_t generated = 0;
        Usage usage;
        std::chrono::steady_clock::time_point started, first_token;  // the slot took the job; its first token
        std::optional<Sampler> sampler;
        std::optional<text::StreamDecoder> decoder;
        std::optional<StopMatcher> matcher;
        std::optional<text::TokenConstraint> constraint;  // the job's grammar, if it has one
        std::vector<float> prompt_logits;  // a prefill chunk's every row, when the prompt's logprobs are asked for
        // Speculative decoding: the slot's drafter, the request's draft length, and this
        // step's rows (next_token, then the draft) with their logits.
        std::unique_ptr<Drafter> drafter;
        std::optional<DraftLength> draft_length;
        Draft draft;
        std::vector<int32_t> step_tokens, context;
        std::vector<float> rows;
        bool decoding() const { return job && next_token >= 0; }
    };

    void run();
    void assign_waiting();  // holds mutex_
    void count_busy();      // slots with a job, for submit() and the metrics
    void start(Slot& slot, std::shared_ptr<Job> job);
    bool step();  // false when there was nothing to do
    // Up to `spare` draft tokens after the slot's next token, into slot.draft.
    void propose(Slot& slot, int64_t spare);
    // After a step: the slot's next token from its logits, or its draft verified.
    void after_row(Slot& slot, std::chrono::steady_clock::time_point now, int64_t& generated);
    void after_draft(Slot& slot, std::chrono::steady_clock::time_point now, int64_t& generated);
    // Takes a token into the answer (`logits`: the row it was drawn from, for its
    // logprobs); false when the answer ended with it.
    bool take(Slot& slot, int32_t token, std::span<const float> logits, std::chrono::steady_clock::time_point now,
              int64_t& generated);
    void score_prompt(Slot& slot, size_t n_rows);  // the logprobs of a prefill chunk's next tokens
    void finish(Slot& slot, const std::string& finish_reason);
    void fail(Slot& slot, const std::string& message, int status);

    const text::Tokenizer& tokenizer_;
    const Plugin* sampler_plugin_;
    SchedulerOptions options_;
    Metrics& metrics_;
    std::unique_ptr<BatchRunner> runner_;
    std::vector<Slot> slots_;  // the scheduler thread's alone
    std::atomic<int32_t> busy_{0};

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> waiting_;
    bool stopping_ = false;  // no new requests
    bool abort_ = false;     // end everything now
    bool finished_ = false;  // the thread is done
    std::condition_variable finished_cv_;
    std::thread thread_;

    std::shared_ptr<const text::VocabTrie> trie_;  // for grammars: built at the first that comes
    SamplingScratch scratch_;                       // a request's biased and masked logits
    std::vector<SequenceFeed> feeds_;
    std::vector<Slot*> fed_slots_;
};

}  // namespace edgerun::serve
