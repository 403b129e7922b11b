// Which tokens of a vocabulary may come next under a grammar. The pieces sit in a trie, so a
// prefix the grammar refuses rules out every piece that starts with it in one step; and the
// matcher states the walk meets are interned, so that the step from one state over one byte
// is worked out once per mask however many pieces take it (inside a JSON string nearly every
// byte leads back to the same state, and the walk becomes table lookups).
#include <edgerun/text/grammar.hpp>

#include <edgerun/host_api.hpp>
#include <edgerun/text/held_text.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <unordered_map>

namespace edgerun::text {

// The matcher states of one trie walk, numbered, with the step from each over each byte
// computed on first use. The first kDenseStates states keep their steps in a table; a
// grammar that tells many prefixes apart (a long list of words) gets the rest in a hash map,
// so memory stays proportional to the steps taken.
class MatcherStates {
public:
    static constexpr int32_t kRefused = -1;

    explicit MatcherStates(const GrammarMatcher& start) { intern(GrammarMatcher(start)); }

    int32_t next(int32_t state, uint8_t byte) {
        const int32_t known = step(state, byte);
        if (known != kUnknown) return known;
        for (const GrammarMatcher::Stack& stack : states_[size_t(state)].stacks_) work_ += stack.size() + 1;
        if (work_ > kMaxWork)
            throw Error("grammar: finding the tokens that may come next took over " + std::to_string(kMaxWork) +
                            " parse steps: the grammar is too ambiguous (its parses multiply as the text grows)",
                        ER_E_INVALID_ARGUMENT);
        GrammarMatcher after = states_[size_t(state)];
        const int32_t next = after.advance(byte) ? intern(std::move(after)) : kRefused;
        step(state, byte) = next;
        return next;
    }

private:
    static constexpr int32_t kUnknown = -2;
    static constexpr size_t kDenseStates = 1024;
    // One walk's work, in stack elements stepped over a byte: a grammar whose parses
    // multiply (nested, ambiguous rules) could otherwise make one token take seconds, and
    // with it every stream of a server. About 200 ms on a 2-core EPYC; the costliest mask of
    // a 40-function tool-call grammar over SmolLM2's vocabulary takes 150,000 (2 ms).
    static constexpr size_t kMaxWork = 8'000'000;
    size_t work_ = 0;

    int32_t& step(int32_t state, uint8_t byte) {
        if (size_t(state) < kDenseStates) return dense_steps_[size_t(state)][byte];
        return sparse_steps_.try_emplace(uint64_t(state) << 8 | byte, kUnknown).first->second;
    }

    int32_t intern(GrammarMatcher&& matcher) {
        const size_t hash = matcher.state_hash();
        const auto [first, last] = ids_.equal_range(hash);
        for (auto it = first; it != last; ++it)
            if (states_[size_t(it->second)].same_state(matcher)) return it->second;
        const auto id = int32_t(states_.size());
        states_.push_back(std::move(matcher));
        if (size_t(id) < kDenseStates) dense_steps_.emplace_back().fill(kUnknown);
        ids_.emplace(hash, id);
        return id;
    }

    std::vector<GrammarMatcher> states_;
    std::unordered_multimap<size_t, int32_t> ids_;  // by state_hash()
    std::vector<std::array<int32_t, 256>> dense_steps_;
    std::unordered_map<uint64_t, int32_t> sparse_steps_;  // state << 8 | byte
};

// Every piece a grammar could produce, in a trie laid out flat in depth-first order: a
// node's subtree is the run of nodes up to its subtree_end, so a refused prefix is skipped
// with one jump, and a walk is one pass over an array.
class VocabTrie {
public:
    explicit VocabTrie(const Tokenizer& tokenizer);

