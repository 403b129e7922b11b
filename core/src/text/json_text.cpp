#include <edgerun/text/json_text.hpp>

#include <cstdio>

namespace edgerun::text {

std::string json_quote(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (uint8_t(c) < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(uint8_t(c)));
                    out += escaped;
                } else {
                    out += c;
                }
        }
    }
    return out + '"';
}

std::string json_indent(std::string_view compact, int indent) {
    std::string out;
    int level = 0;
    const auto new_line = [&] { out += '\n' + std::string(size_t(level * indent), ' '); };
    for (size_t i = 0; i < compact.size(); ++i) {
        const char c = compact[i];
        if (c == '"') {  // a string, copied whole
            const size_t start = i;
            for (++i; i < compact.size() && compact[i] != '"'; ++i)
                if (compact[i] == '\\') ++i;
            out.append(compact, start, i - start + 1);
        } else if (c == '{' || c == '[') {
            const char close = c == '{' ? '}' : ']';
            if (i + 1 < compact.size() && compact[i + 1] == close) {
                out += c;
                out += close;
                ++i;
                continue;
            }
            out += c;
            ++level;
            new_line();
        } else if (c == '}' || c == ']') {
            --level;
            new_line();
            out += c;
        } else if (c == ',') {
            out += ',';
            new_line();
            if (i + 1 < compact.size() && compact[i + 1] == ' ') ++i;
        } else {
            out += c;  // ": ", numbers, true, false, null
        }
    }
    return out;
}

}  // namespace edgerun::text
