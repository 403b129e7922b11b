// What a request does to the logits before its sampler sees them: a bias per token
// (OpenAI's logit_bias, llama.cpp's --logit-bias) and a grammar (text/grammar.hpp). The
// generation loop and the server's slots call these in place of Sampler::sample.
#pragma once

#include <edgerun/host_api.hpp>
#include <edgerun/text/grammar.hpp>

#include <span>
#include <vector>

namespace edgerun {

// Added to one token's logit; OpenAI's range, where -100 all but bans a token and 100 all
// but forces it (the logits stay finite, so every sampler can take them).
struct LogitBias {
    int32_t token;
    float bias;
};
inline constexpr float kMaxLogitBias = 100.0f;

// The next token from `logits` under `constraint` (not yet accepted by it): the sampler's
// own choice when the grammar allows it, else its choice among the tokens the grammar
// allows (the others' logits set to -infinity in `scratch`). Most steps end at the first
// draw, so the whole vocabulary is checked only when the model strays. With temperature
// alone the result is drawn from exactly the masked distribution (a draw from p kept when
// it lands in the allowed set A, else redrawn from p restricted to A, is p restricted to
// A); with top-k, top-p or min-p the first draw is from the truncated distribution, as in
// llama.cpp's sampler. Throws Error when the sampler picks a token the mask ruled out.
int32_t sample_constrained(Sampler& sampler, std::span<const float> logits, const text::TokenConstraint& constraint,
                           std::vector<float>& scratch);

// The buffers of sample_token, kept by the caller from step to step.
struct SamplingScratch {
    std::vector<float> biased, masked;
};

// One step's token from `logits`: `biases` added, then under `constraint` (nullptr: none;
// the token is not yet accepted by it); Sampler::sample's own when there is neither.
int32_t sample_token(Sampler& sampler, std::span<const float> logits, std::span<const LogitBias> biases,
                     const text::TokenConstraint* constraint, SamplingScratch& scratch);

// What one request draws from, for speculative verification (speculative.hpp): the
// sampler over the logits with the biases added, under the grammar. Verification takes
// draft tokens in tentatively (accept) and gives them all back at its end (rollback);
// the generation loop then accepts the kept ones for good. The constraint is not changed:
// the tentative grammar states are copies.
class RequestSampler {
public:
    RequestSampler(Sampler& sampler, std::span<const LogitBias> biases, const text::TokenConstraint* constraint,
                   SamplingScratch& scratch)
        : sampler_(sampler), biases_(biases), constraint_(constraint), scratch_(scratch) {}

    bool is_greedy() const { return sampler_.is_greedy(); }
    // Whether a bias or a grammar makes the draw differ from the sampler's alone.
    bool changes_logits() const { return !biases_.empty() || constraint_; }
    // sample_token after the tokens taken in so far.
    int32_t sample(std::span<const float> logits);
    // The distribution sample() draws from, into `probs` (logits.size() of them). Under a
    // grammar that is a mixture: the sampler's distribution on the tokens the grammar
    // allows, plus the mass of those it refuses times the distribution over the masked
    // logits (the redraw of sample_constrained).
    void distribution(std::span<const float> logits, float* probs);
    double uniform() { return sampler_.uniform(); }
    void accept(int32_t token);
    void rollback();

private:
    const text::TokenConstraint* current() const { return states_.empty() ? constraint_ : &states_.back(); }

    Sampler& sampler_;
    std::span<const LogitBias> biases_;
    const text::TokenConstraint* constraint_;
    SamplingScratch& scratch_;
    std::vector<text::TokenConstraint> states_;  // after each token taken in
    int32_t accepted_ = 0;
    std::vector<float> redraw_;
};

}  // namespace edgerun
