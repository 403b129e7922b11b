// Configuration files: TOML whose keys are the command line's long option names.
// Precedence: command line, then the file, then built-in defaults.
#pragma once

#include <boost/program_options.hpp>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace edgerun {

// ~/.config/edgerun/edgerun.toml (or $XDG_CONFIG_HOME/edgerun/edgerun.toml) when it exists.
std::optional<std::filesystem::path> default_config_path();

// Options a config file cannot set: they say which file, or do not run anything.
inline const std::vector<std::string> kNotConfigurable = {"help", "version", "config"};

// Stores the file's values into `vm` for every option the command line left unset. Every
// key must name an option of `desc` (all but those in `not_configurable`) and its value
// must have that option's type; otherwise throws Error("FILE:LINE: ...") naming the key.
// A key in `other_commands_keys` is skipped: one file serves every command, so `port` in
// it is no mistake when a command without --port reads it.
void apply_config_file(const std::filesystem::path& file,
                       const boost::program_options::options_description& desc,
                       boost::program_options::variables_map& vm,
                       const std::vector<std::string>& not_configurable = kNotConfigurable,
                       const std::set<std::string>& other_commands_keys = {});

}  // namespace edgerun
