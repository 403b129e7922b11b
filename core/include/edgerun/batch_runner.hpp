// Several sequences (conversations) over one model's weights, fed together: what a
// server decoding several conversations at once runs. Where the backend holds several
// sequences in one context (abi.h: er_device_info.max_seqs, er_step_row), the rows of
// all sequences go through one step, so each weight is read once for all of them.
// Elsewhere every sequence has a context of its own (a Runner) and they are stepped one
// at a time. Either way a sequence's logits are what it would get alone.
#pragma once

#include <edgerun/graph.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/runner.hpp>

#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace edgerun {

// Tokens for one sequence in BatchRunner::feed.
struct SequenceFeed {
    int32_t seq = 0;
    std::span<const int32_t> tokens;
    // tokens.size() * n_vocab floats to receive every row's logits, or nullptr: only the
    // last row's are kept (BatchRunner::logits).
    float* all_logits = nullptr;
};

// The most sequences one BatchRunner steps: every one holds a row of logits (a vocabulary's
// floats, twice) and its own KV cache, so a mistyped count would take all memory first.
inline constexpr int32_t kMaxBatchSequences = 1024;

class BatchRunner {
public:
    // One context of params.n_seqs sequences: `prefill` takes params.n_batch rows,
    // `batch` params.n_seqs rows (the decode step of every sequence at once).
    BatchRunner(const BackendModel& model, const er_context_params& params, const Graph& prefill, const Graph& batch);
    // One context (Runner) per sequence, stepped one at a time: for backends whose
    // contexts hold one sequence. `prefill` takes params.n_batch rows, `decode` one.
    BatchRunner(const BackendModel& model, const er_context_params& params, int32_t n_seqs, const Graph& prefill,
                const Graph& decode);

    int32_t n_seqs() const { return n_seqs_; }
    int32_t n_ctx() const { return n_ctx_; }
    int64_t n_vocab() const { return n_vocab_; }
    // True when sequences share steps (one context), false when stepped one at a time.
    bool batched() const { return shared_.has_value(); }
    int32_t position(int32_t seq) const { return positions_.at(size_t(seq)); }

    // Runs each feed's tokens at its sequence's next positions: all sequences' rows in
    // shared steps (of up to n_batch rows) when batched, else one sequence after the
    // other. A sequence may appear once per call. Throws before any work when a feed
    // names no sequence of this runner or does not fit its context.
    void feed(std::span<const SequenceFeed> feeds);

    // The logits of the last token fed to `seq`.
    std::span<const float> logits(int32_t seq) const {
        return {last_logits_.data() + size_t(seq) * size_t(n_vocab_), size_t(n_vocab_)};
    }

    // Forget positions >= `position` of one sequence (its cache before them stays valid).
    void rewind(int32_t seq, int32_t position);

private:
    struct Shared {
        BackendContext context;
        Plan prefill, batch;
        int32_t prefill_tokens, prefill_logits, batch_tokens, batch_logits, prefill_rows, batch_rows;
    };

    void check_feeds(std::span<const SequenceFeed> feeds) const;
    void feed_shared(std::span<const SequenceFeed> feeds);
    void run_step(size_t begin, size_t end);  // rows_[begin, end) as one step

    int32_t n_seqs_;
    int32_t n_ctx_;
    int64_t n_vocab_ = 0;
    std::vector<int32_t> positions_;
    std::vector<float> last_logits_;  // n_seqs rows
    std::optional<Shared> shared_;
    std::vector<std::unique_ptr<Runner>> alone_;  // when not batched

    // The rows of one feed() call (batched), in step order, and where each one's
    // logits go.
    struct RowTarget {
        int32_t seq;
        float* all_logits;  // this row's logits, or nullptr
        bool last;          // the last row of its feed
    };
    std::vector<er_step_row> rows_;
    std::vector<int32_t> tokens_;
    std::vector<RowTarget> targets_;
    std::vector<float> step_logits_;
};

}  // namespace edgerun
