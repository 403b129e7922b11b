// Drafters for speculative decoding: something cheap that proposes the next few tokens,
// which the target model then checks in one multi-token step (speculative.hpp).
//  - ModelDrafter: a smaller (or more quantized) model with the target's vocabulary, on
//    its own backend context; it draws its proposal as the target draws (the sampler
//    chain, and the request's biases and grammar), so the acceptance rule knows the
//    distribution q each token was drawn from, and a grammar's forced tokens are proposed.
//  - LookupDrafter: no model; proposes what followed the latest earlier occurrence of the
//    last few tokens (prompt lookup). Pays on copy-heavy work: summaries, code edits.
#pragma once

#include <edgerun/constrained_sampling.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/runner.hpp>
#include <edgerun/text/vocab.hpp>

#include <span>
#include <string>
#include <vector>

namespace edgerun {

struct Draft {
    std::vector<int32_t> tokens;
    // tokens.size() rows of n_vocab: the distribution each token was drawn from. Empty
    // when the drafter proposes deterministically (a one-hot q at each token).
    std::vector<float> probs;

    void clear() {
        tokens.clear();
        probs.clear();
    }
};

class Drafter {
public:
    virtual ~Drafter() = default;

    // Proposes at most `max_tokens` tokens after `context` (every token of the
    // conversation so far). `target` is how the target draws (the request's sampler,
    // biases and grammar, after the context): a drafter that samples draws from
    // target.distribution() with target.uniform(), taking its own tokens in tentatively
    // (target.accept), and gives them back (target.rollback) before it returns.
    virtual void propose(std::span<const int32_t> context, int32_t max_tokens, RequestSampler& target, Draft& out) = 0;

    // The cost of proposing one token relative to one decode step of the target (0 for a
    // lookup, about the weight-bytes ratio for a draft model): the length controller
    // weighs it against the tokens a proposal saves.
    virtual double relative_cost() const = 0;
};

class ModelDrafter final : public Drafter {
public:
    // `runner` is the draft model's own context, at least as long as the target's.
    ModelDrafter(Runner& runner, double relative_cost) : runner_(runner), relative_cost_(relative_cost) {}

    void propose(std::span<const int32_t> context, int32_t max_tokens, RequestSampler& target, Draft& out) override;
    double relative_cost() const override { return relative_cost_; }

private:
    Runner& runner_;
    double relative_cost_;
    std::vector<int32_t> cached_;  // the tokens the draft's cache holds
};

class LookupDrafter final : public Drafter {
public:
    // Matches the last `max_ngram` down to `min_ngram` tokens (a single token repeats too
    // often by chance to predict what follows it: its drafts mostly cost verify rows).
    explicit LookupDrafter(int32_t max_ngram = 4, int32_t min_ngram = 2) : max_ngram_(max_ngram), min_ngram_(min_ngram) {}

    void propose(std::span<const int32_t> context, int32_t max_tokens, RequestSampler& target, Draft& out) override;
    double relative_cost() const override { return 0.0; }

private:
    int32_t max_ngram_, min_ngram_;
};

// A draft model must speak the target's vocabulary token for token; otherwise an Error in
// one line naming the first difference (the size, or the first token whose text differs).
void require_same_vocabulary(const text::Vocab& target, const text::Vocab& draft);

}  // namespace edgerun
