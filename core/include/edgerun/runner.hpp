// One conversation on one backend context: feeds tokens through the compiled prefill and
// decode plans and keeps track of the position. Everything the backend must allocate is
// allocated in the constructor; feeding tokens never asks it for memory again.
#pragma once

#include <edgerun/graph.hpp>
#include <edgerun/host_api.hpp>

#include <span>
#include <vector>

namespace edgerun {

class Runner {
public:
    // `prefill` must take context.n_batch tokens, `decode` one; both start from token ids
    // and end in logits.
    Runner(const BackendModel& model, const er_context_params& params, const Graph& prefill, const Graph& decode);

    int32_t position() const { return position_; }
    int32_t n_ctx() const { return params_.n_ctx; }
    int64_t n_vocab() const { return n_vocab_; }
    const BackendContext& context() const { return context_; }

    // Runs `tokens` at the next positions. Afterwards last_logits() holds the logits of
    // the last one; with `all_logits`, `all_out` (tokens.size() * n_vocab floats) gets
    // every position's. Throws before any work when the tokens do not fit the context.
    void feed(std::span<const int32_t> tokens, float* all_out = nullptr);

    // Feeds one token and returns the argmax of its logits, on the device when the
    // backend offers it (then last_logits() is not refreshed). A non-finite logit is an
    // Error naming the position, as in greedy_token().
    int32_t feed_greedy(int32_t token);

    // The argmax of last_logits() (argmax.hpp: ties to the lowest id); a NaN or infinite
    // logit is an Error naming the position and the token.
    int32_t greedy_token() const;

    const std::vector<float>& last_logits() const { return logits_; }

    // Forget positions >= `position` (the cache before it stays valid): rewinding a chat.
    void rewind(int32_t position);

private:
    BackendContext context_;
    er_context_params params_;
    Plan prefill_;
    Plan decode_;
    int32_t prefill_tokens_, prefill_logits_;
    int32_t decode_tokens_, decode_logits_;
    int64_t n_vocab_;
    int32_t position_ = 0;
    std::vector<float> logits_;
};

}  // namespace edgerun
