// edgerun bench with a drafter: plain against speculative decoding on a real prompt.
#pragma once

#include "speculation_options.hpp"

namespace edgerun::cli {

int bench_speculative(const PluginRegistry& registry, const Engine& engine, const SpeculationOptions& options,
                      const std::string& prompt_text, int n_gen, int repetitions, bool json);

}  // namespace edgerun::cli
