// The speculative decoding options of the generating commands (-md/--model-draft,
// --draft, --backend-draft, --lookup) and the drafter they make.
#pragma once

#include "cli.hpp"

#include <edgerun/drafter.hpp>
#include <edgerun/engine.hpp>
#include <edgerun/generate.hpp>

#include <memory>

namespace edgerun::cli {

struct SpeculationOptions {
    std::string model_draft;
    std::string backend_draft;
    int32_t draft = 8;
    int32_t lookup = 0;
    bool draft_fixed = false;
    double verify_row_cost = -1;  // < 0: measured at start
    double draft_cost = -1;       // < 0: measured at start
};

void add_speculation_options(po::options_description& desc, SpeculationOptions& options);

// llama.cpp spells the draft model -md; a short option has one letter here, so the
// commands rewrite it to --model-draft before parsing.
std::vector<std::string> with_long_draft_option(const std::vector<std::string>& args);

// The drafter the options ask for (none: plain decode), with what it runs on.
struct Speculation {
    std::unique_ptr<Engine> draft_engine;
    std::unique_ptr<Runner> draft_runner;
    std::unique_ptr<Drafter> drafter;
    SpeculationSettings settings;
    double draft_cost = 0;  // a draft model's step relative to the target's

    // Hands the drafter to `generator` (nothing when there is none).
    void attach(Generator& generator) const;
    // Another drafter of the same kind, with a draft context of its own (serve gives each
    // slot one); nullptr when the options ask for none.
    std::unique_ptr<Drafter> new_drafter() const;
    // "draft: SmolLM2 Q4_0 on cpu_ref, up to 8 tokens" and the like; empty without one.
    std::string describe() const;
};

Speculation make_speculation(const PluginRegistry& registry, const SpeculationOptions& options, const Engine& target,
                             const text::Vocab& target_vocab);

// Seconds of one step of 1, 2, ..., max_rows tokens on `runner` (the best of `repetitions`
// at a few positions past `depth`); rewinds it to 0 afterwards. Row 0 is the one-token
// decode step (the device argmax when the backend has it, as plain decode runs it).
std::vector<double> time_steps(Runner& runner, int32_t max_rows, int32_t depth, int repetitions);

// "speculative: ..." for the summary: acceptance, tokens per target step.
void print_speculation_summary(const GenerationStats& stats);

}  // namespace edgerun::cli
