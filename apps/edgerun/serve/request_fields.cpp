#include "request_fields.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <cstdint>

namespace edgerun::serve {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

bool same_key(std::string_view given, std::string_view expected) {
    unsigned diff = given.size() == expected.size() ? 0u : 1u;
    for (size_t i = 0; i < expected.size(); ++i)
        diff |= unsigned(uint8_t(expected[i]) ^ uint8_t(i < given.size() ? given[i] : 0));
    return diff == 0;
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
    const size_t space = authorization.find(' ');
    if (space == std::string_view::npos ||
        !boost::beast::iequals(boost::beast::string_view(authorization.data(), space), "bearer"))
        return std::nullopt;
    std::string_view token = authorization.substr(space);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    return token;
}

std::string percent_decoded(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 && hex_digit(text[i + 2]) >= 0) {
            out += char(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

bool origin_allowed(std::string_view origin, const std::vector<std::string>& allowed) {
    if (std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
            return a == "*" || boost::beast::iequals(boost::beast::string_view(a.data(), a.size()),
                                                     boost::beast::string_view(origin.data(), origin.size()));
        }))
        return true;
    // Desktop apps' own pages (Electron, Tauri, VS Code webviews, local files).
    for (const std::string_view scheme : {"app://", "file://", "tauri://", "vscode-webview://"})
        if (origin.substr(0, scheme.size()) == scheme) return true;
    for (const std::string_view scheme : {"http://", "https://"}) {
        if (origin.substr(0, scheme.size()) != scheme) continue;
        const std::string_view host_port = origin.substr(scheme.size());
        for (const std::string_view host : {"localhost", "127.0.0.1", "[::1]", "0.0.0.0"}) {
            if (host_port.substr(0, host.size()) != host) continue;
            const std::string_view port = host_port.substr(host.size());
            if (port.empty()) return true;
            if (port.front() != ':' || port.size() < 2 || port.size() > 6) return false;
            return std::all_of(port.begin() + 1, port.end(), [](char c) { return c >= '0' && c <= '9'; });
        }
    }
    return false;
}

}  // namespace edgerun::serve
