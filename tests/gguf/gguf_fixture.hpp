// Test helpers: the formats_gguf plugin loaded the way the host loads it (through the
// registry and its C ABI), and files written to a per-process temp folder.
#pragma once

#include "../build_plugins.hpp"
#include "gguf_builder.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/plugin_registry.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace gguf_test {

inline const edgerun::Plugin& gguf_plugin() {
    const edgerun::Plugin* plugin = build_plugins().find(ER_PLUGIN_FORMAT, "formats_gguf");
    REQUIRE(plugin != nullptr);
    return *plugin;
}

inline const er_format_iface& iface() { return *gguf_plugin().iface<er_format_iface>(); }

// A folder of this process's own (tests run in parallel processes), removed at exit.
inline std::filesystem::path temp_dir() {
    struct Folder {
        std::filesystem::path path = std::filesystem::path(EDGERUN_TEST_TMP) / ("gguf_" + std::to_string(::getpid()));
        Folder() {
            std::filesystem::remove_all(path);
            std::filesystem::create_directories(path);
        }
        ~Folder() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static const Folder folder;
    return folder.path;
}

inline std::string write_file(const std::string& bytes, const std::string& name = "test.gguf") {
    const auto path = (temp_dir() / name).string();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
}

// An er_file opened through the ABI, closed on scope exit.
struct Opened {
    er_file* file = nullptr;
    er_status status = ER_OK;
    std::string message;

    Opened() = default;
    Opened(const Opened&) = delete;
    Opened& operator=(const Opened&) = delete;
    ~Opened() {
        if (file) iface().close(file);
    }
};

inline void open_path(const std::string& path, Opened& out) {
    er_error err{};
    out.status = iface().open(path.c_str(), &out.file, &err);
    out.message = out.status == ER_OK ? "" : err.message;
}

// The one-line error opening these bytes gives ("" when the file opens).
inline std::string open_error(const std::string& bytes) {
    Opened opened;
    open_path(write_file(bytes), opened);
    if (opened.status != ER_OK) CHECK(opened.status == ER_E_FORMAT);
    CHECK(opened.message.find('\n') == std::string::npos);
    return opened.message;
}

// Opens bytes that must open.
inline void open_ok(const std::string& bytes, Opened& out, const std::string& name = "ok.gguf") {
    open_path(write_file(bytes, name), out);
    INFO(out.message);
    REQUIRE(out.status == ER_OK);
}

inline std::string str_of(er_str s) { return std::string(s.data ? s.data : "", s.size); }

}  // namespace gguf_test
