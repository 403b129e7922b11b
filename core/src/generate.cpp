#include <edgerun/generate.hpp>

#include <edgerun/constrained_sampling.hpp>
#include <edgerun/text/held_text.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace edgerun {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool cancelled(const std::atomic<bool>* cancel) { return cancel && cancel->load(std::memory_order_relaxed); }

}  // namespace

std::string StopMatcher::push(std::string_view text) {
    if (stopped_) return {};
    held_.append(text);
    size_t first_stop = std::string::npos;
    for (const auto& stop : stops_) {
        if (stop.empty()) continue;
        size_t at = held_.find(stop);
        if (at < first_stop) first_stop = at;
    }
    if (first_stop != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, first_stop);
        held_.clear();
        return out;
    }
    // Keep the longest tail that is a proper prefix of some stop string.
    size_t keep = 0;
    for (const auto& stop : stops_) keep = std::max(keep, text::cut_tag_length(held_, stop));
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string StopMatcher::flush() {
    std::string out;
    out.swap(held_);
    return stopped_ ? std::string() : out;
}

Generator::Generator(Runner& runner, Sampler& sampler, const text::Tokenizer& tokenizer)
    : runner_(runner), sampler_(sampler), tokenizer_(tokenizer) {}

bool Generator::feed(std::span<const int32_t> tokens, const std::atomic<bool>* cancel) {
    const size_t chunk = size_t(std::max(1, runner_.context().params().n_batch));
    for (size_t done = 0; done < tokens.size(); done += chunk) {
        if (cancelled(cancel)) return false;
        auto part = tokens.subspan(done, std::min(chunk, tokens.size() - done));
        runner_.feed(part);
        cached_.insert(cached_.end(), part.begin(), part.end());
    }
    return true;
}

void Generator::speculate(Drafter* drafter, const SpeculationSettings& settings) {
    if (drafter && settings.max_draft > 0 && !sampler_.is_greedy() && !sampler_.has_speculative_entries())
        throw Error("speculative decoding while sampling needs a sampler plugin with the distribution, uniform and "
                    "rollback entries",
                    ER_E_UNSUPPORTED);
    drafter_ = drafter;
    speculation_ = settings;
}

std::span<const int32_t> Generator::step(int32_t& pending, bool pending_fed, int32_t max_draft,
                                        GenerationStats& stats) {
    ++stats.target_steps;
    const int32_t n_vocab = int32_t(runner_.n_vocab());
    // Where pending sits in the cache.
    const int32_t base = pending_fed ? runner_.position() - 1 : runner_.position();
    produced_.clear();
    if (!pending_fed) cached_.push_back(pending);
    RequestSampler target(sampler_, bias_, constraint_ ? &*constraint_ : nullptr, scratch_);
    if (max_draft > 0) {
        drafter_->propose(cached_, max_draft, target, draft_);
        if (constraint_) cut_at_refusal(draft_, *constraint_);
    }
    if (max_draft <= 0 || draft_.tokens.empty()) {
        // A plain argmax may run on the device; a grammar or a bias needs the host's logits.
        const bool device_argmax = sampler_.is_greedy() && !constraint_ && bias_.empty();
        if (device_argmax) {
            produced_.push_back(pending_fed ? runner_.greedy_token() : runner_.feed_greedy(pending));
        } else {
            if (!pending_fed) runner_.feed(std::span<const int32_t>(&pending, 1));
            produced_.push_back(sample_token(sampler_, runner_.last_logits(), bias_,
                                             constraint_ ? &*constraint_ : nullptr, scratch_));
        }
        pending = produced_.back();
        return produced_;
    }
    const int32_t k = int32_t(draft_.tokens.size());
    rows_.resize(size_t(k + 1) * size_t(n_vocab));
    if (pending_fed) {
        // The first row is the logits the cache already gave for pending.
        std::copy(runner_.last_logits().begin(), runner_.last_logits().end(), rows_.begin());
        runner_.feed(draft_.tokens, rows_.data() + n_vocab);
    } else {
        verify_tokens_.assign(1, pending);
        verify_tokens_.insert(verify_tokens_.end(), draft_.tokens.begin(), draft_.tokens.end());
        runner_.feed(verify_tokens_, rows_.data());
    }
    const Verdict verdict = verify(draft_, rows_, n_vocab, target, speculation_.fault);
    ++stats.draft_steps;
    stats.drafted_tokens += k;
    stats.accepted_tokens += verdict.accepted;
    // Keep pending and the accepted draft tokens; the next token is the new pending one.
    runner_.rewind(base + 1 + verdict.accepted);
    cached_.insert(cached_.end(), draft_.tokens.begin(), draft_.tokens.begin() + verdict.accepted);
    produced_.assign(draft_.tokens.begin(), draft_.tokens.begin() + verdict.accepted);
    // The planted fault: the bonus goes on into the context, never into the output.
    if (!(verdict.bonus && speculation_.fault == SpeculativeFault::bonus_dropped)) produced_.push_back(verdict.next);
    pending = verdict.next;
    return produced_;
}

