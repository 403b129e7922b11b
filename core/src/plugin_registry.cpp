#include <edgerun/plugin_registry.hpp>

#include "plugin_elf.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <spdlog/spdlog.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

namespace edgerun {
namespace {

std::string one_line(std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    std::replace(text.begin(), text.end(), '\r', ' ');
    return text;
}

bool is_plugin_file_name(const std::filesystem::path& file) {
    const std::string name = file.filename().string();
    const std::string suffix = boost::dll::shared_library::suffix().string();
    return name.rfind("libedgerun_", 0) == 0 && name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Why dlopen refused a library, from dlerror(), less the path it starts with (the caller
// names the file). boost::dll's error_code holds only a fixed "Bad file descriptor" for
// every failure, which is no reason at all; its non-throwing load leaves dlerror() set.
std::string dlopen_reason(const std::string& path) {
    const char* text = ::dlerror();
    if (!text || !*text) return "dlopen gave no reason";
    std::string reason = text;
    for (const std::string& prefix : {path + ": ", "./" + path + ": "})
        if (reason.rfind(prefix, 0) == 0) return reason.substr(prefix.size());
    return reason;
}

// The entries of each interface a host may call without checking for NULL.
template <typename Iface>
std::vector<std::pair<const char*, bool>> required_entries(const Iface& iface);

template <>
std::vector<std::pair<const char*, bool>> required_entries(const er_format_iface& f) {
    return {{"probe", f.probe != nullptr},           {"open", f.open != nullptr},
            {"close", f.close != nullptr},           {"meta_count", f.meta_count != nullptr},
            {"meta_at", f.meta_at != nullptr},       {"meta_find", f.meta_find != nullptr},
            {"meta_array_at", f.meta_array_at != nullptr}, {"tensor_count", f.tensor_count != nullptr},
            {"tensor_at", f.tensor_at != nullptr},   {"model_desc", f.model_desc != nullptr},
            {"vocab_desc", f.vocab_desc != nullptr}, {"vocab_token", f.vocab_token != nullptr},
            {"vocab_merge", f.vocab_merge != nullptr}};
}

template <>
std::vector<std::pair<const char*, bool>> required_entries(const er_backend_iface& b) {
    return {{"device_count", b.device_count != nullptr},   {"device_info", b.device_info != nullptr},
            {"create", b.create != nullptr},               {"destroy", b.destroy != nullptr},
            {"supports", b.supports != nullptr},           {"model_load", b.model_load != nullptr},
            {"model_free", b.model_free != nullptr},       {"context_create", b.context_create != nullptr},
            {"context_free", b.context_free != nullptr},   {"plan_create", b.plan_create != nullptr},
            {"plan_free", b.plan_free != nullptr},         {"plan_set_input", b.plan_set_input != nullptr},
            {"plan_execute", b.plan_execute != nullptr},   {"plan_get_output", b.plan_get_output != nullptr}};
}

template <>
std::vector<std::pair<const char*, bool>> required_entries(const er_sampler_iface& s) {
    return {{"create", s.create != nullptr}, {"destroy", s.destroy != nullptr},
            {"reset", s.reset != nullptr},   {"accept", s.accept != nullptr},
            {"sample", s.sample != nullptr}, {"is_greedy", s.is_greedy != nullptr}};
}

// Checks an interface's size and required entries; returns a reason, empty when fine.
template <typename Iface>
std::string check_iface(const er_plugin& desc, const char* iface_name) {
    const auto* iface = static_cast<const Iface*>(desc.iface);
    if (!iface) return std::string("descriptor has no ") + iface_name;
    if (iface->struct_size != sizeof(Iface)) {
        std::ostringstream out;
        out << iface_name << " struct size is " << iface->struct_size << ", this host expects "
            << sizeof(Iface) << " (built against another edgerun SDK)";
        return out.str();
    }
    for (const auto& [entry, present] : required_entries(*iface))
        if (!present) return std::string(iface_name) + " lacks the required entry '" + entry + "'";
    return {};
}

std::string check_descriptor(const er_plugin* desc) {
    if (!desc) return "entry returned success but no descriptor";
    if (desc->struct_size != sizeof(er_plugin)) {
        std::ostringstream out;
        out << "descriptor struct size is " << desc->struct_size << ", this host expects "
            << sizeof(er_plugin) << " (built against another edgerun SDK)";
        return out.str();
    }
    if (desc->abi_version != ER_ABI_VERSION) {
        std::ostringstream out;
        out << "built for plugin ABI " << desc->abi_version << ", this host speaks ABI " << ER_ABI_VERSION;
        return out.str();
    }
    if (!desc->name || !*desc->name) return "descriptor has no name";
    // A name is what --backend and the listings print: control characters in it would
    // rewrite the user's terminal, or pass for a line of the listing.
    for (const char* c = desc->name; *c; ++c)
        if (static_cast<unsigned char>(*c) < 0x20 || *c == 0x7f)
            return "descriptor's name holds a control character (byte " + std::to_string(static_cast<unsigned char>(*c)) + ")";
    switch (desc->kind) {
        case ER_PLUGIN_FORMAT: return check_iface<er_format_iface>(*desc, "format interface");
        case ER_PLUGIN_BACKEND: return check_iface<er_backend_iface>(*desc, "backend interface");
        case ER_PLUGIN_SAMPLER: return check_iface<er_sampler_iface>(*desc, "sampler interface");
        default: return "unknown plugin kind " + std::to_string(desc->kind);
    }
}

void log_from_plugin(void*, int32_t level, const char* plugin_name, const char* message) {
    static constexpr spdlog::level::level_enum levels[] = {
        spdlog::level::trace, spdlog::level::debug, spdlog::level::info, spdlog::level::warn,
        spdlog::level::err};
    auto lvl = levels[std::clamp(level, 0, 4)];
    spdlog::log(lvl, "[{}] {}", plugin_name ? plugin_name : "?", message ? message : "");
}

}  // namespace

std::string_view plugin_kind_name(int32_t kind) {
    switch (kind) {
        case ER_PLUGIN_FORMAT: return "format";
        case ER_PLUGIN_BACKEND: return "backend";
        case ER_PLUGIN_SAMPLER: return "sampler";
        default: return "?";
    }
}

const er_host* plugin_host() {
    static er_host host = [] {
        er_host h{};
        h.struct_size = sizeof(er_host);
        h.abi_version = ER_ABI_VERSION;
        h.user_data = nullptr;
        h.log = &log_from_plugin;
        return h;
    }();
    // Follow the logger's level as it is now, so plugins skip formatting what nobody prints.
    host.log_level = static_cast<int32_t>(std::min<int>(spdlog::get_level(), ER_LOG_ERROR));
    return &host;
}

PluginRegistry::PluginRegistry() = default;

bool PluginRegistry::load_file(const std::filesystem::path& file) {
    const std::string path = file.string();
    auto fail = [&](const std::string& reason) {
        failures_.push_back({path, one_line(reason)});
        spdlog::debug("plugin {} refused: {}", path, reason);
        return false;
    };

    if (std::string reason = plugin_elf_refusal(path); !reason.empty()) return fail(reason);
    // rtld_now: an unresolved symbol fails here, with a message, not at first use.
    // rtld_local: plugins never see each other's symbols.
    boost::dll::fs::error_code error;
    auto library = std::make_shared<boost::dll::shared_library>(
        boost::dll::fs::path(path), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, error);
    if (error) return fail("not a loadable shared library: " + dlopen_reason(path));
    if (!library->has(ER_ENTRY_SYMBOL))
        return fail(std::string("no entry symbol '") + ER_ENTRY_SYMBOL + "' (not an edgerun plugin)");

    auto entry = library->get<er_status(const er_host*, const er_plugin**, er_error*)>(ER_ENTRY_SYMBOL);
    const er_plugin* desc = nullptr;
    er_error err{};
    er_status status = entry(plugin_host(), &desc, &err);
    if (status != ER_OK)
        return fail(std::string("plugin entry failed: ") + (err.message[0] ? err.message : "no message"));
    if (std::string reason = check_descriptor(desc); !reason.empty()) return fail(reason);

    if (find(desc->kind, desc->name)) {
        spdlog::debug("plugin {} skipped: a {} plugin named '{}' was found earlier in the search path", path,
                      plugin_kind_name(desc->kind), desc->name);
        return true;
    }
    plugins_.push_back(Plugin{desc, std::shared_ptr<const void>(library, library.get()), path});
    spdlog::debug("loaded {} plugin '{}' from {}", plugin_kind_name(desc->kind), desc->name, path);
    return true;
}

void PluginRegistry::scan_directory(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
        if (is_plugin_file_name(entry.path())) files.push_back(entry.path());
    std::sort(files.begin(), files.end());  // the same order on every file system
    for (const auto& file : files) load_file(file);
}

const Plugin* PluginRegistry::find(int32_t kind, std::string_view name) const {
    for (const auto& plugin : plugins_)
        if (plugin.kind() == kind && plugin.name() == name) return &plugin;
    return nullptr;
}

std::vector<const Plugin*> PluginRegistry::of_kind(int32_t kind) const {
    std::vector<const Plugin*> out;
    for (const auto& plugin : plugins_)
        if (plugin.kind() == kind) out.push_back(&plugin);
    return out;
}

std::vector<std::filesystem::path> PluginRegistry::search_path(const std::vector<std::string>& plugin_dirs) {
    std::vector<std::filesystem::path> dirs(plugin_dirs.begin(), plugin_dirs.end());
    if (const char* env = std::getenv("EDGERUN_PLUGIN_PATH")) {
        std::stringstream list(env);
        std::string item;
        while (std::getline(list, item, ':'))
            if (!item.empty()) dirs.emplace_back(item);
    }
    std::filesystem::path exe_dir = boost::dll::program_location().parent_path().string();
    dirs.push_back(exe_dir.parent_path() / "plugins");                    // build tree
    dirs.push_back(exe_dir.parent_path() / EDGERUN_PLUGIN_REL_DIR);          // relocated install
    dirs.emplace_back(EDGERUN_INSTALL_PLUGIN_DIR);                          // configured prefix
    // The same folder named twice would only produce "skipped duplicate" noise.
    std::vector<std::filesystem::path> unique;
    std::set<std::filesystem::path> seen;
    for (auto& dir : dirs) {
        std::error_code ec;
        auto canonical = std::filesystem::weakly_canonical(dir, ec);
        if (seen.insert(ec ? dir : canonical).second) unique.push_back(dir);
    }
    return unique;
}

PluginRegistry PluginRegistry::discover(const std::vector<std::string>& plugin_dirs) {
    PluginRegistry registry;
    for (const auto& dir : search_path(plugin_dirs)) registry.scan_directory(dir);
    return registry;
}

}  // namespace edgerun
