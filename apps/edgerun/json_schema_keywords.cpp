#include "json_schema_keywords.hpp"

#include "gbnf_text.hpp"

#include <edgerun/host_api.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>
#include <vector>

namespace edgerun::json_schema {

[[noreturn]] void refuse(const std::string& at, const std::string& why) {
    throw Error("JSON schema at " + (at.empty() ? std::string("the root") : at) + ": " + why, ER_E_INVALID_ARGUMENT);
}

std::string child(const std::string& at, std::string_view key) {
    std::string out = at + "/";
    for (const char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return out;
}
std::string child(const std::string& at, size_t index) { return at + "/" + std::to_string(index); }
std::string child(const std::string& at, std::string_view key, size_t index) { return child(child(at, key), index); }

namespace {

const std::pair<Family, std::vector<std::string_view>> kKeywords[] = {
    {Family::Annotation,
     {"title", "description", "$schema", "$id", "default", "examples", "$comment", "deprecated", "readOnly",
      "writeOnly", "$defs", "definitions"}},
    {Family::Any, {"type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf"}},
    {Family::Object, {"properties", "required", "additionalProperties"}},
    {Family::Array, {"items", "prefixItems", "minItems", "maxItems"}},
    {Family::String, {"minLength", "maxLength", "pattern", "format"}},
    {Family::Number, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
};

}  // namespace

std::optional<Family> family_of(std::string_view keyword) {
    for (const auto& [family, keywords] : kKeywords)
        if (std::find(keywords.begin(), keywords.end(), keyword) != keywords.end()) return family;
    return std::nullopt;
}

void check_keywords(const json& schema, const std::string& at) {
    for (const auto& [key, value] : schema.items())
        if (!family_of(key)) refuse(child(at, key), "the keyword '" + key + "' is not supported");
}

void alone(const json& schema, const std::string& at, std::string_view keyword, std::set<std::string_view> allowed) {
    for (const auto& [key, value] : schema.items())
        if (key != keyword && *family_of(key) != Family::Annotation && !allowed.contains(key))
            refuse(child(at, key), "'" + key + "' beside '" + std::string(keyword) + "' is not supported");
}

const json* find(const json& schema, std::string_view key) {
    const auto it = schema.find(key);
    return it == schema.end() ? nullptr : &*it;
}

size_t count(const json& value, const std::string& at) {
    const bool whole =
        value.is_number() && value.get<double>() >= 0 && value.get<double>() == std::floor(value.get<double>());
    if (!whole) refuse(at, "must be a non-negative integer, not " + value.dump());
    const double n = value.get<double>();
    if (n > double(gbnf::kMaxCount))
        refuse(at, value.dump() + " is more than the " + std::to_string(gbnf::kMaxCount) + " supported");
    return size_t(n);
}

bool is_rule_name(const std::string& expr) {
    return !expr.empty() &&
           std::all_of(expr.begin(), expr.end(), [](char c) { return std::isalnum(uint8_t(c)) || c == '-'; });
}

bool has_type(const json& value, const std::string& type) {
    if (type == "integer")
        return value.is_number_integer() ||
               (value.is_number_float() && value.get<double>() == std::floor(value.get<double>()));
    return (type == "string" && value.is_string()) || (type == "number" && value.is_number()) ||
           (type == "boolean" && value.is_boolean()) || (type == "null" && value.is_null()) ||
           (type == "object" && value.is_object()) || (type == "array" && value.is_array());
}

}  // namespace edgerun::json_schema
