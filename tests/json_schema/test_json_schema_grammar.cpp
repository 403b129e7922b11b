// JSON Schema -> GBNF: each keyword's grammar, checked by the documents the grammar engine
// lets through it whole (accept, then can_end) and the ones it stops.
#include "json_schema_check.hpp"

#include <edgerun/text/json_text.hpp>

#include <algorithm>
#include <random>
#include <regex>
#include <string>

using namespace json_schema_check;

TEST_CASE("an empty schema, true and json_object admit any JSON value, with bounded whitespace") {
    for (const char* schema : {"{}", "true", R"({"title": "anything", "description": "d", "$comment": "c"})"})
        check_documents(schema,
                        {R"({"a": [1, 2.5, {"b": null}], "c": "x"})", R"("x")", "1.5e3", "-0", "true", "null", "[]",
                         "{ }", "[1,\n    2]", "[1,\n" + std::string(20, ' ') + "2]"},
                        {"{a: 1}", "[1,]", "tru", "01", "+1", "[1,  2]", "[1,\n" + std::string(21, ' ') + "2]", ""});
    const Checked object = parsed(edgerun::json_object_grammar());
    CHECK(object.admits("{}"));
    CHECK(object.admits(R"({"a": {"b": [1, "x", null]}, "c": true})"));
    CHECK_FALSE(object.admits("[]"));
    CHECK_FALSE(object.admits(R"("x")"));
    CHECK_FALSE(object.admits("1"));
}

TEST_CASE("whitespace goes between tokens, never after the document: a complete document must end") {
    for (const char* schema : {"{}", R"({"type": "object", "properties": {"a": {"type": "integer"}}})",
                               R"({"type": "array", "items": {"type": "string"}})", R"({"enum": ["x", 2]})"})
        check_documents(schema, {}, {"{\"a\": 1} ", "{\"a\": 1}\n", "[\"s\"] ", "\"x\" ", "2\n\t"});
    const Checked any = parsed(edgerun::json_object_grammar());
    edgerun::text::GrammarMatcher matcher(any.grammar);
    CHECK(matcher.accept("{ \"a\" :\n  [ 1 , 2 ]\n}"));
    CHECK(matcher.must_end());  // generation stops at the closing brace, with no budget spent on spaces
}

TEST_CASE("the primitive types, a list of types, and strings with JSON's escapes") {
    check_documents(R"({"type": "string"})", {R"("")", R"("a\"b\\c\n\u00e9\/")", "\"é 日本\""},
                    {"\"a\tb\"", R"("\x")", R"("\u12")", "1", R"("a)"});
    check_documents(R"({"type": "number"})", {"0", "-0.5e-3", "10", "1E+2", "3.25"},
                    {".5", "1.", "+1", "01", "1e", "\"1\""});
    check_documents(R"({"type": "integer"})", {"0", "-12", "1234567890123456"},
                    {"1.5", "1e3", "-", "00", "12345678901234567"});
    check_documents(R"({"type": "boolean"})", {"true", "false"}, {"1", "null", "True"});
    check_documents(R"({"type": "null"})", {"null"}, {"0", R"("null")"});
    // maxLength is about strings only: null is still admitted.
    check_documents(R"({"type": ["string", "null"], "maxLength": 3})", {R"("abc")", "null"}, {R"("abcd")", "1"});
}

