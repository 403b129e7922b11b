// edgerun plugins: what was found, and why anything that was found was refused.
#include "cli.hpp"
#include "commands.hpp"

#include <iomanip>
#include <iostream>

namespace edgerun::cli {

int cmd_plugins(const std::vector<std::string>& args) {
    CommonOptions common;
    po::options_description desc("edgerun plugins options");
    if (!parse(args, desc, common, "usage: edgerun plugins [--plugin-dir DIR]...")) return 0;

    PluginRegistry registry = load_plugins(common);
    std::cout << std::left << std::setw(9) << "KIND" << std::setw(16) << "NAME" << std::setw(10) << "VERSION"
              << std::setw(5) << "ABI" << "PATH\n";
    for (const Plugin& plugin : registry.plugins()) {
        std::cout << std::setw(9) << plugin_kind_name(plugin.kind()) << std::setw(16) << plugin.name()
                  << std::setw(10) << plugin.desc->version << std::setw(5) << plugin.desc->abi_version
                  << plugin.path << "\n";
    }
    if (registry.plugins().empty()) std::cout << "(no plugins found)\n";
    for (const PluginFailure& failure : registry.failures())
        std::cout << "error: " << failure.path << ": " << failure.reason << "\n";
    return 0;
}

}  // namespace edgerun::cli
