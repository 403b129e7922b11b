// Speculative decoding on small synthesized models (cpu_ref): greedy output token for
// token the target's whatever the draft; sampled output distributed as the target's,
// checked against the exact distribution by enumeration with a chi-squared test, which
// each planted fault fails; the draft's vocabulary checked.
#include "chi_squared.hpp"
#include "speculative_models.hpp"

#include <edgerun/drafter.hpp>
#include <edgerun/speculative.hpp>

#include <doctest/doctest.h>

#include <map>

using namespace edgerun;
using namespace edgerun::test;

namespace {

// Proposes tokens the target would hardly choose: a deliberately bad draft.
class WrongDrafter final : public Drafter {
public:
    void propose(std::span<const int32_t> context, int32_t max_tokens, RequestSampler&, Draft& out) override {
        out.clear();
        for (int32_t i = 0; i < max_tokens; ++i) out.tokens.push_back(int32_t((context.size() * 31 + i * 17) % kVocab));
    }
    double relative_cost() const override { return 0.0; }
};

struct Run {
    std::vector<int32_t> tokens;
    GenerationStats stats;
};

Run run_greedy(Loaded& target, const std::vector<int32_t>& prompt, Drafter* drafter, int32_t max_draft, bool adaptive) {
    Sampler sampler = make_sampler(0.0f, 40, 1);
    auto runner = target.engine->new_runner();
    Generator generator(*runner, sampler, *target.tokenizer);
    SpeculationSettings speculation;
    speculation.max_draft = max_draft;
    speculation.adaptive = adaptive;
    generator.speculate(drafter, speculation);
    Run out;
    out.stats = generator.generate(prompt, settings_for(24), [](std::string_view) {});
    out.tokens = out.stats.tokens;
    // What the cache holds is the conversation: the prompt, then all but the last token.
    std::vector<int32_t> expected(prompt);
    expected.insert(expected.end(), out.tokens.begin(), out.tokens.end() - 1);
    CHECK(generator.history() == expected);
    CHECK(runner->position() == int32_t(expected.size()));
    return out;
}

}  // namespace

TEST_CASE("at temperature 0 the output is the target's token for token, whatever the draft") {
    Loaded target = load(synth_model("F32", 1));
    Loaded close = load(synth_model("Q4_0", 1));   // same weights, quantized: a good draft
    Loaded other = load(synth_model("F32", 7));    // unrelated weights: a poor one
    for (const auto& prompt : {some_prompt(3, 9), copy_heavy_prompt()}) {
        const Run plain = run_greedy(target, prompt, nullptr, 0, true);
        REQUIRE(plain.tokens.size() == 24);
        CHECK(plain.stats.draft_steps == 0);

        auto self_runner = target.engine->new_runner();
        auto close_runner = close.engine->new_runner();
        auto other_runner = other.engine->new_runner();
        ModelDrafter self(*self_runner, 0.0), close_draft(*close_runner, 0.0), other_draft(*other_runner, 0.0);
        LookupDrafter lookup;
        WrongDrafter wrong;
        struct Case {
            const char* name;
            Drafter* drafter;
        };
        for (const Case& c : {Case{"self", &self}, Case{"Q4_0", &close_draft}, Case{"unrelated", &other_draft},
                              Case{"lookup", &lookup}, Case{"wrong", &wrong}})
            for (int32_t k : {1, 4})
                for (bool adaptive : {false, true}) {
                    CAPTURE(std::string(c.name));
                    CAPTURE(k);
                    CAPTURE(adaptive);
                    const Run spec = run_greedy(target, prompt, c.drafter, k, adaptive);
                    CHECK(spec.tokens == plain.tokens);
                    if (!adaptive && c.drafter != &lookup) {
                        CHECK(spec.stats.draft_steps > 0);
                        // Fewer target steps than tokens exactly when drafts were accepted.
                        CHECK(spec.stats.generated_tokens - spec.stats.target_steps <= spec.stats.accepted_tokens);
                    }
                    if (c.drafter == &self && !adaptive) CHECK(spec.stats.accepted_tokens == spec.stats.drafted_tokens);
                    if (c.drafter == &wrong && !adaptive)
                        CHECK(spec.stats.accepted_tokens * 4 < spec.stats.drafted_tokens);
                }
    }
}

