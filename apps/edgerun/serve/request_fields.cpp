#include "request_fields.hpp"

#include <boost/beast/core/string.hpp>

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

}  // namespace edgerun::serve
