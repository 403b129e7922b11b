// The JSON grammar the grammar tests share: llama.cpp's grammars/json.gbnf in shape.
#pragma once

#include <edgerun/text/grammar.hpp>

#include <memory>

namespace grammar_test {

// llama.cpp's grammars/json.gbnf in shape (written here, and with '/' among the escapes),
// laid out over several lines the way llama.cpp allows: inside parentheses and after '|'.
inline const char* const kJson = R"gbnf(
# A JSON value, with whitespace bounded so a model cannot pad forever.
root   ::= ws value
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ("0" | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws

ws ::= | " " | "\n" [ \t]{0,20}
)gbnf";

inline std::shared_ptr<const edgerun::text::Grammar> json_grammar() {
    static const auto grammar = edgerun::text::Grammar::parse(kJson);
    return grammar;
}

}  // namespace grammar_test
