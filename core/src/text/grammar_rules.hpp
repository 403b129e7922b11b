// What the grammar's parser and its matcher share about the rule layout (grammar.hpp's
// GrammarElement): internal to the text library.
#pragma once

#include <edgerun/host_api.hpp>
#include <edgerun/text/grammar.hpp>

#include <string>

namespace edgerun::text::grammar_detail {

using Element = GrammarElement;

[[noreturn]] inline void fail(const std::string& message) {
    throw Error("grammar: " + message, ER_E_INVALID_ARGUMENT);
}

inline bool ends_alternative(const Element* e) { return e->kind == Element::kEnd || e->kind == Element::kAlt; }

// Calls `visit` with the first element of each alternative of `rule` (kAlt or kEnd when it is empty).
template <typename Visit>
inline void for_each_alternative(const std::vector<Element>& rule, Visit visit) {
    const Element* e = rule.data();
    while (true) {
        visit(e);
        while (!ends_alternative(e)) ++e;
        if (e->kind == Element::kEnd) return;
        ++e;
    }
}

}  // namespace edgerun::text::grammar_detail
