// Sampling under a grammar (text/grammar.hpp): what the generation loop and the server's
// slots call in place of Sampler::sample when a request constrains its output.
#pragma once

#include <edgerun/host_api.hpp>
#include <edgerun/text/grammar.hpp>

#include <span>
#include <vector>

namespace edgerun {

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

}  // namespace edgerun
