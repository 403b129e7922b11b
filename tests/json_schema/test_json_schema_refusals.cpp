// JSON Schema -> GBNF: what the conversion refuses rather than answer with a looser grammar,
// each refusal by its message (what and where, as a JSON pointer) and its status.
#include "json_schema_check.hpp"

#include <edgerun/host_api.hpp>

#include <string>

namespace {

// The message of the Error converting `schema` throws; fails the check when none or another is thrown.
std::string refusal(const std::string& schema) {
    try {
        const std::string gbnf = edgerun::json_schema_grammar(nlohmann::ordered_json::parse(schema));
        FAIL_CHECK("converted ", schema, " to\n", gbnf);
    } catch (const edgerun::Error& e) {
        CHECK(e.code() == ER_E_INVALID_ARGUMENT);
        return e.what();
    }
    return {};
}

void check_refused(const std::string& schema, std::initializer_list<const char*> said) {
    const std::string message = refusal(schema);
    for (const char* part : said)
        CHECK_MESSAGE(message.find(part) != std::string::npos, "\"", message, "\" lacks \"", std::string(part),
                      "\"\nschema ", schema);
}

}  // namespace

TEST_CASE("keywords that constrain values and are not supported are named with their place") {
    check_refused(R"({"type": "object", "properties": {"age": {"type": "integer", "multipleOf": 2}}})",
                  {"JSON schema at /properties/age/multipleOf", "'multipleOf' is not supported"});
    check_refused(R"({"not": {"type": "string"}})", {"at /not", "'not'"});
    for (const char* keyword :
         {"uniqueItems", "minProperties", "patternProperties", "if", "contains", "additionalItems", "propertyNames",
          "dependentRequired", "unevaluatedProperties", "$anchor", "nullable"})
        check_refused(std::string(R"({"items": {"type": "object", ")") + keyword + R"(": true}})",
                      {(std::string("at /items/") + keyword).c_str(), "is not supported"});
    check_refused(R"({"properties": {"a/b~": {"type": "string", "format": "email"}}})",
                  {"at /properties/a~1b~0/format", "the format 'email' is not supported"});
}

TEST_CASE("bounds a grammar here cannot say are refused") {
    check_refused(R"({"type": "number", "maximum": 5})", {"at /maximum", "on a number is not supported"});
    check_refused(R"({"type": "number", "minimum": 1})", {"at /minimum", "minimum 0 is"});
    check_refused(R"({"type": "number", "exclusiveMinimum": 0})", {"at /exclusiveMinimum"});
    check_refused(R"({"type": "integer", "minimum": "3"})", {"at /minimum", "must be a number"});
    check_refused(R"({"type": "integer", "maximum": 1e20})", {"at /maximum", "within"});
    check_refused(R"({"type": "integer", "exclusiveMinimum": true})", {"at /exclusiveMinimum", "must be a number"});
    check_refused(R"({"type": "integer", "minimum": 5, "maximum": 4})", {"no integer lies within"});
    check_refused(R"({"type": "array", "minItems": -1})", {"at /minItems", "non-negative integer"});
    check_refused(R"({"type": "array", "maxItems": 2.5})", {"at /maxItems", "non-negative integer"});
    check_refused(R"({"type": "array", "maxItems": 5000})", {"at /maxItems", "more than the 2000 supported"});
    check_refused(R"({"type": "array", "minItems": 3, "maxItems": 2})", {"at /maxItems", "below minItems"});
    check_refused(R"({"type": "string", "minLength": 3, "maxLength": 2})", {"at /maxLength", "below minLength"});
    check_refused(R"({"prefixItems": [{}, {}], "maxItems": 1})", {"at /maxItems", "prefixItems"});
    check_refused(R"({"prefixItems": [{}], "minItems": 2})", {"at /minItems", "exceeds"});
    check_refused(R"({"type": "string", "pattern": "^a$", "maxLength": 3})", {"only one of 'format', 'pattern'"});
}

TEST_CASE("patterns beyond the supported subset name what they have and where") {
    const std::pair<const char*, const char*> patterns[] = {
        {"^(?=a)b$", "a lookaround or a named group at character 3"},
        {"^(?<n>a)$", "a lookaround or a named group"},
        {"^(a)\\\\1$", "the escape \\1"},
        {"^a\\\\bc$", "the escape \\b"},
        {"^\\\\p{L}$", "the escape \\p"},
        {"a^b", "an anchor inside the pattern"},
        {"^a$b", "an anchor inside the pattern"},
        {"^(a$)", "an anchor inside the pattern"},
        {"^*a", "a quantifier with nothing to repeat"},
        {"^a**$", "a quantifier after a quantifier"},
        {"^a{3,2}$", "a bad or too large count"},
        {"^(ab", "an unclosed group"},
        {"^ab)$", "an unmatched ')'"},
        {"^[ab$", "an unclosed '['"},
        {"^[z-a]$", "a bad range in a class"},
        {"^[\\\\D]$", "a negated class escape inside a class"},
        {"^a\\\\", "a '\\' at the end"},
        {"^{2}a$", "a quantifier with nothing to repeat"},
        {"^\\\\x4g$", "a malformed \\x or \\u escape"},
        {"^\\\\u12$", "a malformed \\x or \\u escape"},
        {"^\\\\01$", "an octal escape"},
        {"^[]$", "an empty class"},
        {"^(a*)*$", "an unbounded repetition of what can match nothing"},
        {"^(a|b?)+$", "an unbounded repetition of what can match nothing"},
    };
    for (const auto& [pattern, said] : patterns)
        check_refused(std::string(R"({"properties": {"code": {"type": "string", "pattern": ")") + pattern + "\"}}}",
                      {"at /properties/code/pattern: the pattern", said, "which is not supported"});
}

TEST_CASE("schemas that cannot be read as asked are refused at their place") {
    check_refused("false", {"JSON schema at the root: the schema false admits no value"});
    check_refused("5", {"at the root", "must be an object or a boolean"});
    check_refused(R"({"properties": {"a": false}, "required": ["a"]})", {"at /properties/a", "false admits no value"});
    check_refused(R"({"type": "int"})", {"at /type", "not a type: \"int\""});
    check_refused(R"({"type": []})", {"at /type", "empty list"});
    check_refused(R"({"minLength": 1, "minimum": 0})", {"at the root", "several types without 'type'"});
    check_refused(R"({"$ref": "https://example.com/s.json"})", {"at /$ref", "only references inside the schema"});
    check_refused(R"({"$ref": "#/$defs/Missing", "$defs": {}})", {"at /$ref", "'#/$defs/Missing' refers to nothing"});
    check_refused(R"({"$ref": "#/$defs/A", "type": "object", "$defs": {"A": {}}})", {"at /type", "beside '$ref'"});
    check_refused(R"({"$defs": {"A": {"type": "integer", "minimum": "x"}}, "items": {"$ref": "#/$defs/A"}})",
                  {"at /$defs/A/minimum"});
    check_refused(R"({"anyOf": []})", {"at /anyOf", "non-empty array"});
    check_refused(R"({"oneOf": [{}], "type": "string"})", {"at /type", "beside 'oneOf'"});
    check_refused(R"({"allOf": [{"type": "object"}, {"type": "string"}]})",
                  {"at /allOf/1/type", "allOf merges object schemas only"});
    check_refused(R"({"allOf": [{"properties": {"a": {}}}, {"properties": {"a": {}}}]})",
                  {"at /allOf/1/properties/a", "declared twice"});
    check_refused(R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]})",
                  {"at /allOf/0/additionalProperties", "excludes 'b'"});
    check_refused(R"({"allOf": [{"properties": {"a": {}}}, {"additionalProperties": {"type": "string"}}]})",
                  {"at /allOf/1/additionalProperties", "only additionalProperties false"});
    check_refused(R"({"properties": {"a": {}}, "required": ["b"]})",
                  {"at /required", "'b' is required but not a property"});
    check_refused(R"({"properties": {"a": {}}, "additionalProperties": 1})",
                  {"at /additionalProperties", "boolean or a schema"});
    check_refused(R"({"properties": []})", {"at /properties", "must be an object"});
    check_refused(R"({"type": "object", "required": "a"})", {"at /required", "array of property names"});
    check_refused(R"({"type": "string", "enum": [1, 2]})", {"at the root", "leave no value"});
    check_refused(R"({"const": "a", "enum": ["b"]})", {"leave no value"});
    check_refused(R"({"enum": "a"})", {"at /enum", "non-empty array"});
    check_refused(R"({"const": 1, "minimum": 0})", {"at /minimum", "beside 'const'"});
    check_refused(R"({"type": "string", "format": 3})", {"at /format", "the format '3'"});
    check_refused(R"({"type": "string", "pattern": 3})", {"at /pattern", "must be a string"});
    check_refused(R"({"type": "array", "items": 3})", {"at /items", "must be a schema"});
    check_refused(R"({"items": [{}], "prefixItems": [{}]})", {"at /items", "beside 'prefixItems'"});
    check_refused(R"({"prefixItems": {}})", {"at /prefixItems", "must be an array of schemas"});
    check_refused(R"({"$ref": 5})", {"at /$ref", "must be a string"});
    check_refused(R"({"type": "object", "required": ["a", 1]})", {"at /required", "not 1"});
    check_refused(R"({"allOf": []})", {"at /allOf", "non-empty array"});
    check_refused(R"({"allOf": [5, {}]})", {"at /allOf/0", "allOf merges object schemas only"});
    check_refused(R"({"allOf": [{"$ref": 5}, {}]})", {"at /allOf/0/$ref", "must be a string"});
    check_refused(R"({"allOf": [{"allOf": {}}, {}]})", {"at /allOf/0/allOf", "non-empty array"});
    check_refused(R"({"allOf": [{"properties": 1}, {}]})", {"at /allOf/0/properties", "must be an object"});
    check_refused(R"({"$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}, {}]}}, "allOf": [{"$ref": "#/$defs/A"}, {}]})",
                  {"allOf and $ref nest too deep"});
}

TEST_CASE("schemas from a request cannot nest the conversion or the grammar without bound") {
    std::string deep = "{}";
    for (int i = 0; i < 150; ++i) deep = R"({"items": )" + deep + "}";
    check_refused(deep, {"schemas nest deeper than 100"});
    const std::string long_key(201, 'k');
    check_refused(R"({"properties": {")" + long_key + R"(": {}}, "additionalProperties": true})",
                  {"at /additionalProperties", "longer than 200 characters"});
    check_refused(R"({"type": "string", "pattern": ")" + std::string(65, '(') + "a" + std::string(65, ')') + "\"}",
                  {"at /pattern", "groups nested deeper than 64"});
}
