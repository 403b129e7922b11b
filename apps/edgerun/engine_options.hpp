// The options of every command that runs a model on a backend, and the default model.
#pragma once

#include "cli.hpp"

#include <edgerun/engine.hpp>

namespace edgerun::cli {

struct ModelOptions {
    std::string model;  // empty: the default model from the cache
    std::string kv_type = "f16";
    EngineOptions engine;
};

void add_model_options(po::options_description& desc, ModelOptions& options);

// Resolves the model path (the default model when none was given) and the KV type.
EngineOptions resolve(ModelOptions& options);

// The cached default model (SmolLM2-135M-Instruct Q4_1, put there by
// scripts/fetch-model.sh), or an Error saying how to get it.
std::string default_model_path();

}  // namespace edgerun::cli
