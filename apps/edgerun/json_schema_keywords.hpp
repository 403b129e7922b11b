// What the JSON Schema conversion (json_schema_grammar.cpp) checks of a schema before it
// writes a rule: which keywords it knows and what each constrains, where in the schema a
// value is (a JSON pointer, for the one-line refusals), counts and types of values.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace edgerun::json_schema {

using json = nlohmann::ordered_json;

// Throws Error naming where in the schema (a JSON pointer; empty: the root) and why.
[[noreturn]] void refuse(const std::string& at, const std::string& why);

// The JSON pointer of a member, an item, or an item of a member.
std::string child(const std::string& at, std::string_view key);
std::string child(const std::string& at, size_t index);
std::string child(const std::string& at, std::string_view key, size_t index);

// What a keyword constrains: Annotation ones constrain nothing; the typed ones apply
// only to values of their type (so {"type": ["string", "null"], "maxLength": 3} admits null).
enum class Family { Annotation, Any, Object, Array, String, Number };
std::optional<Family> family_of(std::string_view keyword);

inline const json kAnyValue = json::object();  // the schema {}
inline constexpr const char* kTypes[] = {"string", "number", "integer", "boolean", "null", "object", "array"};

// Refuses the first keyword the conversion does not know.
void check_keywords(const json& schema, const std::string& at);
// `keyword` takes the whole schema: other constraints beside it (but `allowed`) would need
// an intersection, and are refused.
void alone(const json& schema, const std::string& at, std::string_view keyword, std::set<std::string_view> allowed = {});

const json* find(const json& schema, std::string_view key);
// A count keyword's value (minItems, maxLength, ...): a non-negative integer up to gbnf::kMaxCount.
size_t count(const json& value, const std::string& at);
bool is_rule_name(const std::string& expr);
// Whether `value` is of the JSON Schema type `type` (an integral float is an integer).
bool has_type(const json& value, const std::string& type);

}  // namespace edgerun::json_schema
