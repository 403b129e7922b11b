// JSON Schema as a GBNF grammar (text/grammar.hpp) for constrained decoding: the
// response_format json_schema and json_object of the OpenAI API, --json-schema, and
// forced tool calls. The approach is llama.cpp's (json-schema-to-grammar): properties in
// the schema's order, optional ones optional but in place, whitespace between tokens
// bounded so a model cannot spin on it. Unlike llama.cpp's, a value's rule ends at its
// last character (whitespace goes between tokens, never after the document), so
// generation stops at the closing brace rather than spend tokens on padding. Where a
// schema asks for what a grammar here cannot say, the conversion refuses rather than
// answer with a looser grammar; it may be narrower than the schema (one spelling of a
// character, a fixed property order).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace edgerun {

// GBNF, root rule `root`, whose sentences are the JSON documents `schema` admits. Throws
// Error (ER_E_INVALID_ARGUMENT) naming the unsupported keyword or the bad value and
// where it is, as a JSON pointer (/properties/age/minimum).
std::string json_schema_grammar(const nlohmann::ordered_json& schema);

// GBNF, root rule `root`, for any JSON object (response_format {"type": "json_object"}).
std::string json_object_grammar();

}  // namespace edgerun
