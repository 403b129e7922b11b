// Speculative decoding's verify step and its draft-length controller. The Generator
// (generate.hpp) runs the loop: a drafter proposes d1..dk after the conversation, the
// target runs [pending, d1..dk] in one step with logits for every row, verify() keeps the
// accepted prefix and picks one more token, and both caches continue from there.
//
// The acceptance rule (Leviathan et al. 2023, Chen et al. 2023): with p the target's
// distribution at a row and q the draft's, accept d with probability min(1, p(d)/q(d));
// on a rejection draw from max(0, p - q) normalised; when every token is accepted, draw a
// bonus token from the last row's p. Every kept token is then distributed as the target
// alone would draw it. At temperature 0 both distributions are one-hot and the rule keeps
// the longest prefix the target's argmax agrees with: the output is the target's.
#pragma once

#include <edgerun/constrained_sampling.hpp>
#include <edgerun/drafter.hpp>
#include <edgerun/host_api.hpp>

#include <span>
#include <vector>

namespace edgerun {

// Planted faults for the tests that prove the distribution test catches them; never set
// outside a test.
enum class SpeculativeFault {
    none,
    residual_from_target,        // on a rejection, draw from p instead of max(0, p - q)
    bonus_dropped,               // the bonus token is kept in the context but never emitted
    draft_at_wrong_temperature,  // the ratio p/q uses q at half the sampler's temperature
};

struct Verdict {
    int32_t accepted = 0;  // draft tokens kept
    int32_t next = -1;     // the token after them: the correction, or the bonus
    bool bonus = false;    // every draft token was kept
};

// Checks `draft` against `rows`: draft.tokens.size() + 1 rows of the target's logits, row i
// after the context and the first i draft tokens. `target` says what each row draws from
// (the request's biases and grammar included: a draft token the grammar refuses has p = 0
// and is rejected); its random numbers come from the sampler, whose history it leaves as
// it found it.
Verdict verify(const Draft& draft, std::span<const float> rows, int32_t n_vocab, RequestSampler& target,
               SpeculativeFault fault = SpeculativeFault::none);

// Cuts a deterministic proposal before its first token `grammar` refuses: the verify row
// it would cost could only reject it. A sampled proposal is left whole: cutting it where
// its draw strays would change the distribution q its tokens were drawn from.
void cut_at_refusal(Draft& draft, const text::TokenConstraint& grammar);

// How many tokens to draft next: the k that maximises the expected tokens per unit of
// cost, with the per-token acceptance rate estimated from the recent steps. A step of k
// drafts costs 1 + k * (verify_row_cost + drafter cost) decode steps and yields
// (1 - a^(k+1)) / (1 - a) tokens on average. When no k beats plain decode, drafting
// pauses for a while (plain decode steps, k = 0) and then probes again, so that a draft
// that does not fit the text costs little. Deterministic: the same accepted counts give
// the same lengths (a seed reproduces its tokens), whatever the machine's speed.
class DraftLength {
public:
    DraftLength(int32_t max_draft, bool adaptive, double drafter_cost, double verify_row_cost);

    int32_t next();
    void record(int32_t drafted, int32_t accepted);
    double acceptance_estimate() const { return accepted_ / drafted_; }

private:
    double expected_gain(int32_t k) const;

    int32_t max_draft_;
    bool adaptive_;
    double step_cost_per_draft_;
    double drafted_, accepted_;  // decayed counts, seeded with a prior
    static constexpr int32_t kShortestPause = 16, kLongestPause = 256;
    int32_t paused_ = 0;         // plain steps left before probing again
    int32_t pause_length_ = kShortestPause;
};

}  // namespace edgerun