TEST_CASE("a stop inside an accepted run ends the output there and the cache with it") {
    Loaded target = load(synth_model("F32", 1));
    const auto prompt = copy_heavy_prompt();
    const Run plain = run_greedy(target, prompt, nullptr, 0, true);
    auto self_runner = target.engine->new_runner();
    ModelDrafter self(*self_runner, 0.0);
    for (int32_t n : {1, 2, 5, 9}) {
        Sampler sampler = make_sampler(0.0f, 40, 1);
        auto runner = target.engine->new_runner();
        Generator generator(*runner, sampler, *target.tokenizer);
        generator.speculate(&self, SpeculationSettings{8, false});
        const GenerationStats stats = generator.generate(prompt, settings_for(n), [](std::string_view) {});
        CAPTURE(n);
        CHECK(stats.tokens == std::vector<int32_t>(plain.tokens.begin(), plain.tokens.begin() + n));
        CHECK(stats.stop_reason == "length");
        CHECK(runner->position() == int32_t(prompt.size()) + n - 1);
        // The next turn reuses the cache and goes on as one conversation would.
        std::vector<int32_t> more(prompt);
        more.insert(more.end(), stats.tokens.begin(), stats.tokens.end());
        const GenerationStats next = generator.generate(more, settings_for(3), [](std::string_view) {});
        CHECK(next.reused_tokens == int32_t(more.size()) - 1);
        CHECK(next.tokens == std::vector<int32_t>(plain.tokens.begin() + n, plain.tokens.begin() + n + 3));
    }
}

namespace {

// The target's exact distribution of the first two tokens after `prompt`, by enumeration
// of the top-k support.
std::map<Pair, double> exact_two_tokens(Loaded& target, const std::vector<int32_t>& prompt) {
    Sampler sampler = make_sampler(kTemperature, kTopK, 1);
    auto runner = target.engine->new_runner();
    std::vector<float> first(static_cast<size_t>(kVocab)), second(static_cast<size_t>(kVocab));
    runner->feed(prompt);
    sampler.distribution(runner->last_logits().data(), int32_t(kVocab), first.data());
    std::map<Pair, double> out;
    for (int32_t a = 0; a < kVocab; ++a) {
        if (first[size_t(a)] <= 0) continue;
        runner->rewind(int32_t(prompt.size()));
        runner->feed(std::span<const int32_t>(&a, 1));
        sampler.distribution(runner->last_logits().data(), int32_t(kVocab), second.data());
        for (int32_t b = 0; b < kVocab; ++b)
            if (second[size_t(b)] > 0) out[{a, b}] = double(first[size_t(a)]) * second[size_t(b)];
    }
    return out;
}

struct Outcome {
    double statistic = 0;
    double p_value = 0;
    double acceptance = 0;
    int outside = 0;  // pairs the target cannot produce
};

Outcome sampled_two_tokens(Loaded& target, Drafter& drafter, int32_t max_draft, SpeculativeFault fault,
                           const std::vector<int32_t>& prompt, const std::map<Pair, double>& exact) {
    auto runner = target.engine->new_runner();
    std::map<Pair, int> counts;
    Outcome out;
    int64_t drafted = 0, accepted = 0;
    // One generator for all runs, so that each reuses the prompt in the cache.
    Sampler sampler = make_sampler(kTemperature, kTopK, 1);
    Generator generator(*runner, sampler, *target.tokenizer);
    generator.speculate(&drafter, SpeculationSettings{max_draft, false, 0.0, fault});
    for (int seed = 1; seed <= kRuns; ++seed) {
        sampler = make_sampler(kTemperature, kTopK, uint64_t(seed));
        const GenerationStats stats = generator.generate(prompt, settings_for(2), [](std::string_view) {});
        REQUIRE(stats.tokens.size() == 2);
        const Pair pair{stats.tokens[0], stats.tokens[1]};
        if (!exact.count(pair)) ++out.outside;
        ++counts[pair];
        drafted += stats.drafted_tokens;
        accepted += stats.accepted_tokens;
    }
    std::vector<double> observed, expected;
    for (const auto& [pair, probability] : exact) {
        observed.push_back(counts.count(pair) ? counts[pair] : 0);
        expected.push_back(probability * kRuns);
    }
    out.statistic = test::chi_squared_statistic(observed, expected);
    out.p_value = test::chi_squared_p_value(out.statistic, int(exact.size()) - 1);
    out.acceptance = drafted ? double(accepted) / double(drafted) : 0.0;
    return out;
}

}  // namespace

TEST_CASE("sampling: two tokens distributed as the target's, and each planted fault caught") {
    // A Q8_0 target: 10000 generations read the target's weights at every step, a
    // quarter of the bytes of F32's (the test took 108-131 s with an F32 one).
    Loaded target = load(synth_model("Q8_0", 1));
    Loaded draft = load(synth_model("Q4_0", 1));
    const auto prompt = copy_heavy_prompt();
    const auto exact = exact_two_tokens(target, prompt);
    REQUIRE(exact.size() == size_t(kTopK * kTopK));
    double total = 0;
    for (const auto& [pair, probability] : exact) total += probability;
    CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
    // Below this expected count a chi-squared cell is unreliable; the setting is chosen
    // so that every one of the 16 is well above it.
    for (const auto& [pair, probability] : exact) CHECK(probability * kRuns >= 5.0);

    auto draft_runner = draft.engine->new_runner();
    ModelDrafter drafter(*draft_runner, 0.0);
    LookupDrafter lookup;
    struct Case {
        const char* name;
        Drafter* drafter;
        int32_t max_draft;
        SpeculativeFault fault;
    };
    const Case cases[] = {
        {"draft model, 1 token", &drafter, 1, SpeculativeFault::none},
        {"lookup, 4 tokens", &lookup, 4, SpeculativeFault::none},
        {"residual drawn from p", &drafter, 1, SpeculativeFault::residual_from_target},
        {"bonus token dropped", &drafter, 1, SpeculativeFault::bonus_dropped},
        {"q at the wrong temperature", &drafter, 1, SpeculativeFault::draft_at_wrong_temperature},
    };
    for (const Case& c : cases) {
        const Outcome o = sampled_two_tokens(target, *c.drafter, c.max_draft, c.fault, prompt, exact);
        MESSAGE(std::string(c.name) << ": chi-squared " << o.statistic << " on " << exact.size() - 1 << " degrees of freedom, p = "
                       << o.p_value << ", acceptance " << o.acceptance);
        CAPTURE(std::string(c.name));
        if (c.fault == SpeculativeFault::none) {
            CHECK(o.outside == 0);
            CHECK(o.p_value >= kSignificance);
            if (c.drafter == &drafter) {
                // Both branches of the rule ran: some drafts accepted, some rejected.
                CHECK(o.acceptance > 0.2);
                CHECK(o.acceptance < 0.95);
            }
        } else {
            CHECK(o.p_value < kSignificance);
        }
    }
}

