#include <edgerun/drafter.hpp>

#include <algorithm>

namespace edgerun {

namespace {

// The token a draw `u` in [0, 1) lands on in `probs` (cumulative order by id).
int32_t draw(const float* probs, int32_t n_vocab, double u) {
    double cumulative = 0.0;
    int32_t last = -1;
    for (int32_t i = 0; i < n_vocab; ++i) {
        if (probs[i] <= 0.0f) continue;
        cumulative += probs[i];
        last = i;
        if (u < cumulative) return i;
    }
    if (last < 0) throw Error("draft distribution is empty", ER_E_INTERNAL);
    return last;  // u landed in the rounding slack at the top
}

std::string quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        if (static_cast<unsigned char>(c) < 0x20) {
            out += "\\x" + std::string(1, "0123456789abcdef"[(c >> 4) & 15]) + "0123456789abcdef"[c & 15];
            continue;
        }
        out += c;
    }
    return out + "'";
}

}  // namespace

void ModelDrafter::propose(std::span<const int32_t> context, int32_t max_tokens, RequestSampler& target, Draft& out) {
    out.clear();
    if (max_tokens <= 0 || context.empty()) return;
    // Reuse what the draft's cache shares with the context; the last context token is fed
    // again when needed, since its logits are what the first proposal needs.
    size_t common = 0;
    while (common < cached_.size() && common < context.size() && cached_[common] == context[common]) ++common;
    common = std::min(common, context.size() - 1);
    runner_.rewind(int32_t(common));
    cached_.resize(common);
    runner_.feed(context.subspan(common));
    cached_.assign(context.begin(), context.end());

    // Room in the draft's context for the proposal's own tokens (all but the last are fed).
    const int32_t room = runner_.n_ctx() - runner_.position() + 1;
    const int32_t n = std::min(max_tokens, room);
    const int32_t n_vocab = int32_t(runner_.n_vocab());
    if (target.is_greedy() && !target.changes_logits()) {  // the device's argmax
        int32_t token = runner_.greedy_token();
        for (int32_t i = 0; i < n; ++i) {
            out.tokens.push_back(token);
            if (i + 1 == n) break;
            cached_.push_back(token);
            token = runner_.feed_greedy(token);
        }
        return;
    }
    // Sampling, or a bias or a grammar: each token drawn from the host's logits as the
    // target draws, and taken in (the penalties and the grammar of the next one see it).
    const bool greedy = target.is_greedy();
    if (!greedy) out.probs.resize(size_t(n) * size_t(n_vocab));
    for (int32_t i = 0; i < n; ++i) {
        int32_t token = -1;
        if (greedy) {
            token = target.sample(runner_.last_logits());
        } else {
            float* q = out.probs.data() + size_t(i) * size_t(n_vocab);
            target.distribution(runner_.last_logits(), q);
            token = draw(q, n_vocab, target.uniform());
        }
        out.tokens.push_back(token);
        if (i + 1 == n) break;
        target.accept(token);
        cached_.push_back(token);
        runner_.feed(std::span<const int32_t>(&token, 1));
    }
    target.rollback();
}

void LookupDrafter::propose(std::span<const int32_t> context, int32_t max_tokens, RequestSampler&, Draft& out) {
    out.clear();
    const size_t n = context.size();
    if (max_tokens <= 0) return;
    for (int32_t ngram = max_ngram_; ngram >= std::max(1, min_ngram_); --ngram) {
        const size_t g = size_t(ngram);
        if (n < g + 1) continue;
        const auto pattern = context.subspan(n - g);
        // The latest earlier occurrence: recent text predicts the next tokens best.
        for (size_t start = n - g; start-- > 0;) {
            if (!std::equal(pattern.begin(), pattern.end(), context.begin() + std::ptrdiff_t(start))) continue;
            const size_t from = start + g;
            const size_t take = std::min(size_t(max_tokens), n - from);
            out.tokens.assign(context.begin() + std::ptrdiff_t(from), context.begin() + std::ptrdiff_t(from + take));
            return;
        }
    }
}

void require_same_vocabulary(const text::Vocab& target, const text::Vocab& draft) {
    if (target.tokens.size() != draft.tokens.size())
        throw Error("the draft model's vocabulary has " + std::to_string(draft.tokens.size()) + " tokens, the target's " +
                        std::to_string(target.tokens.size()) + ": a draft must share the target's vocabulary",
                    ER_E_INVALID_ARGUMENT);
    if (target.kind != draft.kind)
        throw Error("the draft model's tokenizer is of another kind than the target's (" + draft.model + " vs " +
                        target.model + "): a draft must share the target's vocabulary",
                    ER_E_INVALID_ARGUMENT);
    for (size_t i = 0; i < target.tokens.size(); ++i)
        if (target.tokens[i].text != draft.tokens[i].text)
            throw Error("the draft model's token " + std::to_string(i) + " is " + quoted(draft.tokens[i].text) +
                            ", the target's " + quoted(target.tokens[i].text) +
                            ": a draft must share the target's vocabulary",
                        ER_E_INVALID_ARGUMENT);
}

}  // namespace edgerun
