// edgerun_text_check: compares edgerun's tokenizers with reference data, in one process
// per vocabulary so the comparisons stay fast.
//
//   edgerun_text_check cases VOCAB CASES     ids, detokenization, attributes and pieces
//                                            against llama.cpp (tests/text/llama_reference.py)
//   edgerun_text_check inp VOCAB INP OUT     llama.cpp's test-tokenizer-0 vectors
//   edgerun_text_check chat CASES            chat templates against jinja2 (chat_reference.py)
//   edgerun_text_check probe VOCAB LEAD      for scripts/check_unicode_classes.py
//
// VOCAB is a model file, opened through the format plugin that claims it.
#include "text_check_util.hpp"

#include <edgerun/text/chat_template.hpp>
#include <edgerun/text/tokenizer.hpp>
#include <edgerun/text/unicode.hpp>

#include <fstream>
#include <map>
#include <iostream>
#include <sstream>

using namespace edgerun;
using namespace edgerun::text;
using namespace edgerun::text::test;

namespace {

std::string show(const std::string& bytes) {
    std::string out;
    for (unsigned char c : bytes) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out.push_back(char(c));
        }
    }
    return out;
}

std::string join(const std::vector<TokenId>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) s += ' ';
        s += std::to_string(ids[i]);
    }
    return s;
}

std::vector<TokenId> parse_ids(const std::string& line) {
    std::vector<TokenId> ids;
    std::istringstream in(line);
    for (long v; in >> v;) ids.push_back(TokenId(v));
    return ids;
}

int run_cases(const Tokenizer& tok, const std::string& label, const std::string& cases_path) {
    std::ifstream in(cases_path);
    if (!in) throw std::runtime_error("cannot open " + cases_path);
    std::string line;
    std::getline(in, line);
    if (line != "edgerun-tokenizer-cases 1") throw std::runtime_error(cases_path + ": not a cases file");

    int failures = 0, shown = 0;
    auto fail = [&](const std::string& what) {
        ++failures;
        if (shown++ < 25) std::cout << "  MISMATCH " << what << "\n";
    };
    int n_cases = 0, n_tokens_checked = 0, n_streams = 0;
    std::string word;
    std::string text;
    bool add_special = false, parse_special = false;
    std::vector<TokenId> got;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        ls >> word;
        if (word == "end") break;
        if (word == "bos" || word == "eos" || word == "eot" || word == "nl" || word == "pad" || word == "sep") {
            long want;
            ls >> want;
            const TokenId have = word == "bos" ? tok.bos() : word == "eos" ? tok.eos() : word == "eot" ? tok.eot()
                               : word == "nl" ? tok.newline() : word == "pad" ? tok.pad() : tok.sep();
            if (have != want) fail(word + ": want " + std::to_string(want) + ", have " + std::to_string(have));
        } else if (word == "add_bos" || word == "add_eos") {
            int want;
            ls >> want;
            const bool have = word == "add_bos" ? tok.add_bos() : tok.add_eos();
            if (have != bool(want)) fail(word + ": want " + std::to_string(want));
        } else if (word == "tokens") {
            long n;
            ls >> n;
            if (n != tok.n_tokens()) fail("token count " + std::to_string(n) + " vs " + std::to_string(tok.n_tokens()));
        } else if (word == "token") {
            long id;
            unsigned attr;
            int eog;
            std::string p0, p1;
            ls >> id >> attr >> eog >> p0 >> p1;
            ++n_tokens_checked;
            if (!tok.valid(TokenId(id))) continue;
            const std::string t = "token " + std::to_string(id) + " '" + show(tok.token_text(TokenId(id))) + "'";
            if (tok.token_attr(TokenId(id)) != attr)
                fail(t + ": attr want " + std::to_string(attr) + " have " + std::to_string(tok.token_attr(TokenId(id))));
            if (tok.is_eog(TokenId(id)) != bool(eog)) fail(t + ": eog want " + std::to_string(eog));
            if (tok.token_to_piece(TokenId(id), false) != unhex(p0))
                fail(t + ": piece want '" + show(unhex(p0)) + "' have '" + show(tok.token_to_piece(TokenId(id), false)) + "'");
            if (tok.token_to_piece(TokenId(id), true) != unhex(p1))
                fail(t + ": special piece want '" + show(unhex(p1)) + "'");
        } else if (word == "case") {
            std::string hex;
            int a, p;
            ls >> hex >> a >> p;
            text = unhex(hex);
            add_special = a, parse_special = p;
            got = tok.encode(text, add_special, parse_special);
            ++n_cases;
        } else if (word == "ids") {
            const std::vector<TokenId> want = parse_ids(line.substr(3));
            if (got != want)
                fail("'" + show(text) + "' add_special=" + std::to_string(add_special) + " parse_special=" +
                     std::to_string(parse_special) + "\n      want " + join(want) + "\n      have " + join(got));
        } else if (word == "stream") {
            std::string want;
            ls >> want;
            StreamDecoder stream(tok);
            std::string have;
            for (TokenId id : got) have += stream.push(id);
            have += stream.flush();
            if (have != unhex(want)) fail("stream '" + show(text) + "': want '" + show(unhex(want)) + "' have '" + show(have) + "'");
            ++n_streams;
        } else if (word == "detok") {
            std::string d0, d1;
            ls >> d0 >> d1;
            const std::string have0 = tok.decode(got, false, false), have1 = tok.decode(got, true, true);
            if (have0 != unhex(d0)) fail("detokenize '" + show(text) + "': want '" + show(unhex(d0)) + "' have '" + show(have0) + "'");
            if (have1 != unhex(d1)) fail("detokenize(special) '" + show(text) + "': want '" + show(unhex(d1)) + "' have '" + show(have1) + "'");
        }
    }
    std::cout << label << ": " << n_cases << " encodings (with detokenization), " << n_streams << " streamed decodings, "
              << n_tokens_checked << " token pieces/attributes; " << failures << " mismatches\n";
    return failures == 0 ? 0 : 1;
}

