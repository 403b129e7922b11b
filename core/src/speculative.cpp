#include <edgerun/argmax.hpp>
#include <edgerun/speculative.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace edgerun {

namespace {

int32_t row_argmax(const float* row, int32_t n_vocab, int32_t index) {
    const Argmax best = argmax_logits(row, n_vocab);
    if (best.non_finite >= 0)
        throw Error("verify row " + std::to_string(index) + ": the logit of token " + std::to_string(best.non_finite) +
                        " is not finite",
                    ER_E_INTERNAL);
    return int32_t(best.index);
}

// q as it would be at half the temperature (q^2 renormalised): the planted fault of a
// ratio taken with the wrong temperature.
void sharpen(std::vector<float>& q) {
    double sum = 0.0;
    for (float& x : q) sum += double(x) * x;
    for (float& x : q) x = float(double(x) * x / sum);
}

// Draws from `weights` (non-negative, any sum > 0) with `u` in [0, 1).
int32_t draw_weighted(const std::vector<float>& weights, double u) {
    double total = 0.0;
    for (float w : weights) total += w;
    const double target = u * total;
    double cumulative = 0.0;
    int32_t last = -1;
    for (size_t i = 0; i < weights.size(); ++i) {
        if (weights[i] <= 0.0f) continue;
        cumulative += weights[i];
        last = int32_t(i);
        if (target < cumulative) return int32_t(i);
    }
    return last;
}

}  // namespace

Verdict verify(const Draft& draft, std::span<const float> rows, int32_t n_vocab, RequestSampler& target,
               SpeculativeFault fault) {
    const int32_t k = int32_t(draft.tokens.size());
    if (rows.size() != size_t(k + 1) * size_t(n_vocab))
        throw Error("verify: " + std::to_string(rows.size()) + " logits for " + std::to_string(k + 1) + " rows of " +
                        std::to_string(n_vocab),
                    ER_E_INTERNAL);
    const bool deterministic_draft = draft.probs.empty();
    if (!deterministic_draft && draft.probs.size() != size_t(k) * size_t(n_vocab))
        throw Error("verify: the draft's distributions do not match its tokens", ER_E_INTERNAL);
    auto row = [&](int32_t i) { return rows.subspan(size_t(i) * size_t(n_vocab), size_t(n_vocab)); };

    Verdict verdict;
    if (target.is_greedy()) {
        for (int32_t i = 0; i <= k; ++i) {
            // A bias or a grammar: the draw the plain loop would make, after the draft
            // tokens before this row.
            const int32_t best = target.changes_logits() ? target.sample(row(i)) : row_argmax(row(i).data(), n_vocab, i);
            if (i == k || best != draft.tokens[size_t(i)]) {
                verdict.accepted = i;
                verdict.next = best;
                verdict.bonus = i == k;
                target.rollback();
                return verdict;
            }
            if (target.changes_logits()) target.accept(best);
        }
    }

    std::vector<float> p(static_cast<size_t>(n_vocab)), q(static_cast<size_t>(n_vocab));
    for (int32_t i = 0; i < k; ++i) {
        const int32_t token = draft.tokens[size_t(i)];
        target.distribution(row(i), p.data());
        if (deterministic_draft) {
            std::fill(q.begin(), q.end(), 0.0f);
            q[size_t(token)] = 1.0f;
        } else {
            const float* from = draft.probs.data() + size_t(i) * size_t(n_vocab);
            std::copy(from, from + n_vocab, q.begin());
            if (fault == SpeculativeFault::draft_at_wrong_temperature) sharpen(q);
        }
        // Accept with probability min(1, p/q): u < p/q, written without the division.
        if (target.uniform() * double(q[size_t(token)]) < double(p[size_t(token)])) {
            target.accept(token);
            continue;
        }
        // The residual, written over q.
        double mass = 0.0;
        for (int32_t t = 0; t < n_vocab; ++t) mass += q[size_t(t)] = std::max(0.0f, p[size_t(t)] - q[size_t(t)]);
        // p == q up to rounding (a rejection was an accident of it), or the planted fault.
        if (!(mass > 0.0) || fault == SpeculativeFault::residual_from_target) q = p;
        verdict.accepted = i;
        verdict.next = draw_weighted(q, target.uniform());
        target.rollback();
        return verdict;
    }
    verdict.accepted = k;
    verdict.bonus = true;
    verdict.next = target.sample(row(k));
    target.rollback();
    return verdict;
}

void cut_at_refusal(Draft& draft, const text::TokenConstraint& grammar) {
    if (!draft.probs.empty()) return;
    std::optional<text::TokenConstraint> after;  // the grammar's state after the tokens kept
    size_t keep = 0;
    for (; keep < draft.tokens.size(); ++keep) {
        const text::TokenConstraint& now = after ? *after : grammar;
        if (!now.allows(draft.tokens[keep])) break;
        text::TokenConstraint next = now;
        next.accept(draft.tokens[keep]);
        after.emplace(std::move(next));
    }
    draft.tokens.resize(keep);
}

DraftLength::DraftLength(int32_t max_draft, bool adaptive, double drafter_cost, double verify_row_cost)
    : max_draft_(std::max(0, max_draft)),
      adaptive_(adaptive),
      step_cost_per_draft_(drafter_cost + verify_row_cost),
      // A prior of a 60% acceptance rate worth a few tokens: the first steps draft.
      drafted_(4.0),
      accepted_(2.4) {}

double DraftLength::expected_gain(int32_t k) const {
    const double a = std::clamp(acceptance_estimate(), 0.0, 0.999);
    const double tokens = (1.0 - std::pow(a, k + 1)) / (1.0 - a);
    return tokens / (1.0 + double(k) * step_cost_per_draft_);
}

int32_t DraftLength::next() {
    if (max_draft_ == 0) return 0;
    if (!adaptive_) return max_draft_;
    if (paused_ > 0) {
        if (--paused_ == 0) {
            // Probe again from a weak prior: the text may have turned copy-heavy.
            drafted_ = 2.0;
            accepted_ = 1.2;
        }
        return 0;
    }
    int32_t best_k = 0;
    double best = 1.0;  // plain decode: one token per step
    for (int32_t k = 1; k <= max_draft_; ++k)
        if (const double gain = expected_gain(k); gain > best) {
            best = gain;
            best_k = k;
        }
    if (best_k == 0) {
        // Drafting does not pay now: plain steps, then a probe. Each failed probe doubles
        // the pause, so that a draft that never fits costs a few percent at most.
        paused_ = pause_length_;
        pause_length_ = std::min(kLongestPause, pause_length_ * 2);
        return 0;
    }
    return best_k;
}

void DraftLength::record(int32_t drafted, int32_t accepted) {
    if (drafted <= 0) return;
    // Decay older steps: the text's kind changes (prose, then a quoted passage).
    constexpr double kKeep = 0.8;
    drafted_ = drafted_ * kKeep + drafted;
    accepted_ = accepted_ * kKeep + accepted;
    if (2 * accepted >= drafted) pause_length_ = kShortestPause;
}

}  // namespace edgerun
