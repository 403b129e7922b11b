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

}  // namespace edgerun