// llama.cpp's test-tokenizer-0: strings between "\n__ggml_vocab_test__\n" separators,
// tokenized without special tokens; each .out line holds the expected ids.
int run_inp(const Tokenizer& tok, const std::string& label, const std::string& inp, const std::string& out) {
    std::ifstream fi(inp, std::ios::binary), fo(out);
    if (!fi || !fo) throw std::runtime_error("cannot open " + inp + " or " + out);
    const std::string raw((std::istreambuf_iterator<char>(fi)), std::istreambuf_iterator<char>());
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < raw.size();) {
        const size_t next = raw.find(sep, pos);
        if (next == std::string::npos) {
            texts.push_back(raw.substr(pos));
            break;
        }
        texts.push_back(raw.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::vector<std::string> lines;
    for (std::string l; std::getline(fo, l);) lines.push_back(l);
    if (texts.size() != lines.size()) {
        std::cout << label << ": " << texts.size() << " strings but " << lines.size() << " expected lines\n";
        return 1;
    }
    int pass = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        const auto want = parse_ids(lines[i]);
        const auto have = tok.encode(texts[i], /*add_special=*/false, /*parse_special=*/false);
        if (have == want) ++pass;
        else std::cout << "  MISMATCH '" << show(texts[i]) << "'\n      want " << join(want) << "\n      have " << join(have) << "\n";
    }
    std::cout << label << ": " << pass << "/" << texts.size() << " strings match\n";
    return pass == int(texts.size()) ? 0 : 1;
}

