#include "json_schema_grammar.hpp"

#include "gbnf_text.hpp"
#include "json_schema_keywords.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/text/json_text.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace edgerun {

namespace {

using json = nlohmann::ordered_json;
using namespace gbnf;

constexpr double kMaxBound = 1e15;  // integer bounds: their digits fit the 16 of integral-part
constexpr int kMaxDepth = 100;

using namespace json_schema;

struct Property {
    std::string key;
    const json* schema;  // null: a required key only additionalProperties admits, with its schema
    std::string at;
};
// One member of an object's rule: its key-value rule, the name its rules grow from.
struct Member {
    std::string kv;
    std::string name;
    bool required;
};
// An object as the grammar lays it out: the properties in order, then the extra members
// additionalProperties admits.
struct ObjectShape {
    std::vector<Property> properties;
    std::set<std::string> required;
    const json* extra = nullptr;  // additionalProperties' schema; none: no extra member
    std::string extra_at;

    bool declares(const std::string& key) const {
        return std::any_of(properties.begin(), properties.end(), [&](const Property& p) { return p.key == key; });
    }
};

class Converter {
public:
    explicit Converter(const json& root) : root_(root) {
        for (const SharedRule& rule : shared_rules()) taken_.insert(rule.name);
        taken_.insert("root");
    }

    std::string convert() {
        shared("space");
        define("root", expr(root_, "root", ""));
        std::string gbnf;
        for (const auto& [name, body] : rules_)
            if (name == "root") gbnf += name + " ::= " + body + "\n";
        for (const auto& [name, body] : rules_)
            if (name != "root") gbnf += name + " ::= " + body + "\n";
        return gbnf;
    }

private:
    const json& root_;
    std::vector<std::pair<std::string, std::string>> rules_;
    std::set<std::string> taken_;  // rule names defined, reserved or shared
    std::set<std::string> shared_defined_;
    std::map<std::string, std::string> ref_rules_;  // "$ref" -> its rule
    int depth_ = 0;                                 // expr calls open

    std::string shared(const std::string& name) {
        if (!shared_defined_.insert(name).second) return name;
        const std::vector<SharedRule>& rules = shared_rules();
        const SharedRule& rule =
            *std::find_if(rules.begin(), rules.end(), [&](const SharedRule& r) { return r.name == name; });
        for (const char* used : rule.uses) shared(used);
        if (std::string(rule.body).find("space") != std::string::npos) shared("space");
        define(name, rule.body);
        return name;
    }
    void define(const std::string& name, const std::string& body) { rules_.emplace_back(name, body); }

    // A free rule name like `wanted`: GBNF's characters only, numbered when taken.
    std::string fresh(const std::string& wanted) {
        std::string name;
        for (const char c : wanted)
            if (std::isalnum(uint8_t(c)))
                name += c;
            else if (name.empty() || name.back() != '-')
                name += '-';
        if (name.empty() || name == "-") name = "key";
        std::string candidate = name;
        for (int i = 1; !taken_.insert(candidate).second; ++i) candidate = name + "-" + std::to_string(i);
        return candidate;
    }
    static std::string prefix(const std::string& name) { return name == "root" ? "" : name + "-"; }

    // The schema as one rule name: a shared rule, or a rule of its own named `name`.
    std::string rule(const json& schema, const std::string& name, const std::string& at) {
        const std::string own = fresh(name);  // taken first, so the schema's parts are named after it
        return named(own, expr(schema, own, at));
    }
    // `body` under the name `own` (taken by fresh), or the rule it already names.
    std::string named(const std::string& own, const std::string& body) {
        if (!is_rule_name(body)) return define(own, body), own;
        taken_.erase(own);
        return body;
    }

