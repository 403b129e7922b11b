#include "generation_options.hpp"
#include "json_schema_grammar.hpp"
#include "speculation_options.hpp"

#include <edgerun/engine.hpp>

#include <sys/resource.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <utility>

namespace edgerun::cli {

namespace {

double rate(int32_t n, double seconds) { return seconds > 0 ? n / seconds : 0.0; }

}  // namespace

void add_generation_options(po::options_description& desc, GenerationOptions& o) {
    o.sampler = sized<er_sampler_params>();
    o.sampler.temperature = 0.8f;
    o.sampler.top_k = 40;
    o.sampler.top_p = 0.95f;
    o.sampler.min_p = 0.05f;
    o.sampler.repeat_penalty = 1.0f;
    o.sampler.penalty_last_n = 64;
    desc.add_options()
        ("n-predict,n", po::value(&o.settings.n_predict)->default_value(-1)->notifier([](auto n) {
             if (n < -1) throw Error("-n must be -1 (until the end) or a count >= 0, not " + std::to_string(n), ER_E_INVALID_ARGUMENT);
         }), "tokens to generate (-1: until the end of text or a full context)")
        ("temp", po::value(&o.sampler.temperature)->default_value(o.sampler.temperature), "temperature (0: greedy)")
        ("seed", po::value(&o.sampler.seed)->default_value(0), "random seed")
        ("top-k", po::value(&o.sampler.top_k)->default_value(o.sampler.top_k), "keep the k most likely tokens (0: off)")
        ("top-p", po::value(&o.sampler.top_p)->default_value(o.sampler.top_p), "nucleus sampling (1: off)")
        ("min-p", po::value(&o.sampler.min_p)->default_value(o.sampler.min_p), "drop tokens below min-p times the best (0: off)")
        ("repeat-penalty", po::value(&o.sampler.repeat_penalty)->default_value(o.sampler.repeat_penalty), "penalise repeats (1: off)")
        ("presence-penalty", po::value(&o.sampler.presence_penalty)->default_value(0.0f), "subtract from tokens present in the window")
        ("frequency-penalty", po::value(&o.sampler.frequency_penalty)->default_value(0.0f), "subtract per occurrence in the window")
        ("repeat-last-n", po::value(&o.sampler.penalty_last_n)->default_value(o.sampler.penalty_last_n), "window of recent tokens the penalties see")
        ("stop", po::value(&o.settings.stop)->composing(), "stop when this text is generated (repeatable)")
        ("ignore-eos", po::bool_switch(&o.settings.ignore_eos), "do not stop at end-of-generation tokens")
        ("grammar", po::value(&o.grammar), "the output must match this GBNF grammar (llama.cpp's syntax)")
        ("grammar-file", po::value(&o.grammar_file), "read the GBNF grammar from this file")
        ("json-schema,j", po::value(&o.json_schema), "the output must be JSON this JSON Schema admits ('{}': any JSON)")
        ("json-schema-file", po::value(&o.json_schema_file), "read the JSON Schema from this file")
        ("logit-bias,l", po::value(&o.logit_bias)->composing(), "add BIAS (-100 to 100) to a token's logit: ID+BIAS or ID-BIAS (repeatable)")
        ("sampler-plugin", po::value(&o.sampler_plugin)->default_value(o.sampler_plugin), "sampler plugin name")
        ("trace", po::bool_switch(&o.trace), "print every op of one decode step with the bytes it reads");
}

namespace {

// "15043+1.5", "15043-100": llama.cpp's --logit-bias.
LogitBias parse_logit_bias(const std::string& text) {
    const size_t sign = text.find_first_of("+-", 1);
    LogitBias out{-1, 0.0f};
    try {
        size_t used = 0;
        if (sign != std::string::npos && sign > 0) {
            const long id = std::stol(text.substr(0, sign), &used);
            if (used == sign && id >= 0 && id <= INT32_MAX) out.token = int32_t(id);
            const std::string bias = text.substr(sign);
            out.bias = std::stof(bias, &used);
            if (used != bias.size()) out.token = -1;
        }
    } catch (const std::exception&) {
        out.token = -1;
    }
    if (out.token < 0 || !(std::fabs(out.bias) <= kMaxLogitBias))
        throw Error("--logit-bias: '" + text + "' is not TOKEN_ID+BIAS or TOKEN_ID-BIAS with a bias from -100 to 100",
                    ER_E_INVALID_ARGUMENT);
    return out;
}

void resolve_grammar(GenerationOptions& o) {
    const std::pair<const char*, const std::string*> given[] = {
        {"--grammar", &o.grammar}, {"--grammar-file", &o.grammar_file},
        {"--json-schema", &o.json_schema}, {"--json-schema-file", &o.json_schema_file}};
    const char* option = nullptr;
    for (const auto& [name, value] : given) {
        if (value->empty()) continue;
        if (option) throw Error(std::string(option) + " and " + name + " both constrain the output: give one", ER_E_INVALID_ARGUMENT);
        option = name;
    }
    if (!option) return;
    std::string gbnf;
    if (!o.grammar.empty()) gbnf = o.grammar;
    if (!o.grammar_file.empty()) gbnf = read_text_file(o.grammar_file, "--grammar-file");
    if (!o.json_schema.empty() || !o.json_schema_file.empty()) {
        const std::string text = o.json_schema.empty() ? read_text_file(o.json_schema_file, "--json-schema-file") : o.json_schema;
        const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(text, nullptr, false);
        if (schema.is_discarded()) throw Error(std::string(option) + ": not valid JSON", ER_E_INVALID_ARGUMENT);
        try {
            gbnf = json_schema_grammar(schema);
        } catch (const Error& e) {
            throw Error(std::string(option) + ": " + e.what(), e.code());
        }
    }
    try {
        o.settings.grammar = text::Grammar::parse(gbnf);
    } catch (const Error& e) {
        throw Error(std::string(option) + ": " + e.what(), e.code());
    }
}

}  // namespace

void resolve_constraints(GenerationOptions& o) {
    resolve_grammar(o);
    for (const std::string& bias : o.logit_bias) o.settings.logit_bias.push_back(parse_logit_bias(bias));
}

Sampler make_sampler(const PluginRegistry& registry, const GenerationOptions& options, int32_t n_vocab) {
    const Plugin* plugin = registry.find(ER_PLUGIN_SAMPLER, options.sampler_plugin);
    if (!plugin)
        throw Error("no sampler plugin named '" + options.sampler_plugin + "' (`edgerun plugins` lists the ones found and why any was refused)",
                    ER_E_INVALID_ARGUMENT);
    return Sampler(*plugin, options.sampler, n_vocab);
}

void print_summary(const GenerationStats& stats, const Engine& engine, const Runner& runner) {
    std::fprintf(stderr, "\n\nprompt: %d tokens in %.1f ms (%.2f tok/s)", stats.prompt_tokens,
                 stats.prompt_seconds * 1e3, rate(stats.prompt_tokens, stats.prompt_seconds));
    if (stats.reused_tokens > 0) std::fprintf(stderr, ", %d reused from the cache", stats.reused_tokens);
    std::fprintf(stderr, "\ngenerate: %d tokens in %.1f ms (%.2f tok/s), stopped: %s\n", stats.generated_tokens,
                 stats.generate_seconds * 1e3, rate(stats.generated_tokens, stats.generate_seconds),
                 stats.stop_reason.c_str());
    print_speculation_summary(stats);
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    std::fprintf(stderr, "memory: peak RSS %.1f MiB", double(usage.ru_maxrss) / 1024.0);
    if (auto mem = runner.context().memory_stats()) {
        std::fprintf(stderr, "; %s: weights %.1f MiB, KV cache %.1f MiB, scratch %.1f MiB",
                     std::string(engine.backend().plugin().name()).c_str(), double(mem->weights_bytes) / (1 << 20),
                     double(mem->kv_bytes) / (1 << 20), double(mem->scratch_bytes) / (1 << 20));
        if (mem->device_peak_bytes) std::fprintf(stderr, ", device peak %.1f MiB", double(mem->device_peak_bytes) / (1 << 20));
    }
    std::fprintf(stderr, "\n");
}

}  // namespace edgerun::cli
