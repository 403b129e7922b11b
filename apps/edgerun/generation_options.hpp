// Options shared by the commands that generate text (plain completion and chat):
// sampling, stopping, and the run summary printed to stderr.
#pragma once

#include "cli.hpp"

#include <edgerun/generate.hpp>

namespace edgerun {
class Engine;
}

namespace edgerun::cli {

struct GenerationOptions {
    er_sampler_params sampler{};
    GenerationSettings settings;
    std::string sampler_plugin = "sampler";
    bool trace = false;
    // Constrained decoding, as llama.cpp's flags: GBNF text or file, a JSON Schema or file;
    // and biases, "ID+BIAS" or "ID-BIAS".
    std::string grammar, grammar_file, json_schema, json_schema_file;
    std::vector<std::string> logit_bias;
};

void add_generation_options(po::options_description& desc, GenerationOptions& options);

// settings.grammar from --grammar, --grammar-file, --json-schema or --json-schema-file
// (at most one), settings.logit_bias from --logit-bias. Throws Error naming the option for
// a bad grammar, schema or bias.
void resolve_constraints(GenerationOptions& options);

// A sampler from the options (seed, temperature, ...), through the sampler plugin.
Sampler make_sampler(const PluginRegistry& registry, const GenerationOptions& options, int32_t n_vocab);

// "prompt: N tokens in T ms (R tok/s)" and the like, to stderr.
void print_summary(const GenerationStats& stats, const Engine& engine, const Runner& runner);

}  // namespace edgerun::cli
