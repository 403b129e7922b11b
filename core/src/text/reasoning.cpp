#include <edgerun/text/reasoning.hpp>

#include <edgerun/text/held_text.hpp>

namespace edgerun::text {

namespace {

size_t first_non_space(const std::string& s) {
    size_t i = 0;
    while (i < s.size() && is_ascii_space(s[i])) ++i;
    return i;
}

}  // namespace

ReasoningSplitter::ReasoningSplitter(bool prompt_opens_block)
    : state_(prompt_opens_block ? State::Reasoning : State::BeforeAnswer), skip_space_(prompt_opens_block) {}

bool ReasoningSplitter::opens_block(std::string_view prompt) {
    const size_t open = prompt.rfind(kOpen);
    const size_t close = prompt.rfind(kClose);
    return open != std::string_view::npos && (close == std::string_view::npos || close < open);
}

ReasoningSplitter::Pieces ReasoningSplitter::feed(std::string_view text) {
    held_ += text;
    Pieces out;
    while (true) {
        if (skip_space_) {
            held_.erase(0, first_non_space(held_));
            if (held_.empty()) return out;
            skip_space_ = false;
        }
        if (state_ == State::BeforeAnswer) {
            // Leading whitespace and a cut "<think" are held: either may open a block.
            const std::string_view rest = std::string_view(held_).substr(first_non_space(held_));
            if (rest.substr(0, kOpen.size()) == kOpen) {
                held_.erase(0, held_.size() - rest.size() + kOpen.size());
                state_ = State::Reasoning;
                skip_space_ = true;
                continue;
            }
            if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return out;
            state_ = State::Reply;
        }
        if (state_ == State::Reply) {
            out.content += held_;
            held_.clear();
            return out;
        }
        const size_t close = held_.find(kClose);
        if (close != std::string::npos) {
            std::string_view reasoning = std::string_view(held_).substr(0, close);
            while (!reasoning.empty() && is_ascii_space(reasoning.back())) reasoning.remove_suffix(1);
            out.reasoning += reasoning;
            held_.erase(0, close + kClose.size());
            state_ = State::Reply;
            skip_space_ = true;
            continue;
        }
        // Held: a cut "</think", and the whitespace before it (or before the piece's end).
        const size_t keep_from = held_from(held_, kClose);
        out.reasoning.append(held_, 0, keep_from);
        held_.erase(0, keep_from);
        return out;
    }
}

ReasoningSplitter::Pieces ReasoningSplitter::finish() {
    Pieces out;
    if (state_ == State::Reasoning) out.reasoning = std::move(held_);
    else if (!skip_space_) out.content = std::move(held_);
    held_.clear();
    return out;
}

}  // namespace edgerun::text
