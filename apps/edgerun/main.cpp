// edgerun: LLM inference on edge GPUs from swappable plugins.
//
//   edgerun [--backend NAME] -m MODEL -p PROMPT     generate text
//   edgerun COMMAND [options]                       see --help
#include "cli.hpp"
#include "commands.hpp"

#include <edgerun/host_api.hpp>

#include <cstring>
#include <iostream>

namespace {

using edgerun::cli::Command;

const Command kCommands[] = {
    {"plugins", "list the plugins found, and the ones refused with the reason", &edgerun::cli::cmd_plugins},
    {"chat", "a conversation through the model's chat template, KV cache kept across turns", &edgerun::cli::cmd_chat},
    {"eval", "teacher-forced logits of a token sequence, written as .npy", &edgerun::cli::cmd_eval},
    {"bench", "prompt and generation throughput, latency and achieved bandwidth", &edgerun::cli::cmd_bench},
    {"inspect", "show a model file: metadata, tensors, bytes per token, roofline tokens/s", &edgerun::cli::cmd_inspect},
    {"tokenize", "the token ids (or pieces) a model's tokenizer gives a text", &edgerun::cli::cmd_tokenize},
    {"quantize", "re-quantize a model file (Q4_K_M, Q6_K, Q8_0, ...) as llama.cpp's recipe does", &edgerun::cli::cmd_quantize},
    {"synth", "write a model with a real model's exact shapes and types, random weights", &edgerun::cli::cmd_synth},
};

void print_help() {
    std::cout << "usage: edgerun [--backend NAME] -m MODEL -p PROMPT [options]   generate text\n"
                 "       edgerun COMMAND [options]\n\ncommands:\n";
    for (const Command& c : kCommands) std::cout << "  " << c.name << std::string(12 - std::strlen(c.name), ' ') << c.summary << "\n";
    std::cout << "\n`edgerun COMMAND --help` shows a command's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (args.empty() || args[0] == "--help" || args[0] == "-h") {
            print_help();
            return args.empty() ? 2 : 0;
        }
        if (args[0] == "--version") {
            std::cout << "edgerun " << EDGERUN_VERSION << " (plugin ABI " << ER_ABI_VERSION << ")\n";
            return 0;
        }
        for (const Command& c : kCommands)
            if (args[0] == c.name) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
        if (args[0][0] != '-') {
            std::cerr << "edgerun: unknown command '" << args[0] << "' (see edgerun --help)\n";
            return 2;
        }
        return edgerun::cli::cmd_generate(args);
    } catch (const edgerun::Error& e) {
        std::cerr << "edgerun: error: " << e.what() << "\n";
        return e.code() == ER_E_INVALID_ARGUMENT ? 2 : 1;
    } catch (const std::exception& e) {
        std::cerr << "edgerun: error: " << e.what() << "\n";
        return 1;
    }
}
