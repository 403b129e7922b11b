// The plugins this build made (EDGERUN_BUILD_PLUGIN_DIR, set by the test's CMake
// target), loaded once per test binary.
#pragma once

#include <edgerun/plugin_registry.hpp>

inline const edgerun::PluginRegistry& build_plugins() {
    static const edgerun::PluginRegistry registry = [] {
        edgerun::PluginRegistry r;
        r.scan_directory(EDGERUN_BUILD_PLUGIN_DIR);
        return r;
    }();
    return registry;
}
