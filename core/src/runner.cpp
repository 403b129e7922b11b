#include <edgerun/argmax.hpp>
#include <edgerun/runner.hpp>

#include <algorithm>

namespace edgerun {
Runner::Runner(const BackendModel& model, const er_context_params& params, const Graph& prefill, const Graph& decode)
    : context_(model, params),
      params_(params),
      prefill_(context_, prefill.view()),
      decode_(context_, decode.view()),
      prefill_tokens_(prefill.tokens_input),
      prefill_logits_(prefill.logits_output),
      decode_tokens_(decode.tokens_input),
      decode_logits_(decode.logits_output) {
    prefill.require_tokens_to_logits("prefill");
    decode.require_tokens_to_logits("decode");
    if (prefill.max_tokens != params.n_batch || decode.max_tokens != 1)
        throw Error("prefill graph must take n_batch tokens and decode graph one", ER_E_INVALID_ARGUMENT);
    n_vocab_ = decode.values[decode_logits_].width;
    logits_.assign(n_vocab_, 0.0f);
}

void Runner::feed(std::span<const int32_t> tokens, float* all_out) {
    if (tokens.empty()) return;
    const int64_t end = int64_t{position_} + static_cast<int64_t>(tokens.size());
    if (end > params_.n_ctx)
        throw Error("context is full: " + std::to_string(position_) + " positions used, " +
                        std::to_string(tokens.size()) + " more do not fit in " + std::to_string(params_.n_ctx),
                    ER_E_INVALID_ARGUMENT);
    size_t done = 0;
    while (done < tokens.size()) {
        const int32_t n = static_cast<int32_t>(std::min<size_t>(tokens.size() - done, params_.n_batch));
        const bool single = n == 1;
        Plan& plan = single ? decode_ : prefill_;
        const int32_t input = single ? decode_tokens_ : prefill_tokens_;
        const int32_t output = single ? decode_logits_ : prefill_logits_;
        plan.set_input(input, tokens.data() + done, n);
        plan.execute(n, position_, all_out != nullptr);
        if (all_out) {
            plan.get_output(output, all_out + done * n_vocab_, n);
            std::copy_n(all_out + (done + n - 1) * n_vocab_, n_vocab_, logits_.data());
        } else {
            plan.get_output(output, logits_.data(), 1);
        }
        position_ += n;
        done += n;
    }
}

int32_t Runner::feed_greedy(int32_t token) {
    if (!decode_.has_argmax()) {
        feed(std::span<const int32_t>(&token, 1));
        return greedy_token();
    }
    if (position_ + 1 > params_.n_ctx)
        throw Error("context is full: " + std::to_string(params_.n_ctx) + " positions used", ER_E_INVALID_ARGUMENT);
    decode_.set_input(decode_tokens_, &token, 1);
    decode_.execute(1, position_, false);
    position_ += 1;
    try {
        return decode_.argmax(decode_logits_);
    } catch (const Error& e) {
        throw Error("position " + std::to_string(position_ - 1) + ": " + e.what(), e.code());
    }
}

int32_t Runner::greedy_token() const {
    const Argmax best = argmax_logits(logits_.data(), n_vocab_);
    if (best.non_finite >= 0)
        throw Error("position " + std::to_string(position_ - 1) + ": the logit of token " +
                        std::to_string(best.non_finite) + " is not finite",
                    ER_E_INTERNAL);
    return static_cast<int32_t>(best.index);
}

void Runner::rewind(int32_t position) {
    if (position < 0 || position > position_)
        throw Error("cannot rewind to position " + std::to_string(position) + " (at " + std::to_string(position_) + ")",
                    ER_E_INVALID_ARGUMENT);
    position_ = position;
}

}  // namespace edgerun