    std::string expr(const json& schema, const std::string& name, const std::string& at) {
        struct Nesting {  // a bound on the recursion, for schemas from a request
            int& depth;
            explicit Nesting(int& d, const std::string& at) : depth(d) {
                if (++depth > kMaxDepth) refuse(at, "schemas nest deeper than " + std::to_string(kMaxDepth));
            }
            ~Nesting() { --depth; }
        } nesting(depth_, at);
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) refuse(at, "the schema false admits no value");
            return shared("value");
        }
        if (!schema.is_object()) refuse(at, "a schema must be an object or a boolean, not " + schema.dump());
        check_keywords(schema, at);
        if (const json* ref = find(schema, "$ref")) {
            alone(schema, at, "$ref");
            return ref_rule(*ref, child(at, "$ref"));
        }
        for (const char* key : {"anyOf", "oneOf"})
            if (schema.contains(key)) return alternatives(schema, key, name, at);
        if (schema.contains("allOf")) return all_of(schema, name, at);
        if (schema.contains("enum") || schema.contains("const")) return values(schema, at);
        const std::vector<std::string> types = types_of(schema, at);
        if (types.empty()) return shared("value");
        if (types.size() == 1) return typed(schema, types[0], name, at);
        std::vector<std::string> alternatives;
        for (const std::string& type : types) {
            const std::string own = fresh(prefix(name) + type);
            alternatives.push_back(named(own, typed(schema, type, own, at)));
        }
        return join(alternatives, " | ");
    }

    // `type`, or without it the one type the schema's keywords are about ({"properties": ...}
    // is an object, as llama.cpp takes it); none: any value.
    std::vector<std::string> types_of(const json& schema, const std::string& at) {
        std::vector<std::string> types;
        if (const json* type = find(schema, "type")) {
            for (const json& name : type->is_array() ? *type : json::array({*type})) {
                if (!name.is_string() ||
                    std::find(std::begin(kTypes), std::end(kTypes), name.get<std::string>()) == std::end(kTypes))
                    refuse(child(at, "type"),
                           "not a type: " + name.dump() + " (string, number, integer, boolean, null, object, array)");
                if (std::find(types.begin(), types.end(), name.get<std::string>()) == types.end())
                    types.push_back(name);
            }
            if (types.empty()) refuse(child(at, "type"), "an empty list of types admits no value");
            return types;
        }
        std::set<Family> families;
        for (const auto& [key, value] : schema.items())
            if (*family_of(key) > Family::Any) families.insert(*family_of(key));
        if (families.size() > 1) refuse(at, "keywords of several types without 'type': say which types it admits");
        if (families.empty()) return {};
        const Family family = *families.begin();
        return {family == Family::Object   ? "object"
                : family == Family::Array  ? "array"
                : family == Family::String ? "string"
                                           : "number"};
    }

    std::string typed(const json& schema, const std::string& type, const std::string& name, const std::string& at) {
        if (type == "string") return string_expr(schema, at);
        if (type == "integer") return integer_expr(schema, at);
        if (type == "number") return number_expr(schema, at);
        if (type == "object") return object_expr(schema, name, at);
        if (type == "array") return array_expr(schema, name, at);
        return shared(type);  // boolean, null
    }

    const json& resolve(const std::string& target, const std::string& at) {
        if (target != "#" && target.rfind("#/", 0) != 0)
            refuse(at, "only references inside the schema (#/$defs/...) are supported, not '" + target + "'");
        const json* node = &root_;
        for (size_t from = 2; from <= target.size() && target != "#";) {
            size_t to = std::min(target.find('/', from), target.size());
            std::string token;
            for (size_t i = from; i < to; ++i)
                token += target.compare(i, 2, "~1") == 0   ? (++i, '/')
                         : target.compare(i, 2, "~0") == 0 ? (++i, '~')
                                                           : target[i];
            if (node->is_object() && node->contains(token))
                node = &(*node)[token];
            else if (node->is_array() && !token.empty() && token.size() < 10 &&
                     token.find_first_not_of("0123456789") == std::string::npos && std::stoul(token) < node->size())
                node = &(*node)[std::stoul(token)];
            else
                refuse(at, "'" + target + "' refers to nothing");
            from = to + 1;
        }
        return *node;
    }

    // One rule per referenced schema, named before it is written, so a schema may refer to itself.
    std::string ref_rule(const json& ref, const std::string& at) {
        if (!ref.is_string()) refuse(at, "must be a string, not " + ref.dump());
        const std::string& target = ref.get_ref<const std::string&>();
        if (const auto known = ref_rules_.find(target); known != ref_rules_.end()) return known->second;
        const json& schema = resolve(target, at);
        if (target == "#") return ref_rules_[target] = "root";
        const std::string name = fresh(target.substr(target.rfind('/') + 1));
        ref_rules_[target] = name;
        define(name, expr(schema, name, target.substr(1)));
        return name;
    }

    // anyOf; oneOf too: a grammar cannot say "exactly one", which is the same where the
    // alternatives exclude each other (as tagged unions and tool calls do).
    std::string alternatives(const json& schema, const char* key, const std::string& name, const std::string& at) {
        alone(schema, at, key);
        const json& list = schema[key];
        if (!list.is_array() || list.empty()) refuse(child(at, key), "must be a non-empty array of schemas");
        std::vector<std::string> rules;
        for (size_t i = 0; i < list.size(); ++i)
            rules.push_back(
                rule(list[i], prefix(name) + (name == "root" ? "alt-" : "") + std::to_string(i), child(at, key, i)));
        return join(rules, " | ");
    }

    std::string values(const json& schema, const std::string& at) {
        alone(schema, at, schema.contains("const") ? "const" : "enum", {"enum", "const", "type"});
        std::vector<json> admitted;
        if (const json* only = find(schema, "const")) admitted.push_back(*only);
        if (const json* list = find(schema, "enum")) {
            if (!list->is_array() || list->empty()) refuse(child(at, "enum"), "must be a non-empty array");
            if (admitted.empty())
                admitted.assign(list->begin(), list->end());
            else if (std::find(list->begin(), list->end(), admitted[0]) == list->end())
                admitted.clear();
        }
        if (schema.contains("type")) {
            const std::vector<std::string> types = types_of(schema, at);
            std::erase_if(admitted, [&](const json& v) {
                return std::none_of(types.begin(), types.end(), [&](const std::string& t) { return has_type(v, t); });
            });
        }
        if (admitted.empty()) refuse(at, "'const', 'enum' and 'type' leave no value");
        std::vector<std::string> literals;
        for (const json& value : admitted) literals.push_back(literal(value.dump()));
        return group(join(literals, " | "));
    }

    // allOf of object schemas (with the schema around it, and what they refer to): one
    // object with all their properties and required ones.
    std::string all_of(const json& schema, const std::string& name, const std::string& at) {
        const json& list = schema["allOf"];
        if (!list.is_array() || list.empty()) refuse(child(at, "allOf"), "must be a non-empty array of schemas");
        const bool only_all_of = std::all_of(schema.items().begin(), schema.items().end(), [](const auto& item) {
            return item.key() == "allOf" || *family_of(item.key()) == Family::Annotation;
        });
        if (list.size() == 1 && only_all_of) return expr(list[0], name, child(at, "allOf", 0));
        ObjectShape shape;
        std::vector<std::pair<std::set<std::string>, std::string>> closed;  // the properties of parts without extras
        std::function<void(const json&, const std::string&, int)> merge = [&](const json& part,
                                                                              const std::string& part_at, int depth) {
            if (part == json(true)) return;
            if (!part.is_object()) refuse(part_at, "allOf merges object schemas only");
            if (depth > 16) refuse(part_at, "allOf and $ref nest too deep");
            check_keywords(part, part_at);
            if (const json* ref = find(part, "$ref")) {
                alone(part, part_at, "$ref");
                if (!ref->is_string()) refuse(child(part_at, "$ref"), "must be a string, not " + ref->dump());
                const std::string& target = ref->get_ref<const std::string&>();
                return merge(resolve(target, child(part_at, "$ref")), target.substr(1), depth + 1);
            }
            std::set<std::string> own;
            for (const auto& [key, value] : part.items()) {
                const std::string key_at = child(part_at, key);
                if (key == "allOf") {
                    if (!value.is_array() || value.empty()) refuse(key_at, "must be a non-empty array of schemas");
                    for (size_t i = 0; i < value.size(); ++i) merge(value[i], child(key_at, i), depth + 1);
                } else if (key == "properties") {
                    if (!value.is_object()) refuse(key_at, "must be an object of schemas");
                    for (const auto& [property, sub] : value.items()) {
                        if (shape.declares(property))
                            refuse(child(key_at, property), "'" + property + "' is declared twice in allOf");
                        shape.properties.push_back({property, &sub, child(key_at, property)});
                        own.insert(property);
                    }
                } else if (key == "required") {
                    shape.required.merge(required_of(part, part_at));
                } else if (key != "additionalProperties" && *family_of(key) != Family::Annotation &&
                           !(key == "type" && (value == json("object") || value == json::array({"object"})))) {
                    refuse(
                        key_at,
                        "allOf merges object schemas only ('properties', 'required', 'additionalProperties': false)");
                }
            }
            if (const json* extra = find(part, "additionalProperties")) {
                if (*extra != json(false))
                    refuse(child(part_at, "additionalProperties"), "allOf merges only additionalProperties false");
                closed.push_back({own, child(part_at, "additionalProperties")});
            }
        };
        merge(schema, at, 0);
        if (shape.properties.empty() && closed.empty()) shape.extra = &kAnyValue;  // as object_expr
        for (const auto& [own, closed_at] : closed)
            for (const Property& property : shape.properties)
                if (!own.contains(property.key))
                    refuse(closed_at, "additionalProperties false in one part of allOf excludes '" + property.key +
                                          "' of another");
        return object(shape, name, at);
    }

    std::set<std::string> required_of(const json& schema, const std::string& at) {
        std::set<std::string> required;
        if (const json* list = find(schema, "required")) {
            if (!list->is_array()) refuse(child(at, "required"), "must be an array of property names");
            for (const json& key : *list) {
                if (!key.is_string())
                    refuse(child(at, "required"), "must be an array of property names, not " + key.dump());
                required.insert(key.get<std::string>());
            }
        }
        return required;
    }

    std::string object_expr(const json& schema, const std::string& name, const std::string& at) {
        ObjectShape shape;
        shape.required = required_of(schema, at);
        const json* properties = find(schema, "properties");
        if (properties && !properties->is_object()) refuse(child(at, "properties"), "must be an object of schemas");
        if (properties)
            for (const auto& [key, sub] : properties->items())
                shape.properties.push_back({key, &sub, child(child(at, "properties"), key)});
        // Without additionalProperties no extra member, as llama.cpp does, except for an
        // object that declares none ({"type": "object"}: any object).
        const json* extra = find(schema, "additionalProperties");
        shape.extra_at = child(at, "additionalProperties");
        if (extra && !extra->is_boolean() && !extra->is_object())
            refuse(shape.extra_at, "must be a boolean or a schema");
        if (extra ? *extra != json(false) : !properties) shape.extra = extra ? extra : &kAnyValue;
        if (!properties && shape.required.empty() && shape.extra &&
            (*shape.extra == json(true) || shape.extra->empty()))
            return shared("object");
        return object(shape, name, at);
    }

    std::string object(ObjectShape shape, const std::string& name, const std::string& at) {
        std::string extra_value;
        if (shape.extra)
            extra_value = *shape.extra == json(true) || shape.extra->empty()
                              ? shared("value")
                              : rule(*shape.extra, prefix(name) + "additional", shape.extra_at);
        for (const std::string& key : shape.required) {
            if (shape.declares(key)) continue;
            if (!shape.extra)
                refuse(child(at, "required"), "'" + key + "' is required but not a property the object may have");
            shape.properties.push_back({key, nullptr, shape.extra_at});
        }
        std::vector<Member> members;
        std::vector<std::string> declared;
        for (const Property& property : shape.properties) {
            declared.push_back(property.key);
            if (property.schema && *property.schema == json(false) && !shape.required.contains(property.key))
                continue;  // a key that may not be there
            const std::string value =
                property.schema ? rule(*property.schema, prefix(name) + property.key, property.at) : extra_value;
            const std::string kv = fresh(prefix(name) + property.key + "-kv");
            define(kv, literal(text::json_quote(property.key)) + " space \":\" space " + value + " space");
            members.push_back({kv, prefix(name) + property.key, shape.required.contains(property.key)});
        }
        std::string extra_kv;
        if (shape.extra) {
            std::string key = shared("string");
            if (!members.empty()) {
                std::string other_keys;
                try {
                    other_keys = string_chars_except(declared);
                } catch (const Error& e) {
                    refuse(shape.extra_at, e.what());
                }
                key = fresh(prefix(name) + "additional-key");
                define(key, "\"\\\"\" " + other_keys + " \"\\\"\"");
                shared("char");
            }
            define(extra_kv = fresh(prefix(name) + "additional-kv"), key + " space \":\" space " + extra_value + " space");
        }
        return "\"{\" space " + (members.empty() && extra_kv.empty() ? "" : members_expr(members, extra_kv) + " ") +
               "\"}\"";
    }

    // The members in order, each after a comma but the first: the first present one is
    // any optional member before the first required one, or that one. A tail that several
    // of those choices share is a rule of its own, to keep the grammar linear in size.
    std::string members_expr(const std::vector<Member>& members, const std::string& extra_kv) {
        const size_t n = members.size();
        size_t first_required = 0;
        while (first_required < n && !members[first_required].required) ++first_required;
        std::vector<std::string> tails(n + 1);  // the members from i on, then the extra ones
        tails[n] = extra_kv.empty() ? "" : "(\",\" space " + extra_kv + ")*";
        for (size_t i = n; i-- > 1;) {
            const std::string kv = "\",\" space " + members[i].kv;
            tails[i] = (members[i].required ? kv : "(" + kv + ")?") + (tails[i + 1].empty() ? "" : " " + tails[i + 1]);
            const bool shared_tail = i >= 2 && i <= first_required + 1;
            if (shared_tail && n - i + (extra_kv.empty() ? 0 : 1) > 1) {
                const std::string rest = fresh(members[i - 1].name + "-rest");
                define(rest, tails[i]);
                tails[i] = rest;
            }
        }
        std::vector<std::string> firsts;
        for (size_t i = 0; i < n && i <= first_required; ++i)
            firsts.push_back(members[i].kv + (tails[i + 1].empty() ? "" : " " + tails[i + 1]));
        if (first_required < n) return group(join(firsts, " | "));
        if (!extra_kv.empty()) firsts.push_back(extra_kv + " " + tails[n]);
        return "(" + join(firsts, " | ") + ")?";
    }

    std::string string_expr(const json& schema, const std::string& at) {
        const json* format = find(schema, "format");
        const json* pattern = find(schema, "pattern");
        const bool lengths = schema.contains("minLength") || schema.contains("maxLength");
        if (int(bool(format)) + int(bool(pattern)) + int(lengths) > 1)
            refuse(at, "only one of 'format', 'pattern' and 'minLength'/'maxLength' may constrain a string");
        if (format) {
            const std::string kind = format->is_string() ? format->get<std::string>() : format->dump();
            if (kind == "date" || kind == "time" || kind == "date-time") return shared(kind + "-string");
            if (kind == "uuid") return shared("uuid");
            refuse(child(at, "format"), "the format '" + kind + "' is not supported (date, time, date-time, uuid are)");
        }
        if (pattern) {
            if (!pattern->is_string()) refuse(child(at, "pattern"), "must be a string");
            std::string body;
            try {
                body = pattern_chars(pattern->get<std::string>());
            } catch (const Error& e) {
                refuse(child(at, "pattern"), e.what());
            }
            if (body.find("char") != std::string::npos) shared("char");
            return "\"\\\"\" " + body + " \"\\\"\"";
        }
        if (!lengths) return shared("string");
        const size_t min = schema.contains("minLength") ? count(schema["minLength"], child(at, "minLength")) : 0;
        const Bound max =
            schema.contains("maxLength") ? Bound(count(schema["maxLength"], child(at, "maxLength"))) : Bound();
        if (max && *max < min) refuse(child(at, "maxLength"), "is below minLength");
        return "\"\\\"\" " + (max == Bound(0) ? "" : repeat(shared("char"), min, max) + " ") + "\"\\\"\"";
    }

    // Bounds as integers: the least and the greatest admitted.
    std::pair<std::optional<int64_t>, std::optional<int64_t>> integer_bounds(const json& schema,
                                                                             const std::string& at) {
        std::optional<int64_t> min, max;
        for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
            const json* value = find(schema, key);
            if (!value) continue;
            if (!value->is_number() || std::fabs(value->get<double>()) > kMaxBound)
                refuse(child(at, key), "must be a number within ±10^15, not " + value->dump());
            const double x = value->get<double>();
            const std::string_view k = key;
            if (k == "minimum" || k == "exclusiveMinimum") {
                const auto least = int64_t(k == "minimum" ? std::ceil(x) : std::floor(x) + 1);
                min = std::max(min.value_or(least), least);
            } else {
                const auto greatest = int64_t(k == "maximum" ? std::floor(x) : std::ceil(x) - 1);
                max = std::min(max.value_or(greatest), greatest);
            }
        }
        if (min && max && *min > *max) refuse(at, "no integer lies within its minimum and maximum");
        return {min, max};
    }

    std::string integer_expr(const json& schema, const std::string& at) {
        const auto [min, max] = integer_bounds(schema, at);
        if (!min && !max) return shared("integer");
        return group(integer_range(min, max));
    }

    // A number's bounds: only minimum 0 (no '-'); others would need decimal arithmetic here.
    std::string number_expr(const json& schema, const std::string& at) {
        for (const char* key : {"exclusiveMinimum", "maximum", "exclusiveMaximum", "minimum"}) {
            const json* value = find(schema, key);
            if (value && !(std::string_view(key) == "minimum" && value->is_number() && value->get<double>() == 0))
                refuse(child(at, key), std::string("the bound ") + key + " " + value->dump() +
                                           " on a number is not supported (minimum 0 is; integers take any bounds)");
        }
        if (!schema.contains("minimum")) return shared("number");
        shared("integral-part");
        shared("decimal-part");
        return R"(integral-part ("." decimal-part)? ([eE] [-+]? decimal-part)?)";
    }

    std::string array_expr(const json& schema, const std::string& name, const std::string& at) {
        const json* items = find(schema, "items");
        const json* tuple = find(schema, "prefixItems");
        std::string tuple_at = child(at, "prefixItems");
        if (items && items->is_array()) {  // draft 4's tuples
            if (tuple) refuse(child(at, "items"), "an array of 'items' beside 'prefixItems'");
            tuple = items, items = nullptr, tuple_at = child(at, "items");
        }
        if (tuple && !tuple->is_array()) refuse(tuple_at, "must be an array of schemas");
        if (items && !items->is_boolean() && !items->is_object()) refuse(child(at, "items"), "must be a schema");
        const size_t min = schema.contains("minItems") ? count(schema["minItems"], child(at, "minItems")) : 0;
        const Bound max =
            schema.contains("maxItems") ? Bound(count(schema["maxItems"], child(at, "maxItems"))) : Bound();
        if (max && *max < min) refuse(child(at, "maxItems"), "is below minItems");
        if (!tuple && !items && min == 0 && !max) return shared("array");
        std::vector<std::string> parts;
        for (size_t i = 0; tuple && i < tuple->size(); ++i)
            parts.push_back(rule((*tuple)[i], prefix(name) + "item-" + std::to_string(i), child(tuple_at, i)) + " space");
        // The items after a tuple: as 'items' says; with no 'items' none, as llama.cpp does
        // (JSON Schema would admit any), so a tuple has the length it lists.
        const size_t k = parts.size();
        std::string rest;
        if (items ? *items != json(false) : !tuple)
            rest = (items ? rule(*items, prefix(name) + "item", child(at, "items")) : shared("value")) + " space";
        if (max && *max < k)
            refuse(child(at, "maxItems"), "is below the number of prefixItems, which are all required here");
        if (rest.empty() && min > k) refuse(child(at, "minItems"), "exceeds the number of items the array may have");
        std::string body = join(parts, " \",\" space ");
        if (!rest.empty() && k == 0)
            body = repeat(rest, min, max, "\",\" space");
        else if (!rest.empty() && max != Bound(k))
            body += " (\",\" space " + rest + ")" + quantifier(min > k ? min - k : 0, max ? Bound(*max - k) : Bound());
        return "\"[\" space " + (body.empty() ? "" : body + " ") + "\"]\"";
    }
};

}  // namespace

std::string json_schema_grammar(const nlohmann::ordered_json& schema) { return Converter(schema).convert(); }

std::string json_object_grammar() { return Converter(json{{"type", "object"}}).convert(); }

}  // namespace edgerun
