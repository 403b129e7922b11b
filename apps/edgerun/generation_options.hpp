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
};

void add_generation_options(po::options_description& desc, GenerationOptions& options);

// A sampler from the options (seed, temperature, ...), through the sampler plugin.
Sampler make_sampler(const PluginRegistry& registry, const GenerationOptions& options, int32_t n_vocab);

// "prompt: N tokens in T ms (R tok/s)" and the like, to stderr.
void print_summary(const GenerationStats& stats, const Engine& engine, const Runner& runner);

}  // namespace edgerun::cli
