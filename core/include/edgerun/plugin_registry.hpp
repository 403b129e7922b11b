// Finds plugin libraries, loads them with Boost.DLL, checks the ABI handshake and keeps
// the ones that pass. A plugin that fails is recorded with its file and the reason, and
// never stops the others from loading.
#pragma once

#include <edgerun/host_api.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace edgerun {

struct PluginFailure {
    std::string path;
    std::string reason;  // one line
};

class PluginRegistry {
public:
    PluginRegistry();

    // Loads every libedgerun_*.so in `dir` (not recursive). A missing directory is not an
    // error: the default search path names folders that exist only in some layouts.
    void scan_directory(const std::filesystem::path& dir);
    // Loads one library; returns false (and records why) when it is refused.
    bool load_file(const std::filesystem::path& file);

    const std::vector<Plugin>& plugins() const { return plugins_; }
    const std::vector<PluginFailure>& failures() const { return failures_; }

    const Plugin* find(int32_t kind, std::string_view name) const;
    std::vector<const Plugin*> of_kind(int32_t kind) const;

    // Where plugins are looked for, in priority order (the first plugin of a name wins):
    // the --plugin-dir folders, EDGERUN_PLUGIN_PATH (colon separated), the build tree
    // next to the running binary, the install prefix.
    static std::vector<std::filesystem::path> search_path(const std::vector<std::string>& plugin_dirs);

    // Convenience: scan the whole search path.
    static PluginRegistry discover(const std::vector<std::string>& plugin_dirs);

private:
    std::vector<Plugin> plugins_;
    std::vector<PluginFailure> failures_;
};

std::string_view plugin_kind_name(int32_t kind);

// The er_host every plugin gets: routes plugin log lines to the host's spdlog logger.
const er_host* plugin_host();

}  // namespace edgerun
