#include "sampling_chain.hpp"

#include <algorithm>
#include <cmath>

namespace edgerun::sampling {
namespace {

// Descending logit, then ascending id: a total order, so results never depend on the
// sort implementation.
bool before(float a_logit, int32_t a_id, float b_logit, int32_t b_id) {
    return a_logit > b_logit || (a_logit == b_logit && a_id < b_id);
}

}  // namespace

SamplingChain::SamplingChain(const er_sampler_params& params, int32_t n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      rng_(Pcg64::from_seed(params.seed)),
      counts_(n_vocab, 0),
      candidates_(n_vocab),
      probabilities_(n_vocab) {}

void SamplingChain::reset() { history_.clear(); }

void SamplingChain::accept(int32_t token) { history_.push_back(token); }

bool SamplingChain::rollback(size_t n_tokens) {
    if (n_tokens > history_.size()) return false;
    history_.resize(history_.size() - n_tokens);
    return true;
}

bool SamplingChain::is_greedy() const {
    const bool penalties = params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                           params_.frequency_penalty != 0.0f;
    return params_.temperature <= 0.0f && (!penalties || params_.penalty_last_n <= 0);
}

void SamplingChain::apply_penalties() {
    const size_t window = std::min(history_.size(), size_t(std::max(params_.penalty_last_n, 0)));
    if (window == 0) return;
    const int32_t* recent = history_.data() + (history_.size() - window);
    for (size_t i = 0; i < window; ++i) ++counts_[recent[i]];
    for (size_t i = 0; i < window; ++i) {
        const int32_t id = recent[i];
        const int32_t count = counts_[id];
        if (count == 0) continue;  // already penalised through an earlier occurrence
        float& logit = candidates_[id].logit;
        // Dividing a positive logit and multiplying a negative one both lower it.
        logit = logit > 0 ? logit / params_.repeat_penalty : logit * params_.repeat_penalty;
        logit -= float(count) * params_.frequency_penalty + params_.presence_penalty;
        counts_[id] = 0;
    }
}

void SamplingChain::keep_top_k(int32_t k) {
    if (k <= 0 || size_t(k) >= size_) return;
    auto order = [](const Candidate& a, const Candidate& b) { return before(a.logit, a.id, b.logit, b.id); };
    std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.begin() + size_, order);
    size_ = size_t(k);
    sorted_ = true;
}

void SamplingChain::softmax() {
    if (!sorted_) {
        std::sort(candidates_.begin(), candidates_.begin() + size_,
                  [](const Candidate& a, const Candidate& b) { return before(a.logit, a.id, b.logit, b.id); });
        sorted_ = true;
    }
    const double max_logit = candidates_[0].logit;
    double sum = 0.0;
    for (size_t i = 0; i < size_; ++i) sum += probabilities_[i] = std::exp(double(candidates_[i].logit) - max_logit);
    for (size_t i = 0; i < size_; ++i) probabilities_[i] /= sum;
}

void SamplingChain::keep_top_p(float p) {
    if (p >= 1.0f) return;
    softmax();
    double cumulative = 0.0;
    for (size_t i = 0; i < size_; ++i) {
        cumulative += probabilities_[i];
        if (cumulative >= p) {
            size_ = i + 1;
            return;
        }
    }
}

void SamplingChain::keep_min_p(float p) {
    if (p <= 0.0f) return;
    softmax();
    const double threshold = probabilities_[0] * p;
    size_t keep = 1;
    while (keep < size_ && probabilities_[keep] >= threshold) ++keep;
    size_ = keep;
}

int32_t SamplingChain::run_chain(const float* logits) {
    for (int32_t i = 0; i < n_vocab_; ++i) candidates_[i] = Candidate{logits[i], i};
    size_ = size_t(n_vocab_);
    sorted_ = false;
    apply_penalties();

    if (params_.temperature <= 0.0f) {
        size_t best = 0;
        for (size_t i = 1; i < size_; ++i)
            if (before(candidates_[i].logit, candidates_[i].id, candidates_[best].logit, candidates_[best].id)) best = i;
        return candidates_[best].id;
    }

    keep_top_k(params_.top_k);
    keep_top_p(params_.top_p);
    keep_min_p(params_.min_p);
    for (size_t i = 0; i < size_; ++i) candidates_[i].logit /= params_.temperature;
    softmax();
    return -1;
}

void SamplingChain::distribution(const float* logits, float* probs) {
    std::fill(probs, probs + n_vocab_, 0.0f);
    if (const int32_t token = run_chain(logits); token >= 0) {
        probs[token] = 1.0f;
        return;
    }
    for (size_t i = 0; i < size_; ++i) probs[candidates_[i].id] = float(probabilities_[i]);
}

int32_t SamplingChain::sample(const float* logits) {
    if (const int32_t token = run_chain(logits); token >= 0) return token;

    const double u = rng_.uniform();
    double cumulative = 0.0;
    for (size_t i = 0; i < size_; ++i) {
        cumulative += probabilities_[i];
        if (u < cumulative) return candidates_[i].id;
    }
    // u landed in the rounding slack at the top: the last candidate that can be drawn (those
    // after it have probability 0: logits of -infinity, tokens a grammar rules out).
    size_t last = size_ - 1;
    while (last > 0 && probabilities_[last] == 0.0) --last;
    return candidates_[last].id;
}

}  // namespace edgerun::sampling