TEST_CASE("properties keep the schema's order; required ones are there, optional ones may be") {
    const char* schema = R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                             "email": {"type": "string"}}, "required": ["name", "age"]})";
    check_documents(
        schema,
        {R"({"name": "a", "age": 3})", R"({"name":"a","age":3,"email":"x"})", "{\n  \"name\": \"a\",\n  \"age\": 3\n}"},
        {R"({"name": "a"})",                      // a required property missing
         R"({"name": "a", "age": 3, "x": 1})",    // an extra property
         R"({"name": 1, "age": 3})",              // a wrong type
         R"({"name": "a", "age": 3, "age": 4})",  // a property twice
         R"({"name": "a", "age": 3,})",
         // Out of the schema's order: JSON Schema admits it, but the grammar fixes
         // the order, as llama.cpp's does, so a model is led one way through.
         R"({"age": 3, "name": "a"})"});
    check_documents(R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"},
                        "d": {"type": "integer"}}})",
                    {"{}", R"({"b": 1})", R"({"a": 1, "c": 3})", R"({"a": 1, "b": 2, "c": 3, "d": 4})", R"({"d": 4})"},
                    {R"({, "b": 1})", R"({"c": 3, "a": 1})", R"({"a": 1,})", R"({"a": 1 "b": 2})"});
    // Optional properties before a required one: each may start the object.
    check_documents(R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
                        "required": ["c"]})",
                    {R"({"c": 3})", R"({"a": 1, "c": 3})", R"({"b": 2, "c": 3})", R"({"a": 1, "b": 2, "c": 3})"},
                    {"{}", R"({"a": 1})", R"({"a": 1, "b": 2})"});
}

TEST_CASE("additionalProperties: absent or false none, true or {} any, a schema its values") {
    const char* closed = R"({"properties": {"a": {"type": "string"}}})";
    check_documents(closed, {R"({"a": "x"})", "{}"}, {R"({"a": "x", "b": 1})", R"({"b": 1})"});
    check_documents(R"({"properties": {"a": {"type": "string"}}, "additionalProperties": false})", {R"({"a": "x"})"},
                    {R"({"a": "x", "b": 1})"});
    for (const char* open : {"true", "{}"})
        check_documents(
            std::string(R"({"properties": {"a": {"type": "string"}}, "additionalProperties": )") + open + "}",
            {R"({"a": "x", "zzz": [1, {}]})", R"({"b": null})", "{}", R"({"a": "x", "b": 1, "c": 2})"},
            {R"({"a": 1})", R"({"b": 1, "a": "x"})"});
    // Extra keys are none of the declared ones: "a" written twice, or typed as an extra, is refused.
    check_documents(R"({"properties": {"a": {"type": "string"}, "ab": {"type": "string"}},
                        "additionalProperties": {"type": "integer"}})",
                    {R"({"a": "x", "b": 1})", R"({"abc": 1, "x": 2})", R"({"": 1})", R"({"\"": 1})"},
                    {R"({"a": 1})", R"({"a": "x", "a": 1})", R"({"ab": 1})", R"({"x": "s"})"});
    check_documents(R"({"type": "object", "additionalProperties": {"type": "integer"}})", {"{}", R"({"x": 1, "y": 2})"},
                    {R"({"x": "s"})"});
    check_documents(R"({"type": "object"})", {"{}", R"({"k": [1, {"j": null}]})"}, {"[]"});
    // A property whose schema is false may not be there, not even as an extra member.
    check_documents(R"({"properties": {"a": false, "b": {}}, "additionalProperties": true})",
                    {R"({"b": 1})", R"({"c": 1})"}, {R"({"a": 1})", R"({"b": 1, "a": 1})"});
    // A required key that no property declares is an extra member that must be there.
    check_documents(R"({"type": "object", "required": ["id"]})", {R"({"id": 7})"}, {"{}", R"({"x": 1})"});
}

TEST_CASE("items, prefixItems, minItems, maxItems") {
    check_documents(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
                    {"[1]", "[1, 2, 3]", "[ 1,2 ]"}, {"[]", "[1, 2, 3, 4]", R"(["a"])", "[1,]"});
    check_documents(R"({"type": "array", "maxItems": 2})", {"[]", R"([1, "x"])"}, {"[1, 2, 3]"});
    check_documents(R"({"type": "array", "items": {"type": "string"}, "minItems": 2})",
                    {R"(["a", "b"])", R"(["a", "b", "c"])"}, {R"(["a"])"});
    // A tuple without 'items' has the length it lists, as llama.cpp makes it.
    check_documents(R"({"prefixItems": [{"type": "string"}, {"type": "integer"}]})", {R"(["a", 1])"},
                    {R"(["a"])", R"(["a", 1, 2])", R"([1, "a"])"});
    check_documents(R"({"prefixItems": [{"type": "string"}], "items": {"type": "boolean"}, "maxItems": 3})",
                    {R"(["a"])", R"(["a", true, false])"}, {R"(["a", true, false, true])", R"(["a", 1])"});
    check_documents(R"({"items": [{"type": "null"}, {"type": "integer"}]})", {"[null, 1]"}, {"[1, null]"});
}