GenerationStats Generator::generate(std::span<const int32_t> prompt, const GenerationSettings& settings,
                                    const std::function<void(std::string_view)>& on_text,
                                    const std::atomic<bool>* cancel) {
    GenerationStats stats;
    if (prompt.empty()) throw Error("the prompt is empty (no tokens to start from)", ER_E_INVALID_ARGUMENT);
    for (const LogitBias& b : settings.logit_bias)
        if (b.token < 0 || b.token >= runner_.n_vocab() || !(std::fabs(b.bias) <= kMaxLogitBias))
            throw Error("logit bias " + std::to_string(b.token) + ": " + std::to_string(b.bias) +
                            " (a token of the vocabulary of " + std::to_string(runner_.n_vocab()) +
                            ", a bias from -100 to 100)",
                        ER_E_INVALID_ARGUMENT);
    const int64_t budget = settings.n_predict < 0 ? 0 : settings.n_predict;
    if (int64_t(prompt.size()) + budget > runner_.n_ctx())
        throw Error("the prompt (" + std::to_string(prompt.size()) + " tokens) plus " + std::to_string(budget) +
                        " to generate exceed the context of " + std::to_string(runner_.n_ctx()) +
                        " tokens (raise --ctx-size or lower -n)",
                    ER_E_INVALID_ARGUMENT);

    // Reuse the longest common prefix with the cache; at least the last prompt token is
    // fed again, since its logits are what the first sample needs.
    size_t common = 0;
    while (common < cached_.size() && common < prompt.size() && cached_[common] == prompt[common]) ++common;
    common = std::min(common, prompt.size() - 1);
    runner_.rewind(int32_t(common));
    cached_.resize(common);
    stats.reused_tokens = int32_t(common);

    sampler_.reset();
    for (int32_t token : prompt) sampler_.accept(token);

    constraint_.reset();
    if (settings.grammar) {
        if (!trie_) trie_ = text::TokenConstraint::build_trie(tokenizer_);
        constraint_.emplace(settings.grammar, tokenizer_, trie_);
    }
    bias_ = settings.logit_bias;
    const bool speculating = drafter_ != nullptr && speculation_.max_draft > 0;
    stats.speculative = speculating;
    auto start = Clock::now();
    if (!feed(prompt.subspan(common), cancel)) {
        stats.prompt_seconds = seconds_since(start);
        stats.stop_reason = "cancelled";
        return stats;
    }
    stats.prompt_tokens = int32_t(prompt.size() - common);
    stats.prompt_seconds = seconds_since(start);

    if (settings.n_predict == 0) {  // only the prompt (llama.cpp's -n 0)
        stats.stop_reason = "length";
        return stats;
    }
    text::StreamDecoder decoder(tokenizer_);
    StopMatcher matcher(settings.stop);
    // Takes a token into the output; false when generation ends with it.
    auto emit = [&](int32_t token) {
        if (!settings.ignore_eos && tokenizer_.is_eog(token)) {
            stats.stop_reason = "eog";
            return false;
        }
        if (constraint_) constraint_->accept(token);
        sampler_.accept(token);
        ++stats.generated_tokens;
        stats.tokens.push_back(token);
        if (std::string text = matcher.push(decoder.push(token)); !text.empty()) on_text(text);
        if (matcher.stopped()) {
            stats.stop_reason = "stop string";
            return false;
        }
        if (constraint_ && constraint_->must_end()) {
            stats.stop_reason = "grammar";
            return false;
        }
        if (settings.n_predict >= 0 && stats.generated_tokens >= settings.n_predict) {
            stats.stop_reason = "length";
            return false;
        }
        return true;
    };

    DraftLength length(speculating ? speculation_.max_draft : 0, speculation_.adaptive,
                       speculating ? drafter_->relative_cost() : 0.0, speculation_.verify_row_cost);
    start = Clock::now();
    // The token the next step starts from: first the last prompt token, already in the
    // cache (its logits give the first token, or verify the first draft token).
    int32_t pending = prompt.back();
    bool pending_fed = true;
    while (true) {
        if (!pending_fed && runner_.position() >= runner_.n_ctx()) {
            stats.stop_reason = "context full";
            break;
        }
        if (cancelled(cancel)) {
            stats.stop_reason = "cancelled";
            break;
        }
        // A step yields at most max_draft + 1 tokens; they must fit the budget, and the
        // drafts the context.
        int32_t max_draft = length.next();
        if (settings.n_predict >= 0) max_draft = std::min(max_draft, settings.n_predict - stats.generated_tokens - 1);
        max_draft = std::min(max_draft, runner_.n_ctx() - runner_.position() - (pending_fed ? 0 : 1));
        const int32_t base = pending_fed ? runner_.position() - 1 : runner_.position();
        const int32_t accepted_before = stats.accepted_tokens, drafted_before = stats.drafted_tokens;
        const std::span<const int32_t> produced = step(pending, pending_fed, max_draft, stats);
        pending_fed = false;
        length.record(stats.drafted_tokens - drafted_before, stats.accepted_tokens - accepted_before);
        bool going = true;
        for (size_t i = 0; i < produced.size() && going; ++i) {
            going = emit(produced[i]);
            if (!going) {
                // Ended at produced[i]: the cache keeps pending and the tokens before it.
                const size_t keep = std::min(cached_.size(), size_t(base) + 1 + i);
                runner_.rewind(int32_t(keep));
                cached_.resize(keep);
            }
        }
        if (!going) break;
    }
    if (std::string rest = matcher.push(decoder.flush()); !rest.empty()) on_text(rest);
    if (std::string held = matcher.flush(); !held.empty()) on_text(held);
    stats.generate_seconds = seconds_since(start);
    return stats;
}

}  // namespace edgerun
