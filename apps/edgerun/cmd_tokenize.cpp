// edgerun tokenize -m MODEL TEXT: the token ids a model's tokenizer gives a text.
#include "cli.hpp"
#include "commands.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/model.hpp>
#include <edgerun/text/chat_template.hpp>
#include <edgerun/text/tokenizer.hpp>
#include <edgerun/text/unicode.hpp>

#include <iostream>
#include <iterator>

namespace edgerun::cli {

namespace {

// A piece for one terminal line: whole UTF-8 characters as they are; control characters,
// backslashes and bytes that are not a whole character escaped.
std::string printable(const std::string& piece) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < piece.size();) {
        const auto c = static_cast<unsigned char>(piece[i]);
        const size_t len = text::utf8_sequence_length(c);
        if (len > 1 && i + len <= piece.size()) {
            const std::string seq = piece.substr(i, len);
            const auto cps = text::decode_utf8(seq);
            if (cps.size() == 1 && text::encode_utf8(cps) == seq) {
                out += seq;
                i += len;
                continue;
            }
        }
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c >= 0x7F) out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
        else out += char(c);
        ++i;
    }
    return out;
}

std::string read_all(std::istream& in) { return std::string(std::istreambuf_iterator<char>(in), {}); }

}  // namespace

int cmd_tokenize(const std::vector<std::string>& args) {
    CommonOptions common;
    std::string model, text, file, system, think;
    ChatTemplateOptions template_options;
    bool pieces = false, no_bos = false, special = false, chat = false, have_text = false;
    po::options_description desc("edgerun tokenize options");
    desc.add_options()
        ("model,m", po::value(&model), "the model file whose tokenizer to use")
        ("text", po::value<std::string>()->notifier([&](const std::string& v) { text = v, have_text = true; }),
         "the text to tokenize; - reads standard input")
        ("file,f", po::value(&file), "read the text from this file")
        ("pieces", po::bool_switch(&pieces), "print one `id 'piece'` per line instead of the ids")
        ("no-bos", po::bool_switch(&no_bos), "do not add the BOS (or EOS) token the model asks for")
        ("special", po::bool_switch(&special), "text that spells a special token becomes that token")
        ("chat", po::bool_switch(&chat), "tokenize the text as a user turn in the model's chat template")
        ("system", po::value(&system), "with --chat: a system prompt")
        ("think", po::value(&think), "with --chat: on or off (the template's enable_thinking: Qwen3, DeepSeek-R1)");
    template_options.add_to(desc, "with --chat: ");
    if (!parse(args, desc, common,
               "usage: edgerun tokenize -m MODEL [options] TEXT\n"
               "       edgerun tokenize -m MODEL [options] --file FILE\n"
               "       edgerun tokenize -m MODEL [options] -        (text from standard input)",
               {{"text", 1}}))
        return 0;

    if (model.empty()) throw Error("no model: give -m MODEL", ER_E_INVALID_ARGUMENT);
    if (!file.empty() && have_text) throw Error("give the text or --file, not both", ER_E_INVALID_ARGUMENT);
    if (file.empty() && !have_text)
        throw Error("no text: give TEXT, --file FILE, or - to read standard input", ER_E_INVALID_ARGUMENT);
    if (!think.empty() && think != "on" && think != "off")
        throw Error("--think: expected on or off, not '" + think + "'", ER_E_INVALID_ARGUMENT);
    if (!chat && (!system.empty() || !template_options.name.empty() || !template_options.file.empty() || !think.empty()))
        throw Error("--system, --chat-template, --chat-template-file and --think need --chat", ER_E_INVALID_ARGUMENT);
    template_options.read();
    if (!file.empty()) {
        text = read_text_file(file, "--file");
    } else if (text == "-") {
        text = read_all(std::cin);
    }

    PluginRegistry registry = load_plugins(common);
    ModelFile model_file(format_plugin_for(registry, model), model);
    const text::Tokenizer tokenizer(text::Vocab::from_file(model_file));

    std::vector<text::TokenId> ids;
    if (chat) {
        const text::ChatTemplate tmpl = template_options.resolve(tokenizer);
        std::vector<text::ChatMessage> messages;
        if (!system.empty()) messages.push_back({"system", system});
        messages.push_back({"user", text});
        text::ChatOptions options;
        if (!think.empty()) options.enable_thinking = think == "on";
        ids = text::encode_chat_prompt(tokenizer, tmpl.format(messages, options), !no_bos);
    } else {
        ids = tokenizer.encode(text, !no_bos, special);
    }

    if (pieces) {
        for (text::TokenId id : ids) std::cout << id << " '" << printable(tokenizer.token_to_piece(id, true)) << "'\n";
    } else {
        for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
        std::cout << "\n";
    }
    return 0;
}

}  // namespace edgerun::cli
