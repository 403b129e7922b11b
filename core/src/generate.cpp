#include <edgerun/generate.hpp>

#include <algorithm>
#include <chrono>

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
    for (const auto& stop : stops_)
        for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n)
            if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
                keep = n;
                break;
            }
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

GenerationStats Generator::generate(std::span<const int32_t> prompt, const GenerationSettings& settings,
                                    const std::function<void(std::string_view)>& on_text,
                                    const std::atomic<bool>* cancel) {
    GenerationStats stats;
    if (prompt.empty()) throw Error("the prompt is empty (no tokens to start from)", ER_E_INVALID_ARGUMENT);
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
    const bool greedy = sampler_.is_greedy();
    const int32_t n_vocab = int32_t(runner_.n_vocab());
    start = Clock::now();
    int32_t token = greedy ? runner_.greedy_token() : sampler_.sample(runner_.last_logits().data(), n_vocab);
    while (true) {
        if (!settings.ignore_eos && tokenizer_.is_eog(token)) {
            stats.stop_reason = "eog";
            break;
        }
        sampler_.accept(token);
        ++stats.generated_tokens;
        stats.tokens.push_back(token);
        if (std::string text = matcher.push(decoder.push(token)); !text.empty()) on_text(text);
        if (matcher.stopped()) {
            stats.stop_reason = "stop string";
            break;
        }
        if (settings.n_predict >= 0 && stats.generated_tokens >= settings.n_predict) {
            stats.stop_reason = "length";
            break;
        }
        if (runner_.position() >= runner_.n_ctx()) {
            stats.stop_reason = "context full";
            break;
        }
        if (cancelled(cancel)) {
            stats.stop_reason = "cancelled";
            break;
        }
        cached_.push_back(token);
        if (greedy) {
            token = runner_.feed_greedy(token);
        } else {
            runner_.feed(std::span<const int32_t>(&token, 1));
            token = sampler_.sample(runner_.last_logits().data(), n_vocab);
        }
    }
    if (std::string rest = matcher.push(decoder.flush()); !rest.empty()) on_text(rest);
    if (std::string held = matcher.flush(); !held.empty()) on_text(held);
    stats.generate_seconds = seconds_since(start);
    return stats;
}

}  // namespace edgerun
