#include <edgerun/batch_runner.hpp>

#include <algorithm>
#include <cstring>
#include <string>

namespace edgerun {
namespace {

int32_t checked_sequence_count(int32_t n_seqs) {
    if (n_seqs < 1 || n_seqs > kMaxBatchSequences)
        throw Error("a batch takes 1 to " + std::to_string(kMaxBatchSequences) + " sequences, not " +
                        std::to_string(n_seqs),
                    ER_E_INVALID_ARGUMENT);
    return n_seqs;
}

}  // namespace

BatchRunner::BatchRunner(const BackendModel& model, const er_context_params& params, const Graph& prefill,
                         const Graph& batch)
    : n_seqs_(checked_sequence_count(std::max(params.n_seqs, 1))), n_ctx_(params.n_ctx) {
    prefill.require_tokens_to_logits("prefill");
    batch.require_tokens_to_logits("batch");
    if (prefill.max_tokens != params.n_batch || batch.max_tokens > params.n_batch)
        throw Error("the prefill graph must take n_batch tokens and the batch graph at most that", ER_E_INVALID_ARGUMENT);
    BackendContext context(model, params);
    shared_.emplace(Shared{context, Plan(context, prefill.view()), Plan(context, batch.view()), prefill.tokens_input,
                           prefill.logits_output, batch.tokens_input, batch.logits_output, prefill.max_tokens,
                           batch.max_tokens});
    n_vocab_ = batch.values[batch.logits_output].width;
    positions_.assign(size_t(n_seqs_), 0);
    last_logits_.assign(size_t(n_seqs_) * size_t(n_vocab_), 0.0f);
    // Room for a decode step of every sequence; longer feeds grow these once.
    step_logits_.assign(size_t(shared_->batch_rows) * size_t(n_vocab_), 0.0f);
}

BatchRunner::BatchRunner(const BackendModel& model, const er_context_params& params, int32_t n_seqs,
                         const Graph& prefill, const Graph& decode)
    : n_seqs_(checked_sequence_count(n_seqs)), n_ctx_(params.n_ctx) {
    er_context_params one = params;
    one.n_seqs = 1;
    for (int32_t s = 0; s < n_seqs; ++s) alone_.push_back(std::make_unique<Runner>(model, one, prefill, decode));
    n_vocab_ = alone_.front()->n_vocab();
    positions_.assign(size_t(n_seqs_), 0);
    last_logits_.assign(size_t(n_seqs_) * size_t(n_vocab_), 0.0f);
}

void BatchRunner::check_feeds(std::span<const SequenceFeed> feeds) const {
    std::vector<bool> seen(size_t(n_seqs_), false);
    for (const SequenceFeed& f : feeds) {
        if (f.seq < 0 || f.seq >= n_seqs_)
            throw Error("sequence " + std::to_string(f.seq) + " is not one of this batch's " + std::to_string(n_seqs_),
                        ER_E_INVALID_ARGUMENT);
        if (seen[size_t(f.seq)])
            throw Error("sequence " + std::to_string(f.seq) + " is fed twice in one call", ER_E_INVALID_ARGUMENT);
        seen[size_t(f.seq)] = true;
        if (int64_t{positions_[size_t(f.seq)]} + int64_t(f.tokens.size()) > n_ctx_)
            throw Error("sequence " + std::to_string(f.seq) + ": context is full: " +
                            std::to_string(positions_[size_t(f.seq)]) + " positions used, " +
                            std::to_string(f.tokens.size()) + " more do not fit in " + std::to_string(n_ctx_),
                        ER_E_INVALID_ARGUMENT);
    }
}

void BatchRunner::feed(std::span<const SequenceFeed> feeds) {
    check_feeds(feeds);
    if (shared_) {
        feed_shared(feeds);
        return;
    }
    for (const SequenceFeed& f : feeds) {
        if (f.tokens.empty()) continue;
        Runner& runner = *alone_[size_t(f.seq)];
        runner.feed(f.tokens, f.all_logits);
        std::copy(runner.last_logits().begin(), runner.last_logits().end(),
                  last_logits_.begin() + std::ptrdiff_t(f.seq) * n_vocab_);
        positions_[size_t(f.seq)] = runner.position();
    }
}

void BatchRunner::feed_shared(std::span<const SequenceFeed> feeds) {
    // Every row of this call in step order, sequence by sequence; a row asks for logits
    // when it is the last of its feed or its feed wants them all.
    rows_.clear();
    tokens_.clear();
    targets_.clear();
    for (const SequenceFeed& f : feeds) {
        for (size_t i = 0; i < f.tokens.size(); ++i) {
            const bool last = i + 1 == f.tokens.size();
            float* out = f.all_logits ? f.all_logits + i * size_t(n_vocab_) : nullptr;
            rows_.push_back(er_step_row{f.seq, positions_[size_t(f.seq)] + int32_t(i), last || out ? 1 : 0, 0});
            tokens_.push_back(f.tokens[i]);
            targets_.push_back(RowTarget{f.seq, out, last});
        }
    }
    // The batch plan when every row fits it (a decode step of each sequence), else
    // steps of the prefill plan's n_batch rows; a sequence split over two steps simply
    // continues in the second.
    const size_t step_rows =
        rows_.size() <= size_t(shared_->batch_rows) ? size_t(shared_->batch_rows) : size_t(shared_->prefill_rows);
    for (size_t begin = 0; begin < rows_.size(); begin += step_rows) run_step(begin, std::min(rows_.size(), begin + step_rows));
    for (const SequenceFeed& f : feeds) positions_[size_t(f.seq)] += int32_t(f.tokens.size());
}

void BatchRunner::run_step(size_t begin, size_t end) {
    Shared& s = *shared_;
    const bool small = end - begin <= size_t(s.batch_rows);
    Plan& plan = small ? s.batch : s.prefill;
    const int32_t tokens_value = small ? s.batch_tokens : s.prefill_tokens;
    const int32_t logits_value = small ? s.batch_logits : s.prefill_logits;
    const std::span<const er_step_row> rows(rows_.data() + begin, end - begin);
    plan.set_input(tokens_value, tokens_.data() + begin, int64_t(rows.size()));
    plan.execute(rows);
    int64_t n_logit_rows = 0;
    for (const er_step_row& row : rows) n_logit_rows += row.logits;
    if (n_logit_rows == 0) return;
    if (step_logits_.size() < size_t(n_logit_rows) * size_t(n_vocab_))
        step_logits_.resize(size_t(n_logit_rows) * size_t(n_vocab_));
    plan.get_output(logits_value, step_logits_.data(), n_logit_rows);
    const float* next = step_logits_.data();
    const size_t row_bytes = size_t(n_vocab_) * sizeof(float);
    for (size_t r = begin; r < end; ++r) {
        if (!rows_[r].logits) continue;
        const RowTarget& t = targets_[r];
        if (t.all_logits) std::memcpy(t.all_logits, next, row_bytes);
        if (t.last) std::memcpy(last_logits_.data() + size_t(t.seq) * size_t(n_vocab_), next, row_bytes);
        next += n_vocab_;
    }
}

void BatchRunner::rewind(int32_t seq, int32_t position) {
    if (seq < 0 || seq >= n_seqs_)
        throw Error("sequence " + std::to_string(seq) + " is not one of this batch's " + std::to_string(n_seqs_),
                    ER_E_INVALID_ARGUMENT);
    if (position < 0 || position > positions_[size_t(seq)])
        throw Error("cannot rewind sequence " + std::to_string(seq) + " to position " + std::to_string(position) +
                        " (at " + std::to_string(positions_[size_t(seq)]) + ")",
                    ER_E_INVALID_ARGUMENT);
    positions_[size_t(seq)] = position;
    if (!shared_) alone_[size_t(seq)]->rewind(position);
}

}  // namespace edgerun
