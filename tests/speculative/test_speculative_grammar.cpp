// Speculative decoding under a grammar and logit biases: greedy output token for token
// the plain constrained loop's, whatever the draft; sampled output distributed as the
// plain loop draws (the sampler's own draw when the grammar allows it, else a draw among
// the allowed tokens), checked against that distribution by enumeration.
#include "chi_squared.hpp"
#include "speculative_models.hpp"

#include <edgerun/drafter.hpp>
#include <edgerun/speculative.hpp>
#include <edgerun/text/grammar.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>

using namespace edgerun;
using namespace edgerun::test;

namespace {

const char* kWords = "root ::= [a-z ]+";
// Bounded, so that generation ends on the grammar within the token budget.
const char* kRecord = R"(root ::= "{\"" [a-z]{1,4} "\":\"" [a-z ]{1,6} "\"}")";

bool is_word(const std::string& piece) {
    return piece.size() >= 2 && std::all_of(piece.begin(), piece.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// A prompt of lowercase-word tokens, three times over: text the grammars allow, with
// repeats for the lookup drafter to find.
std::vector<int32_t> word_prompt(const text::Tokenizer& tokenizer, uint64_t seed) {
    std::vector<int32_t> words;
    for (int32_t id = 0; id < tokenizer.n_tokens(); ++id)
        if (is_word(tokenizer.token_to_piece(id))) words.push_back(id);
    REQUIRE(words.size() > 100);
    Pcg64 rng = Pcg64::from_seed(seed);
    std::vector<int32_t> part(8);
    for (auto& t : part) t = words[rng.next() % words.size()];
    std::vector<int32_t> out;
    for (int i = 0; i < 3; ++i) out.insert(out.end(), part.begin(), part.end());
    return out;
}

struct Run {
    std::string text;
    GenerationStats stats;
};

Run generate(Loaded& target, Sampler& sampler, const std::vector<int32_t>& prompt, Drafter* drafter,
             int32_t max_draft, const GenerationSettings& settings) {
    auto runner = target.engine->new_runner();
    Generator generator(*runner, sampler, *target.tokenizer);
    generator.speculate(drafter, SpeculationSettings{max_draft, false});
    Run out;
    out.stats = generator.generate(prompt, settings, [&](std::string_view text) { out.text += text; });
    // The cache holds the conversation: the prompt, then all but the last token.
    std::vector<int32_t> expected(prompt);
    expected.insert(expected.end(), out.stats.tokens.begin(), out.stats.tokens.end() - 1);
    CHECK(generator.history() == expected);
    return out;
}

// Proposes tokens the grammars refuse (uppercase pairs): every draft is cut to nothing.
class UppercaseDrafter final : public Drafter {
public:
    explicit UppercaseDrafter(const text::Tokenizer& tokenizer) {
        for (int32_t id = 0; id < tokenizer.n_tokens() && tokens_.size() < 8; ++id) {
            const std::string piece = tokenizer.token_to_piece(id);
            if (piece.size() == 2 && piece[0] >= 'A' && piece[0] <= 'Z') tokens_.push_back(id);
        }
    }
    void propose(std::span<const int32_t>, int32_t max_tokens, RequestSampler&, Draft& out) override {
        out.clear();
        for (int32_t i = 0; i < max_tokens && i < int32_t(tokens_.size()); ++i) out.tokens.push_back(tokens_[size_t(i)]);
    }
    double relative_cost() const override { return 0.0; }

private:
    std::vector<int32_t> tokens_;
};

}  // namespace

TEST_CASE("under a grammar and biases, greedy output is the plain loop's token for token, whatever the draft") {
    Loaded target = load(synth_model("F32", 1));
    Loaded close = load(synth_model("Q4_0", 1));
    const auto prompt = word_prompt(*target.tokenizer, 1);
    auto self_runner = target.engine->new_runner();
    auto close_runner = close.engine->new_runner();
    ModelDrafter self(*self_runner, 0.0), close_draft(*close_runner, 0.0);
    LookupDrafter lookup;
    UppercaseDrafter refused(*target.tokenizer);

    for (const char* gbnf : {kWords, kRecord}) {
        CAPTURE(std::string(gbnf));
        GenerationSettings settings;
        settings.n_predict = 24;
        settings.grammar = text::Grammar::parse(gbnf);
        Sampler sampler = make_sampler(0.0f, 40, 1);
        const Run unbiased = generate(target, sampler, prompt, nullptr, 0, settings);
        REQUIRE(unbiased.stats.tokens.size() >= 4);
        // A ban on the first letters the unbiased run chose (where the grammar leaves a choice)
        // and a push toward a prompt word: the biases change the output, and drafts must
        // follow them.
        auto is_letters = [&](int32_t t) {
            const std::string piece = target.tokenizer->token_to_piece(t);
            return !piece.empty() &&
                   std::all_of(piece.begin(), piece.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == ' '; });
        };
        const auto word = std::find_if(unbiased.stats.tokens.begin(), unbiased.stats.tokens.end(), is_letters);
        REQUIRE(word != unbiased.stats.tokens.end());
        settings.logit_bias = {{*word, -100.0f}, {prompt[3], 4.0f}};
        const Run plain = generate(target, sampler, prompt, nullptr, 0, settings);
        CHECK(plain.stats.tokens != unbiased.stats.tokens);
        CHECK(plain.stats.draft_steps == 0);
        if (gbnf == kWords) {
            CHECK(std::regex_match(plain.text, std::regex("[a-z ]+")));
            CHECK(plain.stats.stop_reason == "length");
        } else {
            CHECK(std::regex_match(plain.text, std::regex(R"(\{"[a-z]{1,4}":"[a-z ]{1,6}"\})")));
            CHECK(plain.stats.stop_reason == "grammar");
        }

        struct Case {
            const char* name;
            Drafter* drafter;
        };
        for (const Case& c : {Case{"self", &self}, Case{"Q4_0", &close_draft}, Case{"lookup", &lookup},
                              Case{"refused", &refused}})
            for (int32_t k : {1, 4}) {
                CAPTURE(std::string(c.name));
                CAPTURE(k);
                const Run spec = generate(target, sampler, prompt, c.drafter, k, settings);
                CHECK(spec.stats.tokens == plain.stats.tokens);
                CHECK(spec.text == plain.text);
                CHECK(spec.stats.stop_reason == plain.stats.stop_reason);
                // Cut before its first refused token, a refused draft costs no verify row.
                if (c.drafter == &refused) CHECK(spec.stats.draft_steps == 0);
                if (c.drafter == &self) {
                    // The model as its own draft, drawing under the grammar and the biases
                    // as the target does: its proposals are the target's choices.
                    CHECK(spec.stats.drafted_tokens > 0);
                    CHECK(spec.stats.accepted_tokens == spec.stats.drafted_tokens);
                    CHECK(spec.stats.target_steps < spec.stats.generated_tokens);
                }
            }
    }
}

namespace {

// What the plain loop draws from at one row, written from its definition
// (sample_constrained): the sampler's distribution p kept on the tokens the grammar
// allows, and p's mass on the refused ones redrawn from the sampler's distribution over
// the logits with those at -infinity. `redraw_only`: the masked distribution alone (what
// masking before sampling would give; with top-k it differs).
std::vector<double> drawn_under(Sampler& sampler, std::span<const float> logits, const text::TokenConstraint& grammar,
                                bool redraw_only) {
    const auto n = int32_t(logits.size());
    std::vector<float> p(logits.size()), masked(logits.begin(), logits.end()), redraw(logits.size());
    sampler.distribution(logits.data(), n, p.data());
    for (int32_t t = 0; t < n; ++t)
        if (!grammar.allows(t)) masked[size_t(t)] = -std::numeric_limits<float>::infinity();
    sampler.distribution_masked(masked.data(), n, redraw.data());
    std::vector<double> out(logits.size());
    double refused = 0.0;
    for (int32_t t = 0; t < n; ++t) {
        if (grammar.allows(t)) out[size_t(t)] = p[size_t(t)];
        else refused += p[size_t(t)];
    }
    for (int32_t t = 0; t < n; ++t)
        out[size_t(t)] = redraw_only ? redraw[size_t(t)] : out[size_t(t)] + refused * redraw[size_t(t)];
    return out;
}

double refused_mass(Loaded& target, const std::vector<int32_t>& prompt, const text::TokenConstraint& grammar) {
    Sampler sampler = make_sampler(kTemperature, kTopK, 1);
    auto runner = target.engine->new_runner();
    runner->feed(prompt);
    std::vector<float> p(static_cast<size_t>(kVocab));
    sampler.distribution(runner->last_logits().data(), int32_t(kVocab), p.data());
    double refused = 0.0;
    for (int32_t t = 0; t < kVocab; ++t)
        if (!grammar.allows(t)) refused += p[size_t(t)];
    return refused;
}

// The exact distribution of the first two tokens the plain loop draws after `prompt`.
std::map<Pair, double> exact_two_tokens(Loaded& target, const std::vector<int32_t>& prompt,
                                        const text::TokenConstraint& grammar, bool redraw_only) {
    Sampler sampler = make_sampler(kTemperature, kTopK, 1);
    auto runner = target.engine->new_runner();
    runner->feed(prompt);
    for (int32_t t : prompt) sampler.accept(t);
    const std::vector<double> first = drawn_under(sampler, runner->last_logits(), grammar, redraw_only);
    std::map<Pair, double> out;
    for (int32_t a = 0; a < kVocab; ++a) {
        if (first[size_t(a)] <= 0) continue;
        runner->rewind(int32_t(prompt.size()));
        runner->feed(std::span<const int32_t>(&a, 1));
        text::TokenConstraint after = grammar;
        after.accept(a);
        const std::vector<double> second = drawn_under(sampler, runner->last_logits(), after, redraw_only);
        for (int32_t b = 0; b < kVocab; ++b)
            if (second[size_t(b)] > 0) out[{a, b}] = first[size_t(a)] * second[size_t(b)];
    }
    return out;
}

std::map<Pair, int> sample_two_tokens(Loaded& target, Drafter* drafter, int32_t max_draft,
                                      const std::vector<int32_t>& prompt, const GenerationSettings& settings,
                                      double* acceptance) {
    auto runner = target.engine->new_runner();
    Sampler sampler = make_sampler(kTemperature, kTopK, 1);
    Generator generator(*runner, sampler, *target.tokenizer);
    generator.speculate(drafter, SpeculationSettings{max_draft, false, 0.0});
    std::map<Pair, int> counts;
    int64_t drafted = 0, accepted = 0;
    for (int seed = 1; seed <= kRuns; ++seed) {
        sampler = make_sampler(kTemperature, kTopK, uint64_t(seed));
        const GenerationStats stats = generator.generate(prompt, settings, [](std::string_view) {});
        REQUIRE(stats.tokens.size() == 2);
        ++counts[{stats.tokens[0], stats.tokens[1]}];
        drafted += stats.drafted_tokens;
        accepted += stats.accepted_tokens;
    }
    *acceptance = drafted ? double(accepted) / double(drafted) : 0.0;
    return counts;
}

// The chi-squared p-value of `counts` against `exact`, the pairs expected fewer than 5
// times pooled into one cell; a pair `exact` cannot produce gives 0.
double p_value(const std::map<Pair, int>& counts, const std::map<Pair, double>& exact) {
    for (const auto& [pair, count] : counts)
        if (!exact.count(pair)) return 0.0;
    std::vector<double> observed, expected;
    double pooled_observed = 0, pooled_expected = 0;
    for (const auto& [pair, probability] : exact) {
        const auto it = counts.find(pair);
        const double seen = it == counts.end() ? 0 : it->second;
        if (probability * kRuns < 5.0) {
            pooled_observed += seen;
            pooled_expected += probability * kRuns;
            continue;
        }
        observed.push_back(seen);
        expected.push_back(probability * kRuns);
    }
    if (pooled_expected > 0) {
        observed.push_back(pooled_observed);
        expected.push_back(pooled_expected);
    }
    return test::chi_squared_p_value(test::chi_squared_statistic(observed, expected), int(observed.size()) - 1);
}

}  // namespace

TEST_CASE("sampling under a grammar: two tokens distributed as the plain loop draws, drafting or not") {
    Loaded target = load(synth_model("Q8_0", 1));
    Loaded draft = load(synth_model("Q4_0", 1));
    GenerationSettings settings;
    settings.n_predict = 2;
    settings.ignore_eos = true;
    settings.grammar = text::Grammar::parse(kWords);
    const auto trie = text::TokenConstraint::build_trie(*target.tokenizer);
    const text::TokenConstraint grammar(settings.grammar, *target.tokenizer, trie);
    // A prompt where the grammar refuses part of the sampler's first choices, so that
    // both the kept draw and the redraw happen.
    std::vector<int32_t> prompt;
    for (uint64_t seed = 1; seed < 64 && prompt.empty(); ++seed) {
        auto candidate = word_prompt(*target.tokenizer, seed);
        const double refused = refused_mass(target, candidate, grammar);
        if (refused > 0.2 && refused < 0.8) prompt = candidate;
    }
    REQUIRE(!prompt.empty());
    const auto exact = exact_two_tokens(target, prompt, grammar, false);
    const auto redraw_only = exact_two_tokens(target, prompt, grammar, true);
    double total = 0;
    for (const auto& [pair, probability] : exact) total += probability;
    CHECK(total == doctest::Approx(1.0).epsilon(1e-5));

    auto draft_runner = draft.engine->new_runner();
    ModelDrafter drafter(*draft_runner, 0.0);
    LookupDrafter lookup;
    double acceptance = 0;
    const auto plain = sample_two_tokens(target, nullptr, 0, prompt, settings, &acceptance);
    // The test tells the two distributions apart: the plain loop's draws fit one only.
    CHECK(p_value(plain, exact) >= kSignificance);
    CHECK(p_value(plain, redraw_only) < kSignificance);

    struct Case {
        const char* name;
        Drafter* drafter;
        int32_t max_draft;
    };
    // Two tokens leave room for one draft token per step (the second is the bonus).
    for (const Case& c : {Case{"draft model", &drafter, 1}, Case{"lookup", &lookup, 1}}) {
        const auto counts = sample_two_tokens(target, c.drafter, c.max_draft, prompt, settings, &acceptance);
        const double p = p_value(counts, exact);
        MESSAGE(std::string(c.name) << ": p = " << p << ", acceptance " << acceptance);
        CAPTURE(std::string(c.name));
        CHECK(p >= kSignificance);
        if (c.drafter == &drafter) {
            // Both branches of the rule ran (some 60 rejections in 2000): the draft draws
            // under the grammar too, so most of its tokens are kept.
            CHECK(acceptance > 0.5);
            CHECK(acceptance < 0.99);
        }
    }
}
