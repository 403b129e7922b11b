// Test helpers: hex strings, and a model file's vocabulary through the format plugins.
#pragma once

#include <edgerun/host_api.hpp>
#include <edgerun/model.hpp>
#include <edgerun/plugin_registry.hpp>
#include <edgerun/text/vocab.hpp>

#include <string>

namespace edgerun::text::test {

inline std::string unhex(const std::string& hex) {
    if (hex == "-") return {};
    std::string out;
    out.reserve(hex.size() / 2);
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

// A model file's vocabulary through the format plugin that claims the file.
inline Vocab load_test_vocab(const std::string& path) {
    static PluginRegistry registry = PluginRegistry::discover({});
    ModelFile file(format_plugin_for(registry, path), path);
    return Vocab::from_file(file);
}

}  // namespace edgerun::text::test
