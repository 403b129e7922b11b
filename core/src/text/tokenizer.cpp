// Tokenizer set-up: token table, special ids and the defaults llama.cpp assumes when a
// file is silent, attributes patched by token text, the end-of-generation set, caches.
#include <edgerun/text/tokenizer.hpp>

#include "pretokenizer.hpp"

#include <edgerun/host_api.hpp>

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace edgerun::text {

namespace {

uint32_t attr_from_type(int32_t type) {
    switch (type) {
        case ER_TOKEN_NORMAL: return TOKEN_ATTR_NORMAL;
        case ER_TOKEN_UNKNOWN: return TOKEN_ATTR_UNKNOWN;
        case ER_TOKEN_CONTROL: return TOKEN_ATTR_CONTROL;
        case ER_TOKEN_USER_DEFINED: return TOKEN_ATTR_USER_DEFINED;
        case ER_TOKEN_UNUSED: return TOKEN_ATTR_UNUSED;
        case ER_TOKEN_BYTE: return TOKEN_ATTR_BYTE;
        default: return TOKEN_ATTR_UNDEFINED;
    }
}

bool one_of(const std::string& text, std::initializer_list<const char*> list) {
    for (const char* s : list)
        if (text == s) return true;
    return false;
}

// Token texts that identify special roles when the file does not name them. These are
// the lists llama.cpp matches; ids are taken in id order when several tokens match.
const std::initializer_list<const char*> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
    "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "<end_of_utterance>"};
const std::initializer_list<const char*> kFimPreTexts = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
    "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"};
const std::initializer_list<const char*> kFimSufTexts = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
    "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"};
const std::initializer_list<const char*> kFimMidTexts = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>",
    "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"};
