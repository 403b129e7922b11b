// JSON text as templates' tojson (Python's json.dumps) writes it. The expected strings are
// what CPython 3.11's json.dumps(value, ensure_ascii=False[, indent=4]) printed for
//   {"a": [], "b": {}, "s": "x, {y}: \"z\" \\ \n\t\x01 ü", "n": [1, 2.5, None, True, {"k": [{}]}]}
#include <doctest/doctest.h>

#include <edgerun/text/json_text.hpp>

using namespace edgerun::text;

namespace {

const char* const kCompact =
    R"({"a": [], "b": {}, "s": "x, {y}: \"z\" \\ \n\t\u0001 ü", "n": [1, 2.5, null, true, {"k": [{}]}]})";

}  // namespace

TEST_CASE("json_quote escapes as json.dumps does and leaves UTF-8 alone") {
    CHECK(json_quote("x, {y}: \"z\" \\ \n\t\x01 ü") == R"("x, {y}: \"z\" \\ \n\t\u0001 ü")");
    CHECK(json_quote("") == R"("")");
    CHECK(json_quote("\x1f\r\b\f/") == R"("\u001f\r\b\f/")");
}

TEST_CASE("json_indent lays compact JSON out as json.dumps(indent=4) does") {
    CHECK(json_indent(kCompact, 4) ==
          "{\n    \"a\": [],\n    \"b\": {},\n    \"s\": \"x, {y}: \\\"z\\\" \\\\ \\n\\t\\u0001 ü\",\n    \"n\": [\n"
          "        1,\n        2.5,\n        null,\n        true,\n        {\n            \"k\": [\n                {}\n"
          "            ]\n        }\n    ]\n}");
    CHECK(json_indent("[]", 4) == "[]");
    CHECK(json_indent(R"({"k": "v"})", 2) == "{\n  \"k\": \"v\"\n}");
}
