#include "pretokenizer.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/text/unicode.hpp>

#include <algorithm>

namespace edgerun::text::detail {

namespace {

// The split patterns, as the models' tokenizer.json files give them (with the
// case-insensitive contractions spelled out, since ECMAScript has no (?i:)).
const char* const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kUfakzeka = R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kPoro = " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+";
const char* const kDeepseekV3Words =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
    "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
// CJK ideographs, and the ranges around them DeepSeek keeps apart from words. The
// carriage return and line feed here are the characters themselves, not escapes.
const char* const kDeepseekCjk = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";
// DeepSeek LLM's letters: the cased letters (Lu, Ll, Lt) of the Unicode version it was
// made with.
const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF"
    "\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5"
    "\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA"
    "\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45"
    "\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE"
    "\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC"
    "\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
    "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3"
    "\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06"
    "\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3"
    "\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF"
    "\U0001E900-\U0001E943]+";
const char* const kDeepseekLlmPunctuation = "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+";

struct Family {
    std::vector<const char*> names;
    std::vector<std::string> patterns;
    bool clean_spaces;
    bool ignore_merges = false;
    std::optional<bool> add_bos = std::nullopt;
    bool no_bos_token = false;
};

// Names and flags follow llama.cpp's llama_vocab::impl::load; each family's patterns
// are its pre-tokenizer's split regexes, applied one after the other.
const std::vector<Family>& families() {
    static const std::vector<Family> table = {
        {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}, true},
        {{"gpt-2", "phi-2", "gigachat", "a.x-4.0", "mellum", "exaone4", "mpt", "olmo", "jais"}, {kGpt2}, true},
        {{"trillion", "granite-docling"}, {kGpt2}, false},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
         {kLlama3}, true, /*ignore_merges=*/true, /*add_bos=*/true},
        {{"dbrx", "smaug-bpe"}, {kLlama3}, true},
        {{"chatglm4", "glm4", "chatglm-bpe"}, {kLlama3}, true, false, std::nullopt, /*no_bos_token=*/true},
        {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2"}, {kQwen2}, false},
        {{"megrez", "stablelm2"}, {kQwen2}, true},
        {{"qwen35"}, {kQwen35}, false},
        {{"seed-coder"}, {kSeedCoder}, false},
        {{"ufakzeka"}, {kUfakzeka}, false},
        {{"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}, false},
        {{"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"}, {R"(\p{N})", kGpt2}, true},
        {{"smollm", "command-r"}, {R"(\p{N})", kGpt2}, false},
        {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}, true},
        {{"deepseek-coder"}, {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}, false},
        {{"deepseek-llm"},
         {"[\r\n]", kDeepseekLlmLetters, kDeepseekLlmPunctuation, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"},
         false},
        {{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
         {R"(\p{N}{1,3})", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+", kDeepseekV3Words},
         false},
        {{"poro-chat"}, {kPoro}, false},
        {{"bloom", "gpt3-finnish"}, {kPoro}, true},
        {{"viking"}, {kPoro, R"(\p{N})"}, false},
        {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4o}, false},
        {{"tekken"}, {kTekken}, false, /*ignore_merges=*/true, /*add_bos=*/true},
    };
    return table;
}

// llama.cpp runs these two patterns through hand-written splitters that classify code
// points with its Unicode tables; every other pattern goes through std::regex.
RegexMode mode_for(const std::string& pattern) {
    if (pattern == kGpt2 || pattern == kLlama3) return RegexMode::Table;
    static const char* const kCategories[] = {"\\p{N}", "\\p{L}", "\\p{P}", "\\p{M}", "\\p{S}",
                                              "\\p{Lu}", "\\p{Ll}", "\\p{Lt}", "\\p{Lm}", "\\p{Lo}"};
    for (const char* c : kCategories)
        if (pattern.find(c) != std::string::npos) return RegexMode::Collapsed;
    return RegexMode::Wide;
}

}  // namespace

std::vector<std::string> supported_pre_tokenizers() {
    std::vector<std::string> names;
    for (const auto& f : families())
        for (const char* n : f.names) names.emplace_back(n);
    std::sort(names.begin(), names.end());
    return names;
}

PreTokenizerSpec find_pre_tokenizer(std::string_view name) {
    if (name.empty()) name = "default";
    for (const auto& f : families())
        for (const char* n : f.names)
            if (name == n) {
                PreTokenizerSpec spec;
                spec.name = n;
                spec.patterns = f.patterns;
                spec.clean_spaces = f.clean_spaces;
                spec.ignore_merges = f.ignore_merges;
                spec.add_bos = f.add_bos;
                spec.no_bos_token = f.no_bos_token;
                return spec;
            }
    std::string list;
    for (const auto& n : supported_pre_tokenizers()) list += (list.empty() ? "" : ", ") + n;
    throw Error("unsupported pre-tokenizer '" + std::string(name) + "' (supported: " + list + ")", ER_E_UNSUPPORTED);
}

PreTokenizer::PreTokenizer(const PreTokenizerSpec& spec) {
    for (const auto& p : spec.patterns) regexes_.emplace_back(p, mode_for(p));
}

std::vector<std::pair<size_t, size_t>> PreTokenizer::split_ranges(const std::vector<uint32_t>& cps) const {
    std::vector<std::pair<size_t, size_t>> chunks;
    if (cps.empty()) return chunks;
    chunks.emplace_back(0, cps.size());
    std::vector<uint32_t> units[3];
    bool have_units[3] = {false, false, false};
    std::vector<std::pair<size_t, size_t>> next;
    for (const Regex& re : regexes_) {
        const int m = int(re.mode());
        if (!have_units[m]) {
            units[m] = regex_units(cps, re.mode());
            have_units[m] = true;
        }
        const uint32_t* u = units[m].data();
        next.clear();
        for (const auto& [begin, end] : chunks) {
            size_t pos = begin, mb = 0, me = 0;
            while (pos < end && re.search(u, begin, end, pos, mb, me)) {
                if (mb > pos) next.emplace_back(pos, mb);
                next.emplace_back(mb, me);
                pos = me;
            }
            if (pos < end) next.emplace_back(pos, end);
        }
        chunks.swap(next);
    }
    return chunks;
}

std::vector<std::string> PreTokenizer::split_words(std::string_view text) const {
    const std::vector<uint32_t> cps = decode_utf8(text);
    std::vector<std::string> words;
    for (const auto& [begin, end] : split_ranges(cps)) {
        std::string w;
        for (size_t i = begin; i < end; ++i) append_utf8(w, cps[i]);
        words.push_back(std::move(w));
    }
    return words;
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
    std::vector<std::string> words = split_words(text);
    for (auto& w : words) {
        std::string mapped;
        mapped.reserve(w.size() * 2);
        for (unsigned char b : w) mapped += byte_to_utf8(b);
        w.swap(mapped);
    }
    return words;
}

}  // namespace edgerun::text::detail
