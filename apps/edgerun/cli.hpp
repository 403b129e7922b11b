// What every edgerun subcommand shares: option parsing with the config file merged in,
// logging set-up, and the plugin registry.
#pragma once

#include <edgerun/plugin_registry.hpp>
#include <edgerun/text/chat_template.hpp>

#include <boost/program_options.hpp>

#include <functional>
#include <string>
#include <vector>

namespace edgerun::cli {

namespace po = boost::program_options;

struct Command {
    const char* name;
    const char* summary;
    int (*run)(const std::vector<std::string>& args);
};

// Options every command takes.
struct CommonOptions {
    std::vector<std::string> plugin_dirs;
    std::string log_level = "warn";
    std::string config;
};

void add_common_options(po::options_description& desc, CommonOptions& common);

// Every command of the binary, plain generation included (main.cpp's table), so that a
// config file's key that only another command takes is not called unknown (parse).
void set_commands(std::vector<int (*)(const std::vector<std::string>&)> commands);

// Parses `args` against `desc` (plus the common options), merges the config file, sets up
// logging. Returns false when --help was asked for (the help has been printed), or while
// the commands' option names are being collected (set_commands): a command returns at
// once when parse does, so running it then only describes its options.
// `positional` names the options that bare arguments fill, in order.
bool parse(const std::vector<std::string>& args, po::options_description& desc, CommonOptions& common,
           const char* usage, const std::vector<std::pair<const char*, int>>& positional = {});

PluginRegistry load_plugins(const CommonOptions& common);

// The whole of a text file named by a command-line option (a pipe or /dev/stdin too); a
// folder or an unreadable path is an error naming the option and the path.
std::string read_text_file(const std::string& path, const std::string& option);

// --chat-template NAME and --chat-template-file FILE (a Jinja template whose family is
// recognised as a model file's is), for the commands that format chats.
struct ChatTemplateOptions {
    std::string name, file;
    std::string source;  // the file's text
    void add_to(po::options_description& desc, const char* prefix = "");
    // Reads the file, and refuses both options at once: before the model loads.
    void read();
    // The model's own template unless one of the options says otherwise.
    text::ChatTemplate resolve(const text::Tokenizer& tokenizer) const;
};

}  // namespace edgerun::cli
