// Reading a request body's fields: shared by the API's parts (openai_api.cpp,
// output_grammar.cpp).
#pragma once

#include "openai_api.hpp"

namespace edgerun::serve {

inline ApiError wrong_type(const std::string& field, const char* expected) {
    return ApiError(400, "'" + field + "' must be " + expected, field, "invalid_type");
}

// The field's value when present and not null; absent and null both mean "the default".
inline const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace edgerun::serve
