// What the HTTP layer reads out of a request's header and target: the API key of an
// Authorization header, compared in constant time, a percent-encoded path segment, and
// whether the web page a browser's request comes from may call the server.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::serve {

// Compares every byte of the expected key whatever the given one holds, so the time
// taken says nothing about how much of a guess was right.
bool same_key(std::string_view given, std::string_view expected);

// The token of "Bearer TOKEN"; the scheme is case-insensitive (RFC 9110, 11.1).
std::optional<std::string_view> bearer_token(std::string_view authorization);

// "%2F" and the like decoded (a model id may hold any character); a malformed escape is
// kept as it is.
std::string percent_decoded(std::string_view text);

// Whether a browser page at `origin` (an Origin header: "scheme://host[:port]") may call
// the server: pages served from this machine (http or https from localhost, 127.0.0.1,
// [::1] or 0.0.0.0, any port), desktop apps' pages (app://, file://, tauri://,
// vscode-webview://) and the origins `allowed` names ("*": any). The others are refused,
// so that a web site a user visits cannot drive a model on the user's machine (Ollama's
// rule, and its list).
bool origin_allowed(std::string_view origin, const std::vector<std::string>& allowed);

}  // namespace edgerun::serve
