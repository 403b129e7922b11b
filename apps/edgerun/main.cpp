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
    {"serve", "an OpenAI-compatible HTTP server with continuous batching", &edgerun::cli::cmd_serve},
};

void print_help() {
    std::cout << "usage: edgerun [--backend NAME] -m MODEL -p PROMPT [options]   generate text\n"
                 "       edgerun COMMAND [options]\n\ncommands:\n";
    for (const Command& c : kCommands) std::cout << "  " << c.name << std::string(12 - std::strlen(c.name), ' ') << c.summary << "\n";
    std::cout << "\n`edgerun COMMAND --help` shows a command's options. --config, --log-level and --plugin-dir\n"
                 "may also come before COMMAND.\n";
}

// `edgerun --config F --log-level debug chat ...`: the options every command takes may come
// before the command's name too. Returns the index of the command in args, or -1 (plain
// generation, where a prompt may well be the word "chat").
int command_index(const std::vector<std::string>& args) {
    static const char* const kCommonWithValue[] = {"--config", "--plugin-dir", "--log-level"};
    size_t i = 0;
    while (i < args.size()) {
        bool common = false;
        for (const char* option : kCommonWithValue) {
            const std::string name(option);
            if (args[i] == name) {
                i += 2, common = true;
                break;
            }
            if (args[i].rfind(name + "=", 0) == 0) {
                i += 1, common = true;
                break;
            }
        }
        if (!common) break;
    }
    if (i >= args.size()) return -1;
    for (const Command& c : kCommands)
        if (args[i] == c.name) return static_cast<int>(i);
    return -1;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    std::vector<int (*)(const std::vector<std::string>&)> commands = {&edgerun::cli::cmd_generate};
    for (const Command& c : kCommands) commands.push_back(c.run);
    edgerun::cli::set_commands(std::move(commands));
    try {
        if (args.empty() || args[0] == "--help" || args[0] == "-h") {
            print_help();
            return args.empty() ? 2 : 0;
        }
        if (args[0] == "--version") {
            std::cout << "edgerun " << EDGERUN_VERSION << " (plugin ABI " << ER_ABI_VERSION << ")\n";
            return 0;
        }
        if (const int at = command_index(args); at >= 0) {
            std::vector<std::string> rest(args.begin() + at + 1, args.end());
            rest.insert(rest.end(), args.begin(), args.begin() + at);  // the common options
            for (const Command& c : kCommands)
                if (args[at] == c.name) return c.run(rest);
        }
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
