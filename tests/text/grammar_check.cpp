// edgerun_grammar_check VOCAB: the token constraint over a real vocabulary (llama.cpp's
// vocabulary files: byte-level BPE pieces that end inside a UTF-8 character, SentencePiece
// byte tokens), under the JSON grammar of the text tests.
//
// 1. Documents tokenized as a model would write them are taken token by token, and end.
// 2. Random walks through the mask (a token drawn among the allowed ones, taken, again):
//    at every step mask() and allows() agree on every token, and the text so far is
//    accepted whole by a fresh matcher.
//
// VOCAB is a model file, opened through the format plugin that claims it.
#include "json_gbnf.hpp"
#include "text_check_util.hpp"

#include <edgerun/text/grammar.hpp>
#include <edgerun/text/tokenizer.hpp>

#include <cmath>
#include <iostream>
#include <random>

using namespace edgerun;
using namespace edgerun::text;

namespace {

int failures = 0;

void fail(const std::string& what) {
    if (++failures <= 20) std::cout << "  FAIL " << what << "\n";
}

// The tokens mask() leaves finite, checked against allows() one by one.
std::vector<TokenId> allowed_tokens(const TokenConstraint& constraint, const Tokenizer& tokenizer,
                                    const std::string& where) {
    std::vector<float> logits(size_t(tokenizer.n_tokens()), 0.0f);
    constraint.mask(logits);
    std::vector<TokenId> allowed;
    int disagree = 0;
    for (TokenId id = 0; id < tokenizer.n_tokens(); ++id) {
        const bool masked_in = std::isfinite(logits[size_t(id)]);
        if (masked_in != constraint.allows(id) && disagree++ < 3)
            fail(where + ": token " + std::to_string(id) + " '" + tokenizer.token_to_piece(id, true) + "' mask says " +
                 (masked_in ? "allowed" : "refused") + ", allows() the opposite");
        if (masked_in) allowed.push_back(id);
    }
    return allowed;
}

void check_documents(const Tokenizer& tokenizer, const std::shared_ptr<const Grammar>& grammar) {
    const char* const documents[] = {
        R"({"name": "Zoë", "tags": ["日本語", "emoji 😀", "tab\tand \"quote\""], "n": [1, -2.5e3, true, null]})",
        "[\n  {\"a\": {}},\n  [],\n  \"\\u00e9\\n\"\n]",
        R"("Größe: 12 µm, ½ cup, Ελληνικά")",
    };
    for (const char* document : documents) {
        TokenConstraint constraint(grammar, tokenizer);
        const std::vector<TokenId> ids = tokenizer.encode(document, false, false);
        bool taken = true;
        for (size_t i = 0; i < ids.size() && taken; ++i) {
            taken = constraint.allows(ids[i]);
            if (!taken) {
                fail(std::string("document ") + document + ": token " + std::to_string(i) + " '" +
                     tokenizer.token_to_piece(ids[i], true) + "' refused");
                break;
            }
            constraint.accept(ids[i]);
        }
        if (taken && !tokenizer.eog_ids().empty() && !constraint.allows(tokenizer.eog_ids().front()))
            fail(std::string("document ") + document + ": whole, yet the end is refused");
    }
}

void random_walks(const Tokenizer& tokenizer, const std::shared_ptr<const Grammar>& grammar, int walks, int steps) {
    std::mt19937 rng(12345);
    for (int walk = 0; walk < walks; ++walk) {
        TokenConstraint constraint(grammar, tokenizer);
        std::string text;
        for (int step = 0; step < steps; ++step) {
            const std::string where = "walk " + std::to_string(walk) + " step " + std::to_string(step);
            const std::vector<TokenId> allowed = allowed_tokens(constraint, tokenizer, where);
            if (allowed.empty()) {
                fail(where + ": nothing allowed");
                break;
            }
            // Multibyte and byte tokens are rare among the allowed ones; draw them half the time,
            // so that walks cut characters.
            std::vector<TokenId> pool;
            for (TokenId id : allowed) {
                const std::string piece = tokenizer.token_to_piece(id, false);
                if (!piece.empty() && (uint8_t(piece.back()) >= 0x80)) pool.push_back(id);
            }
            if (pool.empty() || rng() % 2) pool = allowed;
            const TokenId id = pool[rng() % pool.size()];
            if (tokenizer.is_eog(id)) break;
            constraint.accept(id);
            text += tokenizer.token_to_piece(id, false);
            GrammarMatcher fresh(grammar);
            if (!fresh.accept(text)) fail(where + ": a fresh matcher refuses the text so far");
            if (constraint.must_end()) break;
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: edgerun_grammar_check VOCAB\n";
        return 2;
    }
    try {
        const Tokenizer tokenizer(test::load_test_vocab(argv[1]));
        const auto grammar = grammar_test::json_grammar();
        check_documents(tokenizer, grammar);
        random_walks(tokenizer, grammar, 4, 12);
        std::cout << argv[1] << ": " << tokenizer.n_tokens() << " tokens, " << failures << " failures\n";
        return failures == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "edgerun_grammar_check: " << e.what() << "\n";
        return 1;
    }
}
