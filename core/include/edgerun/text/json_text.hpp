// JSON text as chat templates write it: Jinja's `tojson` in transformers (and vLLM) is
// Python's json.dumps(value, ensure_ascii=False), so templates that show tools, calls or
// tool results in the prompt get Python's spacing and escapes. The core has no JSON
// model: callers hand it JSON text (serve serializes the request's values).
#pragma once

#include <string>
#include <string_view>

namespace edgerun::text {

// json.dumps(s, ensure_ascii=False): quotes, escapes for '"', '\\' and control
// characters (\n, \t, ... and \u00XX), UTF-8 left as it is.
std::string json_quote(std::string_view s);

// json.dumps(value, indent=N) of the value that `compact` (json.dumps's default spacing,
// ", " and ": ") spells: one item a line, N spaces a level, "{}" and "[]" when empty.
std::string json_indent(std::string_view compact, int indent);

}  // namespace edgerun::text