TEST_CASE("the same seed and draft settings give the same tokens") {
    Loaded target = load(synth_model("F32", 1));
    Loaded draft = load(synth_model("Q4_0", 1));
    auto draft_runner = draft.engine->new_runner();
    ModelDrafter drafter(*draft_runner, 0.0);
    const auto prompt = some_prompt(13, 6);
    auto sampled = [&](int32_t max_draft) {
        Sampler sampler = make_sampler(0.9f, 40, 42);
        auto runner = target.engine->new_runner();
        Generator generator(*runner, sampler, *target.tokenizer);
        if (max_draft > 0) generator.speculate(&drafter, SpeculationSettings{max_draft, true, 0.3});
        return generator.generate(prompt, settings_for(24), [](std::string_view) {}).tokens;
    };
    CHECK(sampled(4) == sampled(4));
    CHECK(sampled(0) == sampled(0));
    CHECK(sampled(4).size() == 24);
}

TEST_CASE("a draft with another vocabulary is refused in one line naming the difference") {
    Loaded target = load(synth_model("F32", 1));
    Loaded smaller = load(synth_model("F32", 1, 5000));
    CHECK_NOTHROW(require_same_vocabulary(target.vocab, target.vocab));
    CHECK_THROWS_WITH(require_same_vocabulary(target.vocab, smaller.vocab),
                      "the draft model's vocabulary has 5000 tokens, the target's 4096: a draft must share the target's "
                      "vocabulary");
    text::Vocab renamed = target.vocab;
    renamed.tokens[300].text = "\nzz";
    // Named: doctest 2.4.8 (Ubuntu 22.04) keeps the expected text as a pointer until it compares.
    const std::string renamed_error = "the draft model's token 300 is '\\x0azz', the target's '" +
                                      target.vocab.tokens[300].text + "': a draft must share the target's vocabulary";
    CHECK_THROWS_WITH(require_same_vocabulary(target.vocab, renamed), renamed_error.c_str());
}

TEST_CASE("the lookup drafter proposes what followed the latest match of the longest suffix") {
    LookupDrafter lookup(3, 1);
    Sampler sampler = make_sampler(0.0f, 40, 1);
    SamplingScratch scratch;
    RequestSampler target(sampler, {}, nullptr, scratch);
    Draft draft;
    const std::vector<int32_t> context = {1, 2, 3, 9, 1, 2, 3, 4, 5, 6, 7, 2, 3};
    lookup.propose(context, 3, target, draft);
    CHECK(draft.tokens == std::vector<int32_t>{4, 5, 6});  // "2 3" last seen before "4 5 6"
    CHECK(draft.probs.empty());
    lookup.propose(context, 10, target, draft);
    CHECK(draft.tokens == std::vector<int32_t>{4, 5, 6, 7, 2, 3});  // up to the end of the context
    lookup.propose(std::vector<int32_t>{1, 2, 3, 8}, 4, target, draft);
    CHECK(draft.tokens.empty());
}

TEST_CASE("the draft length shrinks when drafts fail and pauses when drafting does not pay") {
    DraftLength fixed(6, false, 0.5, 0.3);
    CHECK(fixed.next() == 6);
    DraftLength length(8, true, 0.0, 0.1);
    for (int i = 0; i < 10; ++i) length.record(8, 8);
    const int32_t long_run = length.next();
    CHECK(long_run == 8);
    for (int i = 0; i < 10; ++i) length.record(long_run, 0);
    CHECK(length.next() == 0);  // paused: plain steps
    int32_t plain = 1;
    while (length.next() == 0 && plain < 1000) ++plain;
    CHECK(plain >= 16);   // a pause of at least 16 plain steps, then a probe
    CHECK(plain < 1000);
    DraftLength costly(8, true, 1.0, 0.3);  // a draft as costly as the target never pays
    CHECK(costly.next() == 0);
}
