#include "cli.hpp"

#include <edgerun/config.hpp>
#include <edgerun/logging.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>

namespace edgerun::cli {

namespace {

std::vector<int (*)(const std::vector<std::string>&)> g_commands;
std::set<std::string>* g_collected_names = nullptr;  // set while commands describe their options

// The long option names of every command: each command run with no arguments while parse
// collects its options' names and returns before the command does anything.
const std::set<std::string>& every_command_option() {
    static const std::set<std::string> names = [] {
        std::set<std::string> collected;
        g_collected_names = &collected;
        for (const auto& run : g_commands) run({});
        g_collected_names = nullptr;
        return collected;
    }();
    return names;
}

}  // namespace

void set_commands(std::vector<int (*)(const std::vector<std::string>&)> commands) { g_commands = std::move(commands); }

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
    if (g_collected_names) {
        for (const auto& option : desc.options()) g_collected_names->insert(option->long_name());
        return false;
    }
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
            throw Error("--config: " + file.string() +
                            (std::filesystem::exists(file, ec) ? ": not a regular file" : ": no such file"),
                        ER_E_INVALID_ARGUMENT);
        apply_config_file(file, desc, vm, kNotConfigurable, every_command_option());
    } else if (auto file = default_config_path()) {
        apply_config_file(*file, desc, vm, kNotConfigurable, every_command_option());
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
    for (const std::string& dir : common.plugin_dirs) {  // a mistyped folder would find nothing, silently
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec))
            throw Error("--plugin-dir: " + dir + (std::filesystem::exists(dir, ec) ? " is not a folder" : ": no such folder"),
                        ER_E_INVALID_ARGUMENT);
    }
    return PluginRegistry::discover(common.plugin_dirs);
}

std::string read_text_file(const std::string& path, const std::string& option) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw Error(option + ": " + path + " is a folder, not a file", ER_E_INVALID_ARGUMENT);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(option + ": cannot read " + path, ER_E_INVALID_ARGUMENT);
    try {
        return std::string(std::istreambuf_iterator<char>(in), {});
    } catch (const std::ios_base::failure& e) {
        throw Error(option + ": cannot read " + path + ": " + e.what(), ER_E_INVALID_ARGUMENT);
    }
}

void ChatTemplateOptions::add_to(po::options_description& desc, const char* prefix) {
    desc.add_options()
        ("chat-template", po::value(&name),
         (std::string(prefix) + "use this template family instead of the model's own: " + text::ChatTemplate::name_list()).c_str())
        ("chat-template-file", po::value(&file),
         (std::string(prefix) + "use this Jinja template instead of the model's own (its family is recognised as a "
          "model's template's is)").c_str());
}

void ChatTemplateOptions::read() {
    if (!name.empty() && !file.empty())
        throw Error("--chat-template and --chat-template-file: give one or the other", ER_E_INVALID_ARGUMENT);
    if (!file.empty()) {
        source = read_text_file(file, "--chat-template-file");
        if (source.empty()) throw Error("--chat-template-file: " + file + " is empty", ER_E_INVALID_ARGUMENT);
    }
}

text::ChatTemplate ChatTemplateOptions::resolve(const text::Tokenizer& tokenizer) const {
    return text::chat_template_for(tokenizer, name, source);
}

}  // namespace edgerun::cli