    int32_t n_tokens() const { return n_tokens_; }
    // Sets allowed[id] for every token in the trie that `matcher` accepts whole.
    void mark_allowed(const GrammarMatcher& matcher, std::vector<uint8_t>& allowed) const;

private:
    struct Node {
        uint32_t subtree_end;  // one past the last node below this one
        uint32_t first_token;  // this node's tokens: tokens_[first_token, next node's first_token)
        uint32_t depth;        // bytes from the root
        uint8_t byte;          // the byte from the parent
    };
    std::vector<Node> nodes_;  // nodes_[0] is the root (the empty prefix); the last is an end marker
    std::vector<TokenId> tokens_;
    uint32_t max_depth_ = 0;
    int32_t n_tokens_ = 0;
};

namespace {

// End-of-generation tokens are not text the grammar reads (they may come when the text is
// whole), and control tokens never may come.
bool is_text_token(const Tokenizer& tokenizer, TokenId id) {
    return !tokenizer.is_eog(id) && !(tokenizer.token_attr(id) & TOKEN_ATTR_CONTROL);
}

}  // namespace

VocabTrie::VocabTrie(const Tokenizer& tokenizer) : n_tokens_(tokenizer.n_tokens()) {
    std::vector<std::pair<std::string, TokenId>> pieces;
    pieces.reserve(size_t(n_tokens_));
    for (TokenId id = 0; id < n_tokens_; ++id) {
        if (!is_text_token(tokenizer, id)) continue;
        std::string piece = tokenizer.token_to_piece(id, /*special=*/false);
        if (!piece.empty()) pieces.emplace_back(std::move(piece), id);
    }
    // Sorted, a piece comes before every piece it is a prefix of, and pieces sharing a
    // prefix are adjacent: the trie is built in depth-first order in one pass, each piece
    // adding the nodes past what it shares with the one before.
    std::sort(pieces.begin(), pieces.end());
    nodes_.push_back({0, 0, 0, 0});
    std::vector<uint32_t> path{0};  // the nodes along the previous piece, by depth
    std::string_view previous;
    for (const auto& [piece, id] : pieces) {
        const size_t shared = size_t(std::mismatch(previous.begin(), previous.end(), piece.begin(), piece.end()).first -
                                     previous.begin());
        for (; path.size() > shared + 1; path.pop_back()) nodes_[path.back()].subtree_end = uint32_t(nodes_.size());
        for (size_t depth = shared; depth < piece.size(); ++depth) {
            path.push_back(uint32_t(nodes_.size()));
            nodes_.push_back({0, uint32_t(tokens_.size()), uint32_t(depth + 1), uint8_t(piece[depth])});
        }
        tokens_.push_back(id);
        max_depth_ = std::max(max_depth_, uint32_t(piece.size()));
        previous = piece;
    }
    for (; !path.empty(); path.pop_back()) nodes_[path.back()].subtree_end = uint32_t(nodes_.size());
    nodes_.push_back({0, uint32_t(tokens_.size()), 0, 0});
}

void VocabTrie::mark_allowed(const GrammarMatcher& matcher, std::vector<uint8_t>& allowed) const {
    MatcherStates states(matcher);
    std::vector<int32_t> state_at_depth(max_depth_ + 1);  // along the current path; the root is state 0
    const size_t end = nodes_.size() - 1;
    for (size_t i = 1; i < end;) {
        const Node& node = nodes_[i];
        const int32_t state = states.next(state_at_depth[node.depth - 1], node.byte);
        if (state == MatcherStates::kRefused) {
            i = node.subtree_end;
            continue;
        }
        state_at_depth[node.depth] = state;
        for (uint32_t t = node.first_token; t < nodes_[i + 1].first_token; ++t) allowed[size_t(tokens_[t])] = 1;
        ++i;
    }
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer,
                                 std::shared_ptr<const VocabTrie> trie)
    : tokenizer_(tokenizer), trie_(trie ? std::move(trie) : build_trie(tokenizer)), matcher_(std::move(grammar)) {
    if (trie_->n_tokens() != tokenizer.n_tokens())
        throw Error("grammar: the vocabulary trie was built for another tokenizer (" +
                        std::to_string(trie_->n_tokens()) + " tokens; this one has " +
                        std::to_string(tokenizer.n_tokens()) + ")",
                    ER_E_INVALID_ARGUMENT);
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer,
                                 std::shared_ptr<const VocabTrie> trie, GrammarTrigger trigger)
    : TokenConstraint(std::move(grammar), tokenizer, std::move(trie)) {
    if (trigger.text.empty()) throw Error("grammar: a lazy constraint needs a trigger", ER_E_INVALID_ARGUMENT);
    if (trigger.block_open.empty() != trigger.block_close.empty())
        throw Error("grammar: a lazy constraint's blocks need both an opening and a closing tag", ER_E_INVALID_ARGUMENT);
    in_block_ = trigger.starts_in_block && !trigger.block_open.empty();
    trigger_ = std::move(trigger);
    active_ = false;
}

std::shared_ptr<const VocabTrie> TokenConstraint::build_trie(const Tokenizer& tokenizer) {
    return std::make_shared<const VocabTrie>(tokenizer);
}

TokenConstraint::TriggerScan TokenConstraint::scan_for_trigger(std::string_view text) const {
    const std::string& open = trigger_.block_open;
    const std::string& close = trigger_.block_close;
    TriggerScan scan;
    scan.in_block = in_block_;
    scan.past_start = past_start_;
    size_t from = 0;
    while (true) {
        if (scan.past_start) {  // the trigger can no longer come
            scan.keep_from = text.size();
            return scan;
        }
        if (scan.in_block) {
            const size_t end = text.find(close, from);
            if (end == std::string_view::npos) {
                scan.keep_from = text.size() - cut_tag_length(text.substr(from), close);
                return scan;
            }
            from = end + close.size();
            scan.in_block = false;
        }
        if (trigger_.at_start) {
            while (from < text.size() && is_ascii_space(text[from])) ++from;
            const std::string_view rest = text.substr(from);
            auto starts = [&](std::string_view tag) { return !tag.empty() && rest.substr(0, tag.size()) == tag; };
            auto cut = [&](std::string_view tag) { return rest.size() < tag.size() && tag.substr(0, rest.size()) == rest; };
            if (starts(trigger_.text)) {
                scan.trigger_at = from;
                return scan;
            }
            if (starts(open)) {
                from += open.size();
                scan.in_block = true;
                continue;
            }
            if (cut(trigger_.text) || (!open.empty() && cut(open))) {
                scan.keep_from = from;
                return scan;
            }
            scan.past_start = true;
            continue;
        }
        const size_t at = text.find(trigger_.text, from);
        const size_t block = open.empty() ? std::string_view::npos : text.find(open, from);
        if (at != std::string_view::npos && (block == std::string_view::npos || at < block)) {
            scan.trigger_at = at;
            return scan;
        }
        if (block == std::string_view::npos) {
            const std::string_view rest = text.substr(from);
            scan.keep_from = text.size() - std::max(cut_tag_length(rest, trigger_.text),
                                                    open.empty() ? size_t(0) : cut_tag_length(rest, open));
            return scan;
        }
        from = block + open.size();
        scan.in_block = true;
    }
}

bool TokenConstraint::allows_before_trigger(const std::string& piece) const {
    const std::string text = held_ + piece;
    const size_t at = scan_for_trigger(text).trigger_at;
    return at == std::string::npos || matcher_.allows(std::string_view(text).substr(at));
}

bool TokenConstraint::allows(TokenId token) const {
    if (!tokenizer_.valid(token)) return false;
    if (!active_) return tokenizer_.is_eog(token) || allows_before_trigger(tokenizer_.token_to_piece(token, false));
    if (tokenizer_.is_eog(token)) return matcher_.can_end();
    if (!is_text_token(tokenizer_, token)) return false;
    const std::string piece = tokenizer_.token_to_piece(token, /*special=*/false);
    return !piece.empty() && matcher_.allows(piece);
}

void TokenConstraint::mask(std::span<float> logits) const {
    const auto n_tokens = size_t(tokenizer_.n_tokens());
    if (logits.size() < n_tokens)
        throw Error("grammar: " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                        std::to_string(n_tokens) + " tokens",
                    ER_E_INVALID_ARGUMENT);
    std::vector<uint8_t> allowed(logits.size(), 0);  // logits past the vocabulary (padding) stay refused
    if (!active_) {  // rare: a draw refused before the trigger (one that opened it badly)
        for (TokenId id = 0; id < tokenizer_.n_tokens(); ++id) allowed[size_t(id)] = allows(id);
    } else {
        trie_->mark_allowed(matcher_, allowed);
        if (matcher_.can_end())
            for (const TokenId id : tokenizer_.eog_ids()) allowed[size_t(id)] = 1;
    }
    if (std::find(allowed.begin(), allowed.end(), uint8_t(1)) == allowed.end())
        throw Error("grammar: no token may come next: the text cannot end here, and no piece of the vocabulary "
                    "continues it",
                    ER_E_INVALID_ARGUMENT);
    for (size_t i = 0; i < logits.size(); ++i)
        if (!allowed[i]) logits[i] = -std::numeric_limits<float>::infinity();
}

void TokenConstraint::accept(TokenId token) {
    if (!allows(token)) {
        const std::string piece = tokenizer_.valid(token) ? tokenizer_.token_to_piece(token, true) : "";
        throw Error("grammar: token " + std::to_string(token) + " ('" + piece + "') is not allowed here",
                    ER_E_INVALID_ARGUMENT);
    }
    if (tokenizer_.is_eog(token)) return;  // the generation ends on a whole text: nothing to read
    const std::string piece = tokenizer_.token_to_piece(token, /*special=*/false);
    if (active_) {
        matcher_.accept(piece);
        return;
    }
    held_ += piece;
    const TriggerScan scan = scan_for_trigger(held_);
    if (scan.trigger_at != std::string::npos) {
        active_ = true;
        matcher_.accept(std::string_view(held_).substr(scan.trigger_at));
        held_.clear();
    } else {
        held_.erase(0, scan.keep_from);
        in_block_ = scan.in_block;
        past_start_ = scan.past_start;
    }
}

}  // namespace edgerun::text
