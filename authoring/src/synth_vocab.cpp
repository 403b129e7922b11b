#include <edgerun/authoring/synth_vocab.hpp>

#include <edgerun/abi.h>
#include <edgerun/host_api.hpp>

#include <string_view>

namespace edgerun::authoring {

namespace {

// GPT-2's byte-to-unicode table: printable bytes stand for themselves, the others map to
// U+0100 upwards in byte order. Returns the UTF-8 text of each byte's token, in GPT-2's
// token order (printable bytes first).
std::vector<std::string> byte_tokens() {
    auto utf8 = [](uint32_t cp) {
        std::string s;
        if (cp < 0x80) {
            s += char(cp);
        } else {
            s += char(0xC0 | (cp >> 6));
            s += char(0x80 | (cp & 0x3F));
        }
        return s;
    };
    auto printable = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); };
    std::vector<std::string> out;
    for (int b = 0; b < 256; ++b)
        if (printable(b)) out.push_back(utf8(uint32_t(b)));
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b)
        if (!printable(b)) out.push_back(utf8(next++));
    return out;
}

const std::string kSpace = "\xC4\xA0";    // Ġ: the token text of byte 0x20
const std::string kNewline = "\xC4\x8A";  // Ċ: byte 0x0A

// Ordinary tokens and their merges, in merge-rank order, until `n_regular` tokens exist.
void build_regular(size_t n_regular, SynthVocab& v) {
    std::vector<std::string> level = byte_tokens();
    for (const std::string& t : level) v.tokens.push_back(t);
    auto add = [&](const std::string& left, const std::string& right) {
        if (v.tokens.size() >= n_regular) return false;
        v.tokens.push_back(left + right);
        v.merges.push_back(left + " " + right);
        return true;
    };
    add(kSpace, kSpace);
    add(kNewline, kNewline);
    add(kSpace + kSpace, kSpace + kSpace);

    // Letters by English frequency, so the low ranks are the common pairs.
    const std::string_view lower = "etaoinshrdlcumwfgypbvkjxqz";
    const std::string_view upper = "TAISCMBPHWDFRLNEGOJKUVYQXZ";
    std::vector<std::string> starts{kSpace};
    for (char c : lower) starts.emplace_back(1, c);
    for (char c : upper) starts.emplace_back(1, c);
    std::vector<std::string> current;
    for (const std::string& s : starts)
        for (char c : lower)
            if (add(s, std::string(1, c))) current.push_back(s + c);
    // Longer strings: every token of the last length extended by one letter.
    while (v.tokens.size() < n_regular && !current.empty()) {
        std::vector<std::string> longer;
        for (const std::string& s : current)
            for (char c : lower)
                if (add(s, std::string(1, c))) longer.push_back(s + c);
        current = std::move(longer);
    }
    if (v.tokens.size() < n_regular) throw Error("synthetic vocabulary cannot reach " + std::to_string(n_regular));
}

const char* kChatML =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + "
    "'\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
const char* kLlama3Chat =
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt "
    "%}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

}  // namespace

SynthVocab make_vocab(const Preset& p) {
    SynthVocab v;
    const size_t n = size_t(p.n_vocab);
    switch (p.vocab) {
        case VocabStyle::SmolLM: {
            // Special tokens first (ids 0-16), as in SmolLM2's tokenizer.
            const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>",
                                      "<file_sep>", "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>",
                                      "<issue_closed>", "<jupyter_start>", "<jupyter_text>", "<jupyter_code>",
                                      "<jupyter_output>", "<jupyter_script>", "<empty_output>"};
            SynthVocab regular;
            build_regular(n - std::size(specials), regular);
            for (const char* s : specials) v.tokens.push_back(s);
            v.types.assign(v.tokens.size(), ER_TOKEN_CONTROL);
            v.tokens.insert(v.tokens.end(), regular.tokens.begin(), regular.tokens.end());
            v.types.resize(v.tokens.size(), ER_TOKEN_NORMAL);
            v.merges = std::move(regular.merges);
            v.pre = "smollm";
            v.bos = 1, v.eos = 2, v.unk = 0, v.pad = 2;
            v.write_add_space_prefix = true;
            v.chat_template = kChatML;
            break;
        }
        case VocabStyle::Qwen2: {
            // 151643 ordinary tokens, 26 specials, then padding up to the embedding size
            // (a reduced --vocab keeps the 293 tokens after the ordinary ones).
            const size_t regular = n - 293;
            build_regular(regular, v);
            v.types.assign(v.tokens.size(), ER_TOKEN_NORMAL);
            const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
                                      "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
                                      "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                                      "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
                                      "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                                      "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
                                      "<think>", "</think>"};
            for (const char* s : specials) {
                v.tokens.push_back(s);
                // <|...|> are control tokens; the tag-like ones are user-defined text.
                v.types.push_back(std::string_view(s).substr(0, 2) == "<|" ? ER_TOKEN_CONTROL : ER_TOKEN_USER_DEFINED);
            }
            while (v.tokens.size() < n) {
                v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
                v.types.push_back(ER_TOKEN_UNUSED);
            }
            v.pre = "qwen2";
            v.bos = int32_t(regular), v.eos = int32_t(regular + 2), v.pad = int32_t(regular);
            v.chat_template = kChatML;
            break;
        }
        case VocabStyle::Llama3: {
            const size_t regular = n - 256;  // 128000 ordinary tokens, then 256 specials
            build_regular(regular, v);
            v.types.assign(v.tokens.size(), ER_TOKEN_NORMAL);
            const char* named[] = {"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                                   "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                                   "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                                   "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
            for (const char* s : named) v.tokens.push_back(s);
            for (int i = 3; v.tokens.size() < n; ++i) v.tokens.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
            v.types.resize(v.tokens.size(), ER_TOKEN_CONTROL);
            v.pre = "llama-bpe";
            v.bos = int32_t(regular), v.eos = int32_t(regular + 9);
            v.add_bos = true;
            v.chat_template = kLlama3Chat;
            break;
        }
    }
    if (v.tokens.size() != n) throw Error("synthetic vocabulary has " + std::to_string(v.tokens.size()) + " tokens, not " + std::to_string(n));
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        const std::string& t = v.tokens[i];
        if (v.types[i] == ER_TOKEN_NORMAL && t.size() >= 4 && t.compare(0, kSpace.size(), kSpace) == 0 &&
            t[2] >= 'a' && t[2] <= 'z')
            v.word_tokens.push_back(int32_t(i));
    }
    return v;
}

}  // namespace edgerun::authoring
