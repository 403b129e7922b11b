#include "cli.hpp"

#include <edgerun/config.hpp>
#include <edgerun/logging.hpp>

#include <iostream>

namespace edgerun::cli {

void add_common_options(po::options_description& desc, CommonOptions& common) {
    desc.add_options()
        ("help,h", "show this help")
        ("config", po::value(&common.config), "TOML file of option values (default ~/.config/edgerun/edgerun.toml)")
        ("plugin-dir", po::value(&common.plugin_dirs)->composing(), "also look for plugins here (repeatable)")
        ("log-level", po::value(&common.log_level)->default_value(common.log_level),
         "trace, debug, info, warn, error or off");
}

bool parse(const std::vector<std::string>& args, po::options_description& desc, CommonOptions& common,
           const char* usage, const std::vector<std::pair<const char*, int>>& positional) {
    add_common_options(desc, common);
    po::positional_options_description pos;
    for (const auto& [name, count] : positional) pos.add(name, count);

    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    } catch (const po::error& e) {
        throw Error(e.what(), ER_E_INVALID_ARGUMENT);
    }
    if (vm.count("help")) {
        std::cout << usage << "\n\n" << desc << "\n";
        return false;
    }
    if (vm.count("config")) {
        std::filesystem::path file = vm["config"].as<std::string>();
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec))
            throw Error("--config: no such file: " + file.string(), ER_E_INVALID_ARGUMENT);
        apply_config_file(file, desc, vm);
    } else if (auto file = default_config_path()) {
        apply_config_file(*file, desc, vm);
    }
    try {
        po::notify(vm);
    } catch (const po::error& e) {
        throw Error(e.what(), ER_E_INVALID_ARGUMENT);
    }
    init_logging(common.log_level);
    return true;
}

PluginRegistry load_plugins(const CommonOptions& common) {
    return PluginRegistry::discover(common.plugin_dirs);
}

}  // namespace edgerun::cli