TEST_CASE("minLength and maxLength count characters, an escape as one") {
    check_documents(R"({"type": "string", "minLength": 2, "maxLength": 3})", {R"("ab")", R"("a\n")", "\"日本語\""},
                    {R"("a")", R"("abcd")", R"("")"});
    check_documents(R"({"type": "string", "maxLength": 0})", {R"("")"}, {R"("a")"});
}

TEST_CASE("enum and const are their values' JSON, exactly") {
    check_documents(R"({"enum": ["red", "green", 3, null, {"a": [1]}]})",
                    {R"("red")", R"("green")", "3", "null", R"({"a":[1]})"},
                    {R"("blue")", "4", R"("Red")", R"({"a": [1]})"});  // the value as compact JSON, not respaced
    check_documents(R"({"const": {"k": [1, "x\"y"]}})", {R"({"k":[1,"x\"y"]})"}, {R"({"k":[1]})"});
    check_documents(R"({"type": "string", "enum": ["a", 1]})", {R"("a")"}, {"1"});
    check_documents(R"({"const": "é", "enum": ["é", "e"]})", {"\"é\""}, {R"("e")"});
}

TEST_CASE("anyOf and oneOf: any of the alternatives; allOf merges objects") {
    for (const char* key : {"anyOf", "oneOf"})
        check_documents(std::string("{\"") + key + R"(": [{"type": "integer"}, {"type": "string", "maxLength": 2}]})",
                        {"5", R"("ab")"}, {R"("abc")", "true"});
    check_documents(R"({"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Optional"})",
                    {R"("x")", "null"}, {"1"});
    const char* merged =
        R"({"$defs": {"Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
                            "allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"a": {"type": "string"}}}],
                            "properties": {"b": {"type": "boolean"}}, "required": ["b"]})";
    check_documents(merged, {R"({"id": 1, "a": "x", "b": true})", R"({"id": 1, "b": false})"},
                    {R"({"a": "x", "b": true})", R"({"id": 1})", R"({"id": 1, "b": true, "c": 0})"});
    // One part, with annotations only beside it: that part, whatever its type.
    check_documents(R"({"allOf": [{"type": "integer"}], "description": "wrapped"})", {"1"}, {R"("1")"});
}

TEST_CASE("$ref to $defs and definitions; recursion with one rule per definition") {
    const char* tree = R"({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object",
        "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        "required": ["value"]}}})";
    check_documents(tree,
                    {R"({"value": 1})", R"({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]})"},
                    {R"({"value": 1, "children": [{"value": "x"}]})", R"({"children": []})"});
    const std::string gbnf = edgerun::json_schema_grammar(nlohmann::ordered_json::parse(tree));
    CHECK(count_rules(gbnf, "Node") == 1);
    check_documents(
        R"({"type": "object", "properties": {"p": {"$ref": "#/definitions/Point"}, "q": {"$ref": "#/definitions/Point"}},
                        "definitions": {"Point": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}}})",
        {R"({"p": [1, 2], "q": [3, 4.5]})"}, {R"({"p": [1]})"});
}