// Chat templates against jinja2 renderings of the published templates (chat_reference.py).
int run_chat(const std::string& cases_path) {
    std::ifstream in(cases_path);
    if (!in) throw std::runtime_error("cannot open " + cases_path);
    std::string line;
    std::getline(in, line);
    if (line != "edgerun-chat-cases 1") throw std::runtime_error(cases_path + ": not a chat cases file");
    int n = 0, failures = 0;
    std::map<std::string, std::pair<int, int>> per_template;  // name -> (pass, total)
    std::string name, family, source, bos, eos;
    ChatOptions options;
    std::vector<ChatMessage> messages;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string word;
        ls >> word;
        if (word == "case") {
            std::string src_hex, bos_hex, eos_hex, date_hex;
            int add_gen, thinking;
            ls >> name >> family >> src_hex >> bos_hex >> eos_hex >> add_gen >> thinking >> date_hex;
            source = unhex(src_hex), bos = unhex(bos_hex), eos = unhex(eos_hex);
            options = ChatOptions{};
            options.add_generation_prompt = add_gen != 0;
            if (thinking >= 0) options.enable_thinking = thinking != 0;
            options.date_string = unhex(date_hex);
            messages.clear();
        } else if (word == "tool") {
            std::string tool;
            ls >> tool;
            options.tools.push_back(unhex(tool));
        } else if (word == "msg") {
            std::string role, content;
            ls >> role >> content;
            messages.push_back({unhex(role), unhex(content)});
        } else if (word == "reasoning") {
            std::string reasoning;
            ls >> reasoning;
            messages.back().reasoning_content = unhex(reasoning);
        } else if (word == "call") {
            std::string name, arguments;
            ls >> name >> arguments;
            messages.back().tool_calls.push_back({unhex(name), unhex(arguments)});
        } else if (word == "want") {
            std::string want_hex;
            ls >> want_hex;
            ++n;
            auto& tally = per_template[name];
            ++tally.second;
            std::string have, problem;
            bool threw = false;
            try {
                const ChatTemplate tmpl = ChatTemplate::detect(source, bos, eos);
                if (tmpl.name() != family) problem = "detected as " + tmpl.name() + ", want " + family;
                have = tmpl.format(messages, options);
            } catch (const Error& e) {
                threw = true;
                have = e.what();
            }
            if (problem.empty()) {
                if (want_hex == "error") {
                    if (!threw) problem = "the template raises, edgerun formatted '" + show(have) + "'";
                } else if (threw) {
                    problem = "edgerun refused: " + have;
                } else if (have != unhex(want_hex)) {
                    problem = "want '" + show(unhex(want_hex)) + "'\n      have '" + show(have) + "'";
                }
            }
            if (problem.empty()) {
                ++tally.first;
                continue;
            }
            ++failures;
            std::string conv;
            for (const auto& m : messages) conv += " [" + m.role + ": " + show(m.content) + "]";
            std::cout << "  MISMATCH " << name << conv << " gen=" << options.add_generation_prompt << "\n      "
                      << problem << "\n";
        }
    }
    for (const auto& [t, tally] : per_template)
        std::cout << "chat template " << t << ": " << tally.first << "/" << tally.second << " cases match\n";
    std::cout << "chat templates: " << n - failures << "/" << n << " cases match\n";
    return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::vector<std::string> args(argv + 1, argv + argc);
        if (args.size() == 3 && args[0] == "cases") {
            const Tokenizer tok(load_test_vocab(args[1]));
            return run_cases(tok, args[1], args[2]);
        }
        if (args.size() == 4 && args[0] == "inp") {
            const Tokenizer tok(load_test_vocab(args[1]));
            return run_inp(tok, args[1], args[2], args[3]);
        }
        if (args.size() == 2 && args[0] == "chat") return run_chat(args[1]);
        if (args.size() == 3 && args[0] == "probe") {
            // For scripts/check_unicode_classes.py: the code points c for which LEAD + c
            // starts with a merged token (id >= 256 in its probe vocabulary), as ranges.
            const Tokenizer tok(load_test_vocab(args[1]));
            long start = -1;
            for (uint32_t cp = 0; cp <= 0x110000; ++cp) {
                bool joined = false;
                if (cp < 0x110000) {
                    std::string text = args[2];
                    append_utf8(text, cp);
                    const auto ids = tok.encode(text, false, false);
                    joined = !ids.empty() && ids[0] >= 256;
                }
                if (joined && start < 0) start = cp;
                if (!joined && start >= 0) {
                    std::cout << start << " " << cp - 1 << "\n";
                    start = -1;
                }
            }
            return 0;
        }
        if (args.size() >= 3 && args[0] == "encode") {  // debugging: ids of hex-encoded texts
            const Tokenizer tok(load_test_vocab(args[1]));
            for (size_t i = 2; i < args.size(); ++i) std::cout << join(tok.encode(unhex(args[i]), false, false)) << "\n";
            return 0;
        }
        std::cerr << "usage: edgerun_text_check cases VOCAB CASES | inp VOCAB INP OUT | encode VOCAB HEX...\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "edgerun_text_check: " << e.what() << "\n";
        return 1;
    }
}
