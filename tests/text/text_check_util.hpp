// Test helpers: hex strings and loading a vocabulary from a model file (through the
// format plugins) or from llama_reference.py's dump.
#pragma once

#include <edgerun/host_api.hpp>
#include <edgerun/plugin_registry.hpp>
#include <edgerun/text/vocab.hpp>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace edgerun::text::test {

inline std::string unhex(const std::string& hex) {
    if (hex == "-") return {};
    std::string out;
    out.reserve(hex.size() / 2);
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

inline Vocab load_vocab_dump(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::string line, key;
    std::getline(in, line);
    if (line != "edgerun-vocab-dump 1") throw std::runtime_error(path + ": not a vocabulary dump");
    Vocab v;
    auto id = [](long x) { return x < 0 ? std::optional<TokenId>() : std::optional<TokenId>(TokenId(x)); };
    auto flag = [](long x) { return x < 0 ? std::optional<bool>() : std::optional<bool>(x != 0); };
    while (in >> key) {
        if (key == "kind") in >> v.kind;
        else if (key == "model" || key == "pre" || key == "name" || key == "template") {
            std::string hex;
            in >> hex;
            (key == "model" ? v.model : key == "pre" ? v.pre : key == "name" ? v.model_name : v.chat_template) = unhex(hex);
        } else if (key == "tokens") {
            size_t n;
            in >> n;
            v.tokens.resize(n);
            for (auto& t : v.tokens) {
                std::string hex, score;
                in >> hex >> score >> t.type;
                t.text = unhex(hex);
                t.score = std::stof(score);
            }
        } else if (key == "merges") {
            size_t n;
            in >> n;
            v.merges.resize(n);
            for (auto& m : v.merges) {
                std::string hex;
                in >> hex;
                m = unhex(hex);
            }
        } else {
            long x;
            in >> x;
            if (key == "bos") v.bos = id(x);
            else if (key == "eos") v.eos = id(x);
            else if (key == "eot") v.eot = id(x);
            else if (key == "eom") v.eom = id(x);
            else if (key == "unk") v.unk = id(x);
            else if (key == "pad") v.pad = id(x);
            else if (key == "sep") v.sep = id(x);
            else if (key == "fim_pre") v.fim_pre = id(x);
            else if (key == "fim_suf") v.fim_suf = id(x);
            else if (key == "fim_mid") v.fim_mid = id(x);
            else if (key == "fim_pad") v.fim_pad = id(x);
            else if (key == "fim_rep") v.fim_rep = id(x);
            else if (key == "fim_sep") v.fim_sep = id(x);
            else if (key == "add_bos") v.add_bos = flag(x);
            else if (key == "add_eos") v.add_eos = flag(x);
            else if (key == "add_space_prefix") v.add_space_prefix = flag(x);
            else throw std::runtime_error(path + ": unknown key " + key);
        }
    }
    return v;
}

// A model file through the format plugin whose probe scores highest.
inline Vocab load_vocab_file(const std::string& path) {
    static PluginRegistry registry = PluginRegistry::discover({});
    const Plugin* best = nullptr;
    int32_t best_score = 0;
    for (const Plugin* p : registry.of_kind(ER_PLUGIN_FORMAT)) {
        int32_t score = 0;
        er_error err{};
        if (p->iface<er_format_iface>()->probe(path.c_str(), &score, &err) == ER_OK && score > best_score)
            best = p, best_score = score;
    }
    if (!best) throw std::runtime_error("no format plugin reads " + path);
    ModelFile file(*best, path);
    return Vocab::from_file(file);
}

inline Vocab load_test_vocab(const std::string& path) {
    const bool dump = path.size() > 6 && path.compare(path.size() - 6, 6, ".vocab") == 0;
    return dump ? load_vocab_dump(path) : load_vocab_file(path);
}

}  // namespace edgerun::text::test