TEST_CASE("format: date, time, date-time, uuid") {
    check_documents(R"({"type": "string", "format": "date"})", {R"("2024-02-29")"},
                    {R"("2024-13-01")", R"("24-01-01")"});
    check_documents(R"({"type": "string", "format": "time"})", {R"("12:30:00Z")", R"("23:59:59.123+02:00")"},
                    {R"("24:00:00Z")", R"("12:30:00")"});
    check_documents(R"({"type": "string", "format": "date-time"})", {R"("2024-01-01T00:00:00Z")"},
                    {R"("2024-01-01 00:00:00Z")"});
    check_documents(R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
                    {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
}

TEST_CASE("pattern: a regular expression's subset, searched unless anchored") {
    check_documents(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})", {R"("AB-123")"},
                    {R"("AB-12")", R"("ab-123")", R"("AB-1234")"});
    check_documents(R"({"type": "string", "pattern": "abc"})", {R"("abc")", R"("xxabcxx")"}, {R"("ab")", R"("axbc")"});
    check_documents(R"({"type": "string", "pattern": "^(cat|dog)s?$"})", {R"("cat")", R"("dogs")"},
                    {R"("cow")", R"("cats!")"});
    check_documents(R"({"type": "string", "pattern": "^x|y$"})", {R"("xz")", R"("zy")"}, {R"("zx")"});
    check_documents(R"({"type": "string", "pattern": "^a\"b\\\\c$"})", {R"("a\"b\\c")"}, {R"("a\"bc")"});
    check_documents(R"({"type": "string", "pattern": "^\\.$"})", {R"(".")"}, {R"("x")"});
    check_documents(R"({"type": "string", "pattern": "^.{2}$"})", {R"("ab")", R"("a\"")", R"("a\t")"},
                    {R"("a\n")", R"("abc")"});
    check_documents(R"({"type": "string", "pattern": "^[^a\\d]+$"})", {R"("bcd")", R"("b\"")"},
                    {R"("bad")", R"("b1")"});
    check_documents(R"({"type": "string", "pattern": "^(?:ab)+?[-_.]\\w*\\s?$"})", {R"("abab-x_1 ")", R"("ab.")"},
                    {R"("ab")"});
    check_documents(R"({"type": "string", "pattern": "^\\u00e9{1,}x{2,3}[é-ë]$"})", {"\"ééxxê\""},
                    {"\"éxê\"", "\"ééxxè\""});
    check_documents(R"({"type": "string", "pattern": "^[😀-😂]\\x41\\t$"})", {"\"😁A\\t\""}, {"\"😃A\\t\"", "\"😁A\t\""});
    // A '{' that starts no count is a literal.
    check_documents(R"({"type": "string", "pattern": "^{a}$"})", {R"("{a}")"}, {R"("a")"});
    check_documents(R"({"type": "string", "pattern": ""})", {R"("")", R"("any")"}, {"1"});
}

// The patterns' grammars against std::regex (ECMAScript, as JSON Schema's) on random strings,
// written as json.dumps writes them: the spelling the grammar admits for each character.
TEST_CASE("pattern grammars search as std::regex_search does") {
    const char* const patterns[] = {"^a+b?$",
                                    "a.b",
                                    R"(^[a-c_]*\d{1,2}$)",
                                    "^(ab|a)(b|_)*$",
                                    "[^ab]",
                                    R"(^\w+\s\w+$)",
                                    "x|^a",
                                    "b$",
                                    R"(^(?:a|b\.){2,3}$)",
                                    R"(^["\\]+$)",
                                    R"(^\S\D\W$)",
                                    "^.a*?$",
                                    "^[^\n\"]*$",
                                    R"(^a\-?[.-]{0,2}\\$)",
                                    "",
                                    "^$"};
    const std::string alphabet = "ab1_ .-\"\\\n\tx";
    std::mt19937 random(20240601);
    for (const char* pattern : patterns) {
        const nlohmann::ordered_json schema = {{"type", "string"}, {"pattern", pattern}};
        const Checked checked = parsed(edgerun::json_schema_grammar(schema));
        const std::regex regex(pattern);
        for (int i = 0; i < 600; ++i) {
            std::string text(random() % 7, ' ');
            for (char& c : text) c = alphabet[random() % alphabet.size()];
            const bool expected = std::regex_search(text, regex);
            if (checked.admits(edgerun::text::json_quote(text)) != expected)
                FAIL_CHECK("pattern ", std::string(pattern), ": ", edgerun::text::json_quote(text),
                           std::string(expected ? " refused" : " admitted"), "\n", checked.gbnf);
        }
    }
}

