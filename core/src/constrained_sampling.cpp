#include <edgerun/constrained_sampling.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace edgerun {

int32_t sample_constrained(Sampler& sampler, std::span<const float> logits, const text::TokenConstraint& constraint,
                           std::vector<float>& scratch) {
    const int32_t n_vocab = int32_t(logits.size());
    const int32_t first = sampler.sample(logits.data(), n_vocab);  // checks the logits finite
    if (constraint.allows(first)) return first;
    scratch.assign(logits.begin(), logits.end());
    constraint.mask(scratch);
    const int32_t token = sampler.sample_masked(scratch.data(), n_vocab);
    if (token < 0 || token >= n_vocab || !constraint.allows(token))
        throw Error("the sampler plugin picked token " + std::to_string(token) +
                        ", which the grammar rules out (its logit was -infinity)",
                    ER_E_INTERNAL);
    return token;
}

namespace {

// `logits` with `biases` added (in `out`), or `logits` itself when there are none.
std::span<const float> with_biases(std::span<const float> logits, std::span<const LogitBias> biases,
                                   std::vector<float>& out) {
    if (biases.empty()) return logits;
    out.assign(logits.begin(), logits.end());
    for (const LogitBias& b : biases)
        if (b.token >= 0 && size_t(b.token) < out.size()) out[size_t(b.token)] += b.bias;
    return out;
}

}  // namespace

int32_t sample_token(Sampler& sampler, std::span<const float> logits, std::span<const LogitBias> biases,
                     const text::TokenConstraint* constraint, SamplingScratch& scratch) {
    logits = with_biases(logits, biases, scratch.biased);
    return constraint ? sample_constrained(sampler, logits, *constraint, scratch.masked)
                      : sampler.sample(logits.data(), int32_t(logits.size()));
}

int32_t RequestSampler::sample(std::span<const float> logits) {
    return sample_token(sampler_, logits, biases_, current(), scratch_);
}

void RequestSampler::distribution(std::span<const float> logits, float* probs) {
    const int32_t n_vocab = int32_t(logits.size());
    logits = with_biases(logits, biases_, scratch_.biased);
    sampler_.distribution(logits.data(), n_vocab, probs);
    const text::TokenConstraint* constraint = current();
    if (!constraint) return;
    // With top-k, top-p or min-p only a few tokens keep a probability: asking the grammar
    // about each is cheaper than the mask, which a wide support needs anyway.
    constexpr int32_t kAskEachUpTo = 64;
    const auto support = std::count_if(probs, probs + n_vocab, [](float p) { return p > 0.0f; });
    bool masked = false;
    auto mask = [&] {
        scratch_.masked.assign(logits.begin(), logits.end());
        constraint->mask(scratch_.masked);
        masked = true;
    };
    if (support > kAskEachUpTo) mask();
    double refused = 0.0;
    for (int32_t t = 0; t < n_vocab; ++t) {
        if (probs[t] <= 0.0f) continue;
        const bool allowed = masked ? !std::isinf(scratch_.masked[size_t(t)]) : constraint->allows(t);
        if (allowed) continue;
        refused += probs[t];
        probs[t] = 0.0f;
    }
    if (refused == 0.0) return;
    if (!masked) mask();
    redraw_.resize(size_t(n_vocab));
    sampler_.distribution_masked(scratch_.masked.data(), n_vocab, redraw_.data());
    for (int32_t t = 0; t < n_vocab; ++t) probs[t] += float(refused * redraw_[size_t(t)]);
}

void RequestSampler::accept(int32_t token) {
    if (const text::TokenConstraint* constraint = current()) {
        text::TokenConstraint next = *constraint;
        next.accept(token);
        states_.push_back(std::move(next));
    }
    // A greedy sampler's draw does not depend on its history (is_greedy rules out
    // penalties), and it may lack the rollback entry.
    if (sampler_.is_greedy()) return;
    sampler_.accept(token);
    ++accepted_;
}

void RequestSampler::rollback() {
    if (accepted_ > 0) sampler_.rollback(accepted_);
    accepted_ = 0;
    states_.clear();
}

}  // namespace edgerun