const std::initializer_list<const char*> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const std::initializer_list<const char*> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                                         "<reponame>"};
const std::initializer_list<const char*> kFimSepTexts = {"<|file_sep|>"};
const std::initializer_list<const char*> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~["};

std::string lowercase(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

Tokenizer::Tokenizer(const Vocab& vocab) {
    load_tokens(vocab);
    set_special_ids(vocab);
    detect_special_tokens();
    build_caches(vocab);
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

void Tokenizer::load_tokens(const Vocab& vocab) {
    kind_ = vocab.kind;
    if (kind_ != ER_VOCAB_SPM && kind_ != ER_VOCAB_BPE)
        throw Error("unsupported tokenizer model '" + vocab.model + "' (supported: llama (SentencePiece), gpt2 (byte-level BPE))",
                    ER_E_UNSUPPORTED);
    if (vocab.tokens.empty()) throw Error("the vocabulary has no tokens", ER_E_FORMAT);
    chat_template_ = vocab.chat_template;

    if (kind_ == ER_VOCAB_BPE) {
        const detail::PreTokenizerSpec spec = detail::find_pre_tokenizer(vocab.pre);
        pre_ = spec.name;
        pre_tokenizer_ = std::make_unique<detail::PreTokenizer>(spec);
        clean_spaces_ = spec.clean_spaces;
        ignore_merges_ = spec.ignore_merges;
        add_bos_ = spec.add_bos.value_or(false);
        add_space_prefix_ = false;
    } else {
        add_space_prefix_ = true;
        add_bos_ = true;
        clean_spaces_ = false;
    }

    // Filled like llama.cpp's token_to_id (no reserve, ids in order), so that iterating
    // it visits tokens in the same order: see detect_special_tokens.
    tokens_.resize(vocab.tokens.size());
    for (size_t i = 0; i < vocab.tokens.size(); ++i) {
        Token& t = tokens_[i];
        t.text = vocab.tokens[i].text.empty() ? "[EMPTY_" + std::to_string(i) + "]" : vocab.tokens[i].text;
        t.score = vocab.tokens[i].score;
        t.attr = attr_from_type(vocab.tokens[i].type);
        auto [it, inserted] = token_ids_.emplace(t.text, TokenId(i));
        if (!inserted)
            throw Error("duplicate token in vocabulary: '" + t.text + "' has ids " + std::to_string(it->second) +
                            " and " + std::to_string(i),
                        ER_E_FORMAT);
    }

    for (size_t i = 0; i < vocab.merges.size(); ++i) {
        const std::string& m = vocab.merges[i];
        const size_t space = m.find(' ', 1);
        std::string key = space == std::string::npos ? std::string(" ") : m.substr(0, space) + " " + m.substr(space + 1);
        merge_ranks_.emplace(std::move(key), int(i));  // the first occurrence keeps its rank
    }
}

void Tokenizer::set_special_ids(const Vocab& vocab) {
    const auto n = TokenId(tokens_.size());
    if (kind_ == ER_VOCAB_SPM) {
        bos_ = 1, eos_ = 2, unk_ = 0;
    } else {
        bos_ = 11, eos_ = 11;
        if (detail::find_pre_tokenizer(pre_).no_bos_token) bos_ = kNoToken;
    }
    auto take = [n](TokenId& id, const std::optional<TokenId>& from_file) {
        if (id >= n) id = kNoToken;  // a default beyond the vocabulary is dropped
        if (from_file && *from_file >= 0 && *from_file < n) id = *from_file;
    };
    take(bos_, vocab.bos), take(eos_, vocab.eos), take(eot_, vocab.eot), take(eom_, vocab.eom);
    take(unk_, vocab.unk), take(sep_, vocab.sep), take(pad_, vocab.pad);
    take(fim_pre_, vocab.fim_pre), take(fim_suf_, vocab.fim_suf), take(fim_mid_, vocab.fim_mid);
    take(fim_pad_, vocab.fim_pad), take(fim_rep_, vocab.fim_rep), take(fim_sep_, vocab.fim_sep);

    if (vocab.add_space_prefix) add_space_prefix_ = *vocab.add_space_prefix;
    if (vocab.add_bos) add_bos_ = *vocab.add_bos;
    if (vocab.add_eos) add_eos_ = *vocab.add_eos;
    if (add_bos_ && bos_ == kNoToken)
        throw Error("tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set", ER_E_FORMAT);
    if (add_eos_ && eos_ == kNoToken)
        throw Error("tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set", ER_E_FORMAT);

    // The newline token, as llama.cpp finds it (before any text is matched as special).
    if (kind_ == ER_VOCAB_SPM) {
        newline_ = byte_token('\n');
    } else {
        std::vector<TokenId> ids;
        encode_bpe("\n", ids);
        newline_ = ids.empty() ? pad_ : ids.front();
    }
}

void Tokenizer::detect_special_tokens() {
    auto mark_control = [this](TokenId id) { tokens_[id].attr |= TOKEN_ATTR_CONTROL; };
    auto detect = [&](TokenId& role, const std::initializer_list<const char*>& texts, TokenId id) {
        if (role == kNoToken && one_of(tokens_[id].text, texts)) {
            role = id;
            mark_control(id);
        }
    };
    // When several tokens fit a role, llama.cpp takes the first its hash map yields;
    // token_ids_ is the same container filled the same way, so it yields the same one.
    for (const auto& entry : token_ids_) {
        const TokenId id = entry.second;
        detect(eot_, kEotTexts, id);
        detect(eom_, {"<|eom_id|>"}, id);
        detect(fim_pre_, kFimPreTexts, id);
        detect(fim_suf_, kFimSufTexts, id);
        detect(fim_mid_, kFimMidTexts, id);
        detect(fim_pad_, kFimPadTexts, id);
        detect(fim_rep_, kFimRepTexts, id);
        detect(fim_sep_, kFimSepTexts, id);
    }
    // Control tokens named "unused" are placeholders.
    for (auto& t : tokens_)
        if ((t.attr & TOKEN_ATTR_CONTROL) && t.text.find("unused") != std::string::npos) t.attr |= TOKEN_ATTR_UNUSED;

    std::vector<TokenId> eog;
    for (TokenId id : {fim_pad_, fim_rep_, fim_sep_})
        if (id != kNoToken) eog.push_back(id);
    for (TokenId id = 0; id < n_tokens(); ++id) {
        if (one_of(tokens_[id].text, kEogTexts)) {
            eog.push_back(id);
            mark_control(id);
        }
        // gpt-oss channel markers are always rendered.
        if (one_of(tokens_[id].text, {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}))
            tokens_[id].attr = TOKEN_ATTR_USER_DEFINED;
    }
    for (TokenId id : {eos_, eot_, eom_})
        if (id != kNoToken) eog.push_back(id);
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

    auto eog_with_text = [&](const char* text) -> TokenId {
        for (TokenId id : eog)
            if (tokens_[id].text == text) return id;
        return kNoToken;
    };
    // Harmony-style vocabularies end a message with <|end|> but keep generating after it.
    const bool has_call = eog_with_text("<|call|>") != kNoToken || eog_with_text("<|calls|>") != kNoToken;
    const TokenId end_id = eog_with_text("<|end|>");
    if (end_id != kNoToken && has_call &&
        (eog_with_text("<|return|>") != kNoToken || eog_with_text("<|flush|>") != kNoToken)) {
        eog.erase(std::find(eog.begin(), eog.end(), end_id));
        tokens_[end_id].attr = TOKEN_ATTR_USER_DEFINED;
    }
    // Gemma 4 uses </s> inside tool responses.
    const TokenId s_id = eog_with_text("</s>");
    if (s_id != kNoToken && eog_with_text("<|tool_response>") != kNoToken) {
        eog.erase(std::find(eog.begin(), eog.end(), s_id));
        tokens_[s_id].attr = TOKEN_ATTR_NORMAL;
    }
    eog_ids_ = std::move(eog);
}

void Tokenizer::build_caches(const Vocab& vocab) {
    for (TokenId id = 0; id < n_tokens(); ++id)
        if (tokens_[id].attr & (TOKEN_ATTR_CONTROL | TOKEN_ATTR_USER_DEFINED | TOKEN_ATTR_UNKNOWN))
            special_tokens_.push_back(id);
    std::stable_sort(special_tokens_.begin(), special_tokens_.end(),
                     [this](TokenId a, TokenId b) { return tokens_[a].text.size() > tokens_[b].text.size(); });

    pieces_.resize(tokens_.size());
    for (TokenId id = 0; id < n_tokens(); ++id) pieces_[id] = render_piece(id, /*special=*/true);

    // Phi-3's special tokens swallow the whitespace after them (its tokenizer.json says
    // rstrip); the GGUF does not carry that, so it is recognised by model name.
    const std::string name = lowercase(vocab.model_name);
    if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
        for (TokenId id : special_tokens_) tokens_[id].attr |= TOKEN_ATTR_RSTRIP;
        auto set_rstrip = [this](const char* text, bool on) {
            const TokenId id = find(text);
            if (id == kNoToken) return;
            if (on) tokens_[id].attr |= TOKEN_ATTR_RSTRIP;
            else tokens_[id].attr &= ~uint32_t(TOKEN_ATTR_RSTRIP);
        };
        set_rstrip("</s>", true);
        for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(t, false);
    }
}

const std::string& Tokenizer::token_text(TokenId id) const {
    if (!valid(id)) throw Error("token id " + std::to_string(id) + " is out of range", ER_E_INVALID_ARGUMENT);
    return tokens_[id].text;
}

float Tokenizer::token_score(TokenId id) const {
    if (!valid(id)) throw Error("token id " + std::to_string(id) + " is out of range", ER_E_INVALID_ARGUMENT);
    return tokens_[id].score;
}

uint32_t Tokenizer::token_attr(TokenId id) const {
    if (!valid(id)) throw Error("token id " + std::to_string(id) + " is out of range", ER_E_INVALID_ARGUMENT);
    return tokens_[id].attr;
}

TokenId Tokenizer::find(std::string_view text) const {
    auto it = token_ids_.find(std::string(text));
    return it == token_ids_.end() ? kNoToken : it->second;
}

bool Tokenizer::is_eog(TokenId id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

}  // namespace edgerun::text
