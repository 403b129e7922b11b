// Byte-level BPE pre-tokenizers: the split patterns named by `tokenizer.ggml.pre`, and
// the vocabulary flags that come with each name, as llama.cpp defines them.
#pragma once

#include "regex.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::text::detail {

struct PreTokenizerSpec {
    std::string name;            // the canonical name
    std::vector<std::string> patterns;
    bool clean_spaces = true;    // detokenizing removes spaces before punctuation
    bool ignore_merges = false;  // a word that is a whole token skips the merges
    std::optional<bool> add_bos; // the default add_bos when the file does not say
    bool no_bos_token = false;   // the default BOS id is dropped (the file may still set one)
};

// The spec for a pre-tokenizer name; throws Error("unsupported pre-tokenizer 'x'
// (supported: ...)") for a name it does not implement. An empty name is "default".
PreTokenizerSpec find_pre_tokenizer(std::string_view name);

// Every name find_pre_tokenizer accepts, sorted.
std::vector<std::string> supported_pre_tokenizers();

class PreTokenizer {
public:
    explicit PreTokenizer(const PreTokenizerSpec& spec);

    // Splits `text` into words and returns each as GPT-2 byte-level characters.
    std::vector<std::string> split(std::string_view text) const;

    // The split alone, as UTF-8 words (before the byte-level mapping); for tests.
    std::vector<std::string> split_words(std::string_view text) const;

private:
    std::vector<std::pair<size_t, size_t>> split_ranges(const std::vector<uint32_t>& cps) const;

    std::vector<Regex> regexes_;
};

}  // namespace edgerun::text::detail
