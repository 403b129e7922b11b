#include <edgerun/constrained_sampling.hpp>

#include <algorithm>
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

int32_t sample_token(Sampler& sampler, std::span<const float> logits, std::span<const LogitBias> biases,
                     const text::TokenConstraint* constraint, SamplingScratch& scratch) {
    if (!biases.empty()) {
        scratch.biased.assign(logits.begin(), logits.end());
        for (const LogitBias& b : biases)
            if (b.token >= 0 && size_t(b.token) < scratch.biased.size()) scratch.biased[size_t(b.token)] += b.bias;
        logits = scratch.biased;
    }
    return constraint ? sample_constrained(sampler, logits, *constraint, scratch.masked)
                      : sampler.sample(logits.data(), int32_t(logits.size()));
}

}  // namespace edgerun
