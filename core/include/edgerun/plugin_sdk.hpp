// Plugin-side helpers: the C ABI (abi.h) stays C, this header lets a C++ plugin write
// idiomatic code behind it. Header-only, so a third-party plugin needs no library of
// ours, only these headers.
//
//   static const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_BACKEND,
//                                     "mybackend", "1.0", "what it does", &kIface};
//   EDGERUN_DEFINE_PLUGIN(kPlugin)
//
//   er_status my_entry(..., er_error* err) {
//       return edgerun::sdk::guard(err, [&] { ...; throw edgerun::sdk::Failure(ER_E_FORMAT, "..."); });
//   }
#pragma once

#include <edgerun/abi.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <type_traits>
#include <string>
#include <string_view>

namespace edgerun::sdk {

// Thrown inside a plugin, turned into a status by guard(); never crosses the ABI.
class Failure : public std::exception {
public:
    Failure(er_status code, std::string message) : code_(code), message_(std::move(message)) {}
    er_status code() const noexcept { return code_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    er_status code_;
    std::string message_;
};

inline er_status set_error(er_error* err, er_status code, std::string_view message) {
    if (err) {
        err->code = code;
        size_t n = message.size() < ER_ERROR_MESSAGE_CAP - 1 ? message.size() : ER_ERROR_MESSAGE_CAP - 1;
        std::memcpy(err->message, message.data(), n);
        err->message[n] = '\0';
        // One line: a message must never break the host's output format.
        for (size_t i = 0; i < n; ++i)
            if (err->message[i] == '\n' || err->message[i] == '\r') err->message[i] = ' ';
    }
    return code;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
inline er_status set_errorf(er_error* err, er_status code, const char* format, ...) {
    char buffer[ER_ERROR_MESSAGE_CAP];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buffer, sizeof buffer, format, args);
    va_end(args);
    return set_error(err, code, buffer);
}

// Runs `body` and turns any exception into a status and message. `body` returns void or
// er_status.
template <typename Body>
er_status guard(er_error* err, Body&& body) noexcept {
    try {
        if constexpr (std::is_same_v<decltype(body()), void>) {
            body();
            return ER_OK;
        } else {
            return body();
        }
    } catch (const Failure& f) {
        return set_error(err, f.code(), f.what());
    } catch (const std::bad_alloc&) {
        return set_error(err, ER_E_OUT_OF_MEMORY, "out of host memory");
    } catch (const std::exception& e) {
        return set_error(err, ER_E_INTERNAL, e.what());
    } catch (...) {
        return set_error(err, ER_E_INTERNAL, "unknown exception inside plugin");
    }
}

inline er_str make_str(std::string_view s) { return er_str{s.data(), s.size()}; }
inline std::string_view view(er_str s) { return std::string_view(s.data ? s.data : "", s.size); }

// The host the plugin was loaded by; set by EDGERUN_DEFINE_PLUGIN's entry.
struct HostState {
    const er_host* host = nullptr;
    const char* plugin_name = "?";
};

inline HostState& host_state() {
    static HostState state;
    return state;
}

inline bool log_enabled(int32_t level) {
    const er_host* host = host_state().host;
    return host && host->log && level >= host->log_level;
}

inline void log(int32_t level, std::string_view message) {
    if (!log_enabled(level)) return;
    std::string text(message);
    host_state().host->log(host_state().host->user_data, level, host_state().plugin_name, text.c_str());
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
inline void logf(int32_t level, const char* format, ...) {
    if (!log_enabled(level)) return;
    char buffer[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buffer, sizeof buffer, format, args);
    va_end(args);
    log(level, buffer);
}

// The entry's own half of the ABI handshake: refuse a host built for another ABI.
inline er_status accept_host(const er_host* host, const er_plugin* plugin, const er_plugin** out,
                             er_error* err) {
    if (!out) return set_error(err, ER_E_INVALID_ARGUMENT, "entry called without an output pointer");
    *out = nullptr;
    if (!host || host->struct_size < sizeof(er_host))
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "plugin '%s': host struct is missing or too small",
                          plugin->name);
    if (host->abi_version != ER_ABI_VERSION)
        return set_errorf(err, ER_E_UNSUPPORTED, "plugin '%s' speaks ABI %u, host speaks ABI %u",
                          plugin->name, ER_ABI_VERSION, host->abi_version);
    host_state().host = host;
    host_state().plugin_name = plugin->name;
    *out = plugin;
    return ER_OK;
}

}  // namespace edgerun::sdk

// Defines the library's entry symbol for a static er_plugin descriptor.
#define EDGERUN_DEFINE_PLUGIN(descriptor)                                                         \
    extern "C" ER_PLUGIN_EXPORT er_status edgerun_plugin_entry(const er_host* host,              \
                                                               const er_plugin** out,             \
                                                               er_error* err) {                   \
        return ::edgerun::sdk::accept_host(host, &(descriptor), out, err);                       \
    }
