// Tokenizers that reproduce llama.cpp's: SentencePiece-style (score-driven bigram merges,
// byte fallback) and GPT-2 byte-level BPE (rank-driven merges after a named
// pre-tokenizer), with special-token splitting, token attributes, the end-of-generation
// set, detokenization and a streaming decoder that never splits a UTF-8 character.
#pragma once

#include <edgerun/text/vocab.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace edgerun::text {

// Token attributes (bit flags).
enum TokenAttr : uint32_t {
    TOKEN_ATTR_UNDEFINED = 0,
    TOKEN_ATTR_UNKNOWN = 1u << 0,
    TOKEN_ATTR_UNUSED = 1u << 1,
    TOKEN_ATTR_NORMAL = 1u << 2,
    TOKEN_ATTR_CONTROL = 1u << 3,
    TOKEN_ATTR_USER_DEFINED = 1u << 4,
    TOKEN_ATTR_BYTE = 1u << 5,
    TOKEN_ATTR_LSTRIP = 1u << 7,  // eats whitespace before it when matched in text
    TOKEN_ATTR_RSTRIP = 1u << 8,  // eats whitespace after it
};

namespace detail {
class PreTokenizer;
}

class Tokenizer {
public:
    // Throws Error for a vocabulary it cannot run: unknown kind, an unsupported
    // pre-tokenizer (named, with the supported list), duplicate token texts, add_bos set
    // without a BOS token.
    explicit Tokenizer(const Vocab& vocab);
    ~Tokenizer();
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;

    // add_special: BOS/EOS as the vocabulary asks (add_bos/add_eos). parse_special: text
    // matching a control token becomes that token (user-defined tokens always do).
    std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const;

    // The bytes a token stands for. Control and unknown tokens are empty unless
    // `special`; `lstrip` drops up to that many leading spaces.
    std::string token_to_piece(TokenId id, bool special = false, int lstrip = 0) const;

    // llama_detokenize: pieces joined, with the SentencePiece leading space removed,
    // BOS/EOS dropped when remove_special, and (for tokenizers that ask for it) the
    // spaces before punctuation and contractions cleaned up.
    std::string decode(std::span<const TokenId> ids, bool remove_special = false, bool unparse_special = false) const;

    int32_t n_tokens() const { return int32_t(tokens_.size()); }
    bool valid(TokenId id) const { return id >= 0 && id < n_tokens(); }
    const std::string& token_text(TokenId id) const;
    float token_score(TokenId id) const;
    uint32_t token_attr(TokenId id) const;
    // The id of a token whose text is exactly `text`, or kNoToken.
    TokenId find(std::string_view text) const;

    int32_t kind() const { return kind_; }  // ER_VOCAB_SPM / ER_VOCAB_BPE
    const std::string& pre() const { return pre_; }
    TokenId bos() const { return bos_; }
    TokenId eos() const { return eos_; }
    TokenId eot() const { return eot_; }
    TokenId eom() const { return eom_; }
    TokenId unk() const { return unk_; }
    TokenId pad() const { return pad_; }
    TokenId sep() const { return sep_; }
    TokenId newline() const { return newline_; }
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    bool add_space_prefix() const { return add_space_prefix_; }
    bool clean_spaces() const { return clean_spaces_; }

    // End of generation: EOS, EOT, EOM and the tokens whose text marks the end of a
    // turn (<|im_end|>, <|eot_id|>, <|endoftext|>, <end_of_turn>, ...).
    bool is_eog(TokenId id) const;
    const std::vector<TokenId>& eog_ids() const { return eog_ids_; }

    // Control, user-defined and unknown tokens, longest text first: what is matched
    // in text before the normal tokenizer runs.
    const std::vector<TokenId>& special_tokens() const { return special_tokens_; }

    const std::string& chat_template() const { return chat_template_; }

private:
    struct Token {
        std::string text;
        float score = 0.0f;
        uint32_t attr = TOKEN_ATTR_NORMAL;
    };
    struct Fragment {
        TokenId token;  // kNoToken for raw text
        size_t offset;
        size_t length;
    };

    void load_tokens(const Vocab& vocab);
    void set_special_ids(const Vocab& vocab);
    void detect_special_tokens();
    void build_caches(const Vocab& vocab);

    std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
    void encode_spm(std::string_view text, std::vector<TokenId>& out) const;
    void encode_bpe(std::string_view text, std::vector<TokenId>& out) const;
    TokenId byte_token(uint8_t byte) const;
    int bpe_rank(const std::string& left, const std::string& right) const;
    std::string render_piece(TokenId id, bool special) const;

    int32_t kind_ = ER_VOCAB_NONE;
    std::string pre_;
    std::string chat_template_;
    std::vector<Token> tokens_;
    std::unordered_map<std::string, TokenId> token_ids_;
    std::unordered_map<std::string, int> merge_ranks_;  // "left right" -> rank
    std::unique_ptr<detail::PreTokenizer> pre_tokenizer_;

    TokenId bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, eom_ = kNoToken, unk_ = kNoToken;
    TokenId pad_ = kNoToken, sep_ = kNoToken, newline_ = kNoToken;
    TokenId fim_pre_ = kNoToken, fim_suf_ = kNoToken, fim_mid_ = kNoToken;
    TokenId fim_pad_ = kNoToken, fim_rep_ = kNoToken, fim_sep_ = kNoToken;
    bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
    bool clean_spaces_ = false, ignore_merges_ = false;

    std::vector<TokenId> eog_ids_;        // sorted
    std::vector<TokenId> special_tokens_; // longest text first
    std::vector<std::string> pieces_;     // token_to_piece(id, special=true)
};

// Holds back the bytes of a UTF-8 character until it is complete, so text can be shown
// as it arrives without ever showing half a character. Bytes that can never form a
// character come out as U+FFFD, one per maximal ill-formed subpart (as Unicode
// recommends, and Python's errors="replace" does).
class Utf8Stream {
public:
    // The text that became complete with these bytes (possibly empty).
    std::string push(std::string_view bytes);
    // End of stream: whatever is held comes out, an unfinished character as U+FFFD.
    std::string flush();

private:
    std::string pending_;
};

// Turns a stream of generated tokens into text, character by whole character.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer, bool special = false)
        : tokenizer_(&tokenizer), special_(special) {}

    std::string push(TokenId id) { return utf8_.push(tokenizer_->token_to_piece(id, special_)); }
    std::string flush() { return utf8_.flush(); }

private:
    const Tokenizer* tokenizer_;
    bool special_;
    Utf8Stream utf8_;
};

}  // namespace edgerun::text
