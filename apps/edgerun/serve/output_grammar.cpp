// What a request constrains its answer to, as a grammar (text/grammar.hpp): the OpenAI
// API's response_format (json_object, json_schema), llama.cpp's `grammar` (GBNF) and
// `json_schema` fields, and tool calls: forced (tool_choice "required" or a named function:
// the template's call format around the functions' parameter schemas) or, with "auto",
// held to that format once the answer opens one (a lazy grammar).
#include "json_fields.hpp"
#include "openai_api.hpp"

#include "../json_schema_grammar.hpp"

#include <edgerun/host_api.hpp>

#include <optional>
#include <vector>

namespace edgerun::serve {

namespace {

struct GrammarSource {
    GrammarSource(std::string field, std::string gbnf, std::string root = "root")
        : field(std::move(field)), gbnf(std::move(gbnf)), root(std::move(root)) {}
    std::string field;  // the request field it came from, for errors
    std::string gbnf;
    std::string root;
    text::GrammarTrigger trigger;  // a lazy grammar's
};

std::string schema_grammar(const json& schema, const std::string& where) {
    try {
        return json_schema_grammar(schema);
    } catch (const Error& e) {
        throw ApiError(400, "'" + where + "': " + e.what(), where, "invalid_value");
    }
}

// Local references ("#/$defs/...") of a schema moved to `base` inside a larger one.
void rebase_refs(json& schema, const std::string& base) {
    if (schema.is_array()) {
        for (json& item : schema) rebase_refs(item, base);
    } else if (schema.is_object()) {
        for (auto& [key, value] : schema.items()) {
            if (key == "$ref" && value.is_string() && value.get<std::string>().rfind('#', 0) == 0)
                value = base + value.get<std::string>().substr(1);
            else
                rebase_refs(value, base);
        }
    }
}

// The schema of one call in the template's format: {"name": NAME, "arguments": {...}}
// (Qwen's <tool_call> blocks) or {"name": NAME, "parameters": {...}} (Llama 3.1+), placed at
// `at` of the whole answer's schema (its references rebased there).
json call_schema(const json& function, ToolCallFormat format, const std::string& at) {
    const json* parameters = field(function, "parameters");
    const char* key = format == ToolCallFormat::JsonReply ? "parameters" : "arguments";
    json arguments = parameters ? *parameters : json{{"type", "object"}, {"additionalProperties", true}};
    rebase_refs(arguments, at + "/properties/" + key);
    return json{{"type", "object"},
                {"properties", {{"name", {{"const", *field(function, "name")}}}, {key, std::move(arguments)}}},
                {"required", json::array({"name", key})}};
}

// The answer's calls of the functions in `tools` (all of them, or the one `named`): the
// template's call format around their parameter schemas. Malformed tools are left for
// chat_prompt (which runs after this) to name.
GrammarSource tool_calls(const json& body, const json& tools, const std::string& named, ToolCallFormat format) {
    if (!tools.is_array()) throw wrong_type("tools", "an array");
    std::vector<std::pair<size_t, const json*>> chosen;  // index in tools, function
    for (size_t i = 0; i < tools.size(); ++i) {
        const json& tool = tools[i];
        const json* function = tool.is_object() ? field(tool, "function") : nullptr;
        const json* name = function && function->is_object() ? field(*function, "name") : nullptr;
        if (name && name->is_string() && (named.empty() || *name == json(named))) chosen.emplace_back(i, function);
    }
    if (chosen.empty())
        throw ApiError(400, "'tool_choice' names the function '" + named + "', which 'tools' does not give", "tool_choice",
                       "invalid_value");
    json schema;
    if (chosen.size() == 1) {
        schema = call_schema(*chosen[0].second, format, "#");
    } else {
        schema = json{{"anyOf", json::array()}};
        for (size_t i = 0; i < chosen.size(); ++i)
            schema["anyOf"].push_back(call_schema(*chosen[i].second, format, "#/anyOf/" + std::to_string(i)));
    }
    GrammarSource source("tool_choice", "");
    try {
        source.gbnf = json_schema_grammar(schema);
    } catch (const Error&) {
        // Name what the conversion cannot take where the client wrote it: in one tool's parameters.
        for (const auto& [i, function] : chosen)
            if (const json* parameters = field(*function, "parameters"))
                schema_grammar(*parameters, "tools[" + std::to_string(i) + "].function.parameters");
        schema_grammar(schema, "tools");  // none alone: the 400 names the tools as a whole
    }
    if (format == ToolCallFormat::JsonReply) return source;  // the whole reply is the call
    // Qwen's blocks, as its template shows them; several when parallel calls are allowed.
    const json* parallel = field(body, "parallel_tool_calls");
    const bool several = named.empty() && !(parallel && *parallel == json(false));
    source.gbnf += "\nedgerun-call-block ::= \"<tool_call>\\n\" root \"\\n</tool_call>\"\n";
    source.gbnf += several ? "edgerun-calls ::= edgerun-call-block (\"\\n\" edgerun-call-block)*\n"
                           : "edgerun-calls ::= edgerun-call-block\n";
    source.root = "edgerun-calls";
    return source;
}

// tool_choice "required" (any of the tools) or {"type": "function", "function": {"name"}}:
// the answer is calls and nothing else.
GrammarSource forced_calls(const json& body, const json& tool_choice, ToolCallFormat format) {
    const json* tools = field(body, "tools");
    if (!tools || tools->empty())
        throw ApiError(400, "'tool_choice' forces a call but 'tools' gives none", "tool_choice", "invalid_value");
    std::string named;
    if (tool_choice.is_object()) {
        const json* function = field(tool_choice, "function");
        const json* name = function && function->is_object() ? field(*function, "name") : nullptr;
        if (!name || !name->is_string() || tool_choice.value("type", json("function")) != json("function"))
            throw ApiError(400, "'tool_choice' must be 'none', 'auto', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                           "tool_choice", "invalid_value");
        named = name->get<std::string>();
    }
    return tool_calls(body, *tools, named, format);
}

// tool_choice "auto": the answer may be words, and a call it opens is held to the call
// format (as llama.cpp does): a <tool_call> block (Qwen), or a reply that opens as a call
// object (Llama 3: {"name"). Tools whose schemas a grammar cannot say leave the calls
// free, as they were before grammars.
std::optional<GrammarSource> lazy_calls(const json& body, ToolCallFormat format) {
    const json* tools = field(body, "tools");
    if (!tools || tools->empty()) return std::nullopt;
    try {
        GrammarSource source = tool_calls(body, *tools, "", format);
        if (format == ToolCallFormat::TaggedBlocks) {
            source.trigger.text = "<tool_call>";
        } else {
            source.trigger.text = "{\"name\"";
            source.trigger.at_start = true;
        }
        return source;
    } catch (const ApiError&) {
        return std::nullopt;
    }
}

}  // namespace

OpenAiApi::OutputGrammar OpenAiApi::output_grammar(const json& body, Endpoint endpoint) const {
    std::vector<GrammarSource> sources;
    if (const json* format = field(body, "response_format")) {
        if (!format->is_object()) throw wrong_type("response_format", "an object");
        const json* type = field(*format, "type");
        if (!type || !type->is_string()) throw wrong_type("response_format.type", "a string");
        const std::string kind = type->get<std::string>();
        if (kind == "json_object") {  // llama.cpp's server takes a schema here too
            const json* schema = field(*format, "schema");
            sources.push_back({"response_format", schema ? schema_grammar(*schema, "response_format.schema")
                                                         : json_object_grammar()});
        } else if (kind == "json_schema") {
            const json* spec = field(*format, "json_schema");
            if (!spec || !spec->is_object()) throw wrong_type("response_format.json_schema", "an object");
            const json* schema = field(*spec, "schema");
            sources.push_back({"response_format", schema ? schema_grammar(*schema, "response_format.json_schema.schema")
                                                         : json_object_grammar()});
        } else if (kind != "text") {
            throw ApiError(400, "'response_format.type' must be 'text', 'json_object' or 'json_schema', not '" + kind + "'",
                           "response_format.type", "invalid_value");
        }
    }
    if (const json* schema = field(body, "json_schema")) sources.push_back({"json_schema", schema_grammar(*schema, "json_schema")});
    if (const json* gbnf = field(body, "grammar")) {
        if (!gbnf->is_string()) throw wrong_type("grammar", "a string (GBNF)");
        sources.push_back({"grammar", gbnf->get<std::string>()});
    }
    const json* tool_choice = field(body, "tool_choice");
    if (endpoint == Endpoint::Chat && tool_choice && !(*tool_choice == json("none") || *tool_choice == json("auto"))) {
        if (!(*tool_choice == json("required") || tool_choice->is_object()))
            throw ApiError(400, "'tool_choice' must be 'none', 'auto', 'required' or a function", "tool_choice",
                           "invalid_value");
        sources.push_back(forced_calls(body, *tool_choice, tool_call_format()));
    }
    // Lazily held calls only where nothing else constrains the answer: a grammar from the
    // start leaves no room for a call.
    if (endpoint == Endpoint::Chat && sources.empty() && lazy_tool_grammar_ && !(tool_choice && *tool_choice == json("none")))
        if (std::optional<GrammarSource> lazy = lazy_calls(body, tool_call_format())) sources.push_back(std::move(*lazy));
    if (sources.empty()) return {};
    if (sources.size() > 1)
        throw ApiError(400, "'" + sources[0].field + "' and '" + sources[1].field + "' both constrain the answer: give one",
                       sources[1].field, "invalid_value");
    try {
        return {text::Grammar::parse(sources[0].gbnf, sources[0].root), sources[0].trigger};
    } catch (const Error& e) {
        throw ApiError(400, "'" + sources[0].field + "': " + e.what(), sources[0].field, "invalid_value");
    }
}

}  // namespace edgerun::serve