TEST_CASE("integer minimum and maximum, every value of small ranges") {
    struct Range {
        const char* bounds;
        long long least, greatest;
    };
    const Range ranges[] = {{R"("minimum": 0)", 0, LLONG_MAX},
                            {R"("minimum": 1)", 1, LLONG_MAX},
                            {R"("minimum": 18, "maximum": 65)", 18, 65},
                            {R"("minimum": -37, "maximum": 123)", -37, 123},
                            {R"("maximum": -12)", LLONG_MIN, -12},
                            {R"("minimum": 0, "maximum": 0)", 0, 0},
                            {R"("minimum": 100, "maximum": 999)", 100, 999},
                            {R"("exclusiveMinimum": 0)", 1, LLONG_MAX},
                            {R"("minimum": 7)", 7, LLONG_MAX},
                            {R"("minimum": -5, "exclusiveMaximum": 5.5)", -5, 5},
                            {R"("minimum": 1.5, "maximum": 99)", 2, 99},
                            {R"("minimum": 15, "maximum": 35)", 15, 35},
                            {R"("minimum": -1000, "maximum": -999)", -1000, -999}};
    for (const Range& range : ranges) {
        const std::string schema = std::string(R"({"type": "integer", )") + range.bounds + "}";
        const Checked checked = parsed(edgerun::json_schema_grammar(nlohmann::ordered_json::parse(schema)));
        for (long long n = -1200; n <= 1200; ++n) {
            const bool expected = n >= range.least && n <= range.greatest;
            if (checked.admits(std::to_string(n)) != expected)
                FAIL_CHECK(schema, ": ", n, std::string(expected ? " refused" : " admitted"), "\n", checked.gbnf);
        }
        CHECK_FALSE(checked.admits("01"));
        CHECK_FALSE(checked.admits("1.0"));
        CHECK(checked.admits("123456789012345") == (range.greatest == LLONG_MAX));
    }
    check_documents(R"({"type": "integer", "minimum": 0})", {"0", "5", "9999999999999999"}, {"-1", "-0", "00"});
    check_documents(R"({"type": "number", "minimum": 0})", {"0", "1.5", "2e-3"}, {"-1.5", "-0"});
}

TEST_CASE("rule names are GBNF names from the property paths, each once; shared rules once") {
    const char* schema = R"({"type": "object", "properties": {
        "user name": {"type": "object", "properties": {"first": {"type": "string", "maxLength": 9}}},
        "user_name": {"type": "string", "minLength": 1}, "string": {"type": "object", "properties": {"x": {"type": "string"}}},
        "number": {"type": "integer", "minimum": 0}, "tags": {"type": "array", "items": {"type": "string", "pattern": "^t"}}}})";
    check_documents(
        schema,
        {R"({"user name": {"first": "a"}, "user_name": "b", "string": {"x": "y"}, "number": 1, "tags": ["tx"]})"},
        {R"({"tags": ["x"]})", R"({"number": -1})"});
    const std::string gbnf = edgerun::json_schema_grammar(nlohmann::ordered_json::parse(schema));
    INFO(gbnf);
    CHECK(gbnf.rfind("root ::= ", 0) == 0);
    for (const char* rule : {"user-name", "user-name-first", "user-name-1", "string-1", "number-1", "tags", "tags-item",
                             "string", "char", "space"})
        CHECK_MESSAGE(count_rules(gbnf, rule) == 1, std::string(rule));
}

TEST_CASE("a forced tool call's schema, as serve builds it") {
    const char* schema = R"({"anyOf": [
        {"type": "object", "properties": {"name": {"const": "get_weather"}, "arguments": {"type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"],
            "additionalProperties": false}}, "required": ["name", "arguments"]},
        {"type": "object", "properties": {"name": {"const": "noop"}, "arguments": {"type": "object", "additionalProperties": true}},
         "required": ["name", "arguments"]}]})";
    check_documents(schema,
                    {R"({"name": "get_weather", "arguments": {"city": "Paris"}})",
                     R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}})",
                     R"({"name": "noop", "arguments": {}})"},
                    {R"({"name": "get_weather", "arguments": {}})", R"({"name": "other", "arguments": {}})",
                     R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "k"}})"});
}
