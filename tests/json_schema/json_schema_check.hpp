// Checking a JSON Schema's grammar by the documents it admits: what the grammar engine takes
// whole (accept, then can_end), with the grammar in the message when a check fails.
#pragma once

#include "json_schema_grammar.hpp"

#include <doctest/doctest.h>
#include <edgerun/text/grammar.hpp>

#include <climits>
#include <memory>
#include <string>
#include <vector>

namespace json_schema_check {

struct Checked {
    std::string gbnf;
    std::shared_ptr<const edgerun::text::Grammar> grammar;

    bool admits(const std::string& document) const {
        edgerun::text::GrammarMatcher matcher(grammar);
        return matcher.accept(document) && matcher.can_end();
    }
};

inline Checked parsed(const std::string& gbnf) {
    INFO(gbnf);
    return {gbnf, edgerun::text::Grammar::parse(gbnf)};
}

inline void check_documents(const std::string& schema, const std::vector<std::string>& admitted,
                            const std::vector<std::string>& refused) {
    const Checked checked = parsed(edgerun::json_schema_grammar(nlohmann::ordered_json::parse(schema)));
    for (const std::string& document : admitted)
        CHECK_MESSAGE(checked.admits(document), "refused ", document, "\nschema ", schema, "\n", checked.gbnf);
    for (const std::string& document : refused)
        CHECK_MESSAGE(!checked.admits(document), "admitted ", document, "\nschema ", schema, "\n", checked.gbnf);
}

// How many rules the grammar defines under `name`.
inline int count_rules(const std::string& gbnf, const std::string& name) {
    int defined = 0;
    for (size_t at = 0; at < gbnf.size(); at = gbnf.find('\n', at) + 1) {
        if (gbnf.compare(at, name.size() + 5, name + " ::= ") == 0) ++defined;
        if (gbnf.find('\n', at) == std::string::npos) break;
    }
    return defined;
}

}  // namespace json_schema_check
