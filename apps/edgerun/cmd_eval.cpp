// edgerun eval: teacher-forced logits of a token sequence, for comparing backends and
// runtimes number by number.
#include "cli.hpp"
#include "commands.hpp"
#include "engine_options.hpp"
#include "output_file.hpp"

#include <edgerun/argmax.hpp>

#include <iostream>
#include <sstream>

namespace edgerun::cli {

namespace {

std::vector<int32_t> parse_token_list(const std::string& text, int64_t n_vocab) {
    std::vector<int32_t> tokens;
    std::istringstream in(text);
    std::string item;
    while (in >> item) {
        size_t used = 0;
        long long id = -1;
        try {
            id = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size()) throw Error("--tokens: '" + item + "' is not a token id", ER_E_INVALID_ARGUMENT);
        if (id < 0 || id >= n_vocab)
            throw Error("--tokens: id " + item + " is outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")",
                        ER_E_INVALID_ARGUMENT);
        tokens.push_back(int32_t(id));
    }
    if (tokens.empty()) throw Error("--tokens: no token ids given", ER_E_INVALID_ARGUMENT);
    return tokens;
}

}  // namespace

int cmd_eval(const std::vector<std::string>& args) {
    CommonOptions common;
    ModelOptions model_options;
    std::string tokens_text, logits_out;
    po::options_description desc("edgerun eval options");
    add_model_options(desc, model_options);
    desc.add_options()
        ("tokens", po::value(&tokens_text)->required(), "token ids separated by spaces")
        ("logits-out", po::value(&logits_out)->required(), "write the logits of every position here (.npy, float32 [n_tokens, n_vocab])");
    if (!parse(args, desc, common, "usage: edgerun eval -m MODEL --tokens \"ID ID ...\" --logits-out FILE.npy"))
        return 0;

    file_to_replace(logits_out);  // a path that cannot take the file is refused before any work
    EngineOptions engine_options = resolve(model_options);
    PluginRegistry registry = load_plugins(common);
    Engine engine(registry, model_options.model, engine_options);
    const std::vector<int32_t> tokens = parse_token_list(tokens_text, engine.model().hparams().n_vocab);
    if (int64_t(tokens.size()) > engine.n_ctx())
        throw Error(std::to_string(tokens.size()) + " tokens do not fit the context of " +
                        std::to_string(engine.n_ctx()) + " (raise --ctx-size)",
                    ER_E_INVALID_ARGUMENT);

    auto runner = engine.new_runner();
    std::vector<float> logits(tokens.size() * size_t(runner->n_vocab()));
    runner->feed(tokens, logits.data());
    // NaN or infinite logits mean the forward pass went wrong: refused as generation refuses
    // them (argmax.hpp), not written as if they were the model's answer.
    const int64_t n_vocab = runner->n_vocab();
    for (int64_t position = 0; position < int64_t(tokens.size()); ++position)
        if (const Argmax row = argmax_logits(logits.data() + position * n_vocab, n_vocab); row.non_finite >= 0)
            throw Error("position " + std::to_string(position) + ": the logit of token " +
                            std::to_string(row.non_finite) + " is not finite",
                        ER_E_INTERNAL);
    write_npy(logits_out, logits.data(), int64_t(tokens.size()), runner->n_vocab());
    std::cerr << "eval: " << tokens.size() << " tokens on " << engine.backend().plugin().name() << " -> "
              << logits_out << "\n";
    return 0;
}

}  // namespace edgerun::cli
