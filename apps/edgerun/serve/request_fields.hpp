// What the HTTP layer reads out of a request's header and target: the API key of an
// Authorization header, compared in constant time, and a percent-encoded path segment.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace edgerun::serve {

// Compares every byte of the expected key whatever the given one holds, so the time
// taken says nothing about how much of a guess was right.
bool same_key(std::string_view given, std::string_view expected);

// The token of "Bearer TOKEN"; the scheme is case-insensitive (RFC 9110, 11.1).
std::optional<std::string_view> bearer_token(std::string_view authorization);

// "%2F" and the like decoded (a model id may hold any character); a malformed escape is
// kept as it is.
std::string percent_decoded(std::string_view text);

}  // namespace edgerun::serve
