// edgerun-conformance: proves a backend plugin right against a reference (cpu_ref by
// default) at its levels (ops; teacher-forced model runs and greedy generation; long
// contexts, unaligned steps and rewinds), and
// records and checks golden traces for machines where the reference cannot run.
//
//   edgerun-conformance run --candidate NAME|PLUGIN.so [--reference cpu_ref] [--matrix ci] [-m MODEL]...
//                           [--levels ops,models,long]
//   edgerun-conformance record -m MODEL -o TRACE.json [--backend cpu_ref] [--kv f32]
//   edgerun-conformance check --trace TRACE.json --candidate NAME|PLUGIN.so [-m MODEL]
//   edgerun-conformance synth [--matrix ci]          make the model matrix only
//   edgerun-conformance thresholds                   print every threshold and its reason
#include "golden.hpp"
#include "matrix.hpp"
#include "report.hpp"
#include "thresholds.hpp"

#include <edgerun/engine.hpp>
#include <edgerun/logging.hpp>
#include <edgerun/plugin_registry.hpp>

#include <boost/program_options.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace edgerun;
using namespace edgerun::conformance;

namespace {

struct Common {
    std::vector<std::string> plugin_dirs;
    std::string log_level = "warn";
    int32_t threads = 0;
};

void add_common(po::options_description& desc, Common& c) {
    desc.add_options()
        ("plugin-dir", po::value(&c.plugin_dirs)->composing(), "also look for plugins here (repeatable)")
        ("threads,t", po::value(&c.threads)->default_value(0), "host threads for each backend (0: its own choice)")
        ("log-level", po::value(&c.log_level)->default_value("warn"), "trace, debug, info, warn, error")
        ("help,h", "show this help");
}

// Returns false after printing --help.
bool parse(const std::vector<std::string>& args, po::options_description& desc, const char* usage) {
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    if (vm.count("help")) {
        std::cout << usage << "\n\n" << desc << "\n";
        return false;
    }
    po::notify(vm);
    return true;
}

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::stringstream in(list);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

bool is_path(const std::string& spec) { return spec.find('/') != std::string::npos || spec.ends_with(".so"); }

// Plugins named by path are loaded first, so they win over any plugin of the same name
// on the search path.
PluginRegistry make_registry(const Common& c, const std::vector<std::string>& specs) {
    PluginRegistry registry;
    for (const std::string& spec : specs) {
        if (!is_path(spec)) continue;
        if (!fs::exists(spec)) throw Error(spec + ": no such plugin file", ER_E_INVALID_ARGUMENT);
        if (!registry.load_file(spec)) throw Error(spec + ": refused: " + registry.failures().back().reason, ER_E_INVALID_ARGUMENT);
    }
    for (const auto& dir : PluginRegistry::search_path(c.plugin_dirs)) registry.scan_directory(dir);
    return registry;
}

BackendSpec resolve(const PluginRegistry& registry, const std::string& spec, const std::string& options, int32_t threads) {
    const Plugin* plugin = nullptr;
    if (is_path(spec)) {
        const fs::path want = fs::weakly_canonical(spec);
        for (const Plugin& p : registry.plugins())
            if (p.kind() == ER_PLUGIN_BACKEND && fs::weakly_canonical(p.path) == want) plugin = &p;
        if (!plugin) throw Error(spec + " is not a backend plugin (or one of its name was loaded first)", ER_E_INVALID_ARGUMENT);
    } else {
        plugin = registry.find(ER_PLUGIN_BACKEND, spec);
        if (!plugin) {
            std::string names;
            for (const Plugin* p : registry.of_kind(ER_PLUGIN_BACKEND)) names += (names.empty() ? "" : ", ") + std::string(p->name());
            throw Error("no backend plugin named '" + spec + "' (found: " + (names.empty() ? "none" : names) + ")", ER_E_INVALID_ARGUMENT);
        }
    }
    return BackendSpec{plugin, options, threads};
}

std::string device_of(const BackendSpec& spec) {
    auto info = sized<er_device_info>();
    er_error err{};
    if (spec.plugin->iface<er_backend_iface>()->device_info(0, &info, &err) != ER_OK) return "no device";
    return info.name;
}

std::string default_models_dir() {
    if (const char* cache = std::getenv("EDGERUN_CACHE")) return std::string(cache) + "/conformance";
    if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/edgerun/conformance";
    return "conformance-models";
}

struct MatrixOptions {
    std::string matrix = "ci", presets, types, stress, models_dir = default_models_dir();
    int32_t layers = 2, vocab = 4096;
};

void add_matrix_options(po::options_description& desc, MatrixOptions& m) {
    desc.add_options()
        ("matrix", po::value(&m.matrix)->default_value(m.matrix), "synthesized models: ci, full or none")
        ("presets", po::value(&m.presets), "instead: these presets (comma separated) ...")
        ("types", po::value(&m.types), "... in these file types (comma separated)")
        ("stress", po::value(&m.stress), "... and these stress variants of each (attention-scale,small-activations)")
        ("layers", po::value(&m.layers)->default_value(m.layers), "layers of the synthesized models")
        ("vocab", po::value(&m.vocab)->default_value(m.vocab), "vocabulary of the synthesized models (test-only reduction)")
        ("models-dir", po::value(&m.models_dir)->default_value(m.models_dir), "where synthesized models are cached");
}

std::vector<ModelEntry> matrix_models(const PluginRegistry& registry, const MatrixOptions& m) {
    MatrixSpec spec = !m.presets.empty() || !m.types.empty() || !m.stress.empty()
                          ? product_matrix(split(m.presets.empty() ? "qwen3-0.6b" : m.presets),
                                           split(m.types.empty() ? "Q4_K_M" : m.types), split(m.stress))
                          : named_matrix(m.matrix);
    spec.layers = m.layers;
    spec.vocab = m.vocab;
    return synthesize(registry, spec, m.models_dir);
}

void add_sequence_options(po::options_description& desc, SequenceSettings& s) {
    desc.add_options()
        ("tokens", po::value(&s.teacher_tokens)->default_value(s.teacher_tokens), "teacher-forced positions per model")
        ("prompt", po::value(&s.prompt_tokens)->default_value(s.prompt_tokens), "greedy: prompt tokens")
        ("greedy", po::value(&s.greedy_tokens)->default_value(s.greedy_tokens), "greedy: tokens generated")
        ("batch", po::value(&s.n_batch)->default_value(s.n_batch), "tokens per prefill step");
}

void check_sequence(const SequenceSettings& s) {
    if (s.teacher_tokens < 2 || s.prompt_tokens < 1 || s.prompt_tokens > s.teacher_tokens || s.greedy_tokens < 1 || s.n_batch < 1)
        throw Error("--tokens must be at least 2, --prompt between 1 and --tokens, --greedy and --batch at least 1",
                    ER_E_INVALID_ARGUMENT);
}

int cmd_run(const std::vector<std::string>& args) {
    Common common;
    MatrixOptions matrix;
    SequenceSettings sequence;
    std::string candidate, reference = "cpu_ref", candidate_options, reference_options, levels = "ops,models,long,batch", ops,
        kv, ref_kv = "same", json_path;
    std::string long_presets = "smollm2-135m", long_types = "Q8_0";
    LongSettings long_settings;
    std::vector<std::string> models;
    bool require_full = false, verbose = false;
    po::options_description desc("edgerun-conformance run");
    desc.add_options()
        ("candidate,c", po::value(&candidate)->required(), "the backend under test: a plugin name or a plugin file")
        ("reference,r", po::value(&reference)->default_value(reference), "the backend it is compared with")
        ("candidate-options", po::value(&candidate_options), "the candidate's backend options (key=value,...)")
        ("reference-options", po::value(&reference_options), "the reference's backend options")
        ("levels", po::value(&levels)->default_value(levels),
         "ops, models, long (long contexts, every step shape), batch (several sequences in one step); comma separated")
        ("long-presets", po::value(&long_presets)->default_value(long_presets), "the long level's synthesized models: these presets ...")
        ("long-types", po::value(&long_types)->default_value(long_types), "... in these file types")
        ("long-positions", po::value(&long_settings.positions)->default_value(long_settings.positions), "the long level's positions per run")
        ("ops", po::value(&ops), "only these ops (comma separated names: MATMUL,ROPE,...)")
        ("model,m", po::value(&models)->composing(), "a real model file to add to the matrix (repeatable)")
        ("kv", po::value(&kv), "the candidate's KV cache types: f32,f16,q8 (default: every one it supports)")
        ("ref-kv", po::value(&ref_kv)->default_value(ref_kv), "the reference's KV cache type: same, f32, f16 or q8")
        ("json", po::value(&json_path), "also write the report as JSON here")
        ("require-full", po::bool_switch(&require_full), "fail when the candidate lacks any op, type or model")
        ("verbose,v", po::bool_switch(&verbose), "list every op case, not only failures");
    add_matrix_options(desc, matrix);
    add_sequence_options(desc, sequence);
    add_common(desc, common);
    if (!parse(args, desc, "usage: edgerun-conformance run --candidate NAME|PLUGIN.so [options]")) return 0;
    init_logging(common.log_level);
    check_sequence(sequence);

    const PluginRegistry registry = make_registry(common, {candidate, reference});
    const BackendSpec cand = resolve(registry, candidate, candidate_options, common.threads);
    const BackendSpec ref = resolve(registry, reference, reference_options, common.threads);
    SuiteReport report;
    report.candidate = cand.name(), report.candidate_device = device_of(cand);
    report.reference = ref.name(), report.reference_device = device_of(ref);
    report.require_full = require_full;
    report.sequence = sequence;
    const auto level_list = split(levels);
    for (const auto& level : level_list)
        if (level != "ops" && level != "models" && level != "long" && level != "batch")
            throw Error("--levels " + level + ": one of ops, models, long, batch", ER_E_INVALID_ARGUMENT);
    if (long_settings.positions < long_settings.rewind_from)
        throw Error("--long-positions must be at least " + std::to_string(long_settings.rewind_from) + " (the rewind run's)",
                    ER_E_INVALID_ARGUMENT);
    auto wants = [&](const char* level) { return std::find(level_list.begin(), level_list.end(), level) != level_list.end(); };
    ModelLevelOptions model_options;
    for (const auto& k : split(kv)) model_options.kv_types.push_back(parse_kv_type(k));
    model_options.reference_kv = ref_kv == "same" ? -1 : parse_kv_type(ref_kv);
    model_options.sequence = sequence;
    if (wants("ops")) {
        report.ops_run = true;
        report.ops = run_op_level(cand, ref, split(ops));
    }
    std::vector<ModelEntry> entries;
    if (wants("models") || wants("batch")) {
        entries = matrix_models(registry, matrix);
        for (const auto& m : models) entries.push_back({m, false});
    }
    if (wants("models")) {
        report.models_run = true;
        report.models = run_model_level(registry, cand, ref, entries, model_options);
    }
    if (wants("long")) {
        report.long_run = true;
        report.long_settings = long_settings;
        report.long_ops = run_op_level(cand, ref, split(ops), OpCases::Long);
        MatrixOptions long_matrix = matrix;
        long_matrix.presets = long_presets, long_matrix.types = long_types, long_matrix.stress.clear();
        report.long_models = run_long_level(registry, cand, ref, matrix_models(registry, long_matrix), model_options,
                                             long_settings);
    }
    if (wants("batch")) {
        report.batch_run = true;
        BatchLevelOptions options;
        for (const auto& k : split(kv)) options.kv_types.push_back(parse_kv_type(k));
        options.exact = cand.plugin == ref.plugin;  // the reference backend promises identical bits
        report.batch = run_batch_level(registry, cand, entries, options);
    }
    print_report(report, std::cout, verbose);
    if (!json_path.empty()) write_json_report(report, json_path);
    return report.problems().empty() ? 0 : 1;
}

int cmd_record(const std::vector<std::string>& args) {
    Common common;
    SequenceSettings sequence;
    std::string model, output, backend = "cpu_ref", backend_options, kv = "f32";
    int32_t top_k = 16;
    po::options_description desc("edgerun-conformance record");
    desc.add_options()
        ("model,m", po::value(&model)->required(), "the model file")
        ("output,o", po::value(&output)->required(), "the trace to write (.json)")
        ("backend,b", po::value(&backend)->default_value(backend), "the reference backend: a name or a plugin file")
        ("backend-options", po::value(&backend_options), "its backend options")
        ("kv", po::value(&kv)->default_value(kv), "KV cache type: f32, f16 or q8")
        ("top-k", po::value(&top_k)->default_value(top_k), "logits kept per position");
    add_sequence_options(desc, sequence);
    add_common(desc, common);
    if (!parse(args, desc, "usage: edgerun-conformance record -m MODEL -o TRACE.json [options]")) return 0;
    init_logging(common.log_level);
    check_sequence(sequence);
    if (top_k < 2) throw Error("--top-k must be at least 2", ER_E_INVALID_ARGUMENT);
    const PluginRegistry registry = make_registry(common, {backend});
    const BackendSpec spec = resolve(registry, backend, backend_options, common.threads);
    const GoldenTrace trace = record_trace(registry, spec, model, parse_kv_type(kv), sequence, top_k);
    write_trace(trace, output);
    std::cerr << "record: " << trace.tokens.size() << " positions and " << trace.greedy.tokens.size() << " greedy tokens of "
              << trace.model_file << " on " << spec.name() << " -> " << output << "\n";
    return 0;
}

int cmd_check(const std::vector<std::string>& args) {
    Common common;
    std::string trace_path, candidate, candidate_options, model, kv, json_path;
    po::options_description desc("edgerun-conformance check");
    desc.add_options()
        ("trace", po::value(&trace_path)->required(), "a trace written by `record`")
        ("candidate,c", po::value(&candidate)->required(), "the backend under test: a plugin name or a plugin file")
        ("candidate-options", po::value(&candidate_options), "its backend options")
        ("model,m", po::value(&model), "the model file (default: the trace's file name next to the trace)")
        ("kv", po::value(&kv), "KV cache type (default: the trace's)")
        ("json", po::value(&json_path), "also write the result as JSON here");
    add_common(desc, common);
    if (!parse(args, desc, "usage: edgerun-conformance check --trace TRACE.json --candidate NAME|PLUGIN.so [-m MODEL]")) return 0;
    init_logging(common.log_level);
    const GoldenTrace trace = read_trace(trace_path);
    if (model.empty()) model = (fs::path(trace_path).parent_path() / trace.model_file).string();
    const PluginRegistry registry = make_registry(common, {candidate});
    const BackendSpec spec = resolve(registry, candidate, candidate_options, common.threads);
    const ModelComparison c = check_trace(registry, spec, trace, model, kv.empty() ? -1 : parse_kv_type(kv));
    std::cout << "edgerun conformance check: " << spec.name() << " (" << device_of(spec) << ") against " << trace_path << "\n";
    print_comparisons({c}, std::cout);
    std::cout << (c.status == "pass" ? "PASS" : "FAIL") << "\n";
    if (!json_path.empty()) {
        SuiteReport report;
        report.candidate = spec.name(), report.candidate_device = device_of(spec);
        report.reference = c.reference, report.reference_device = trace.device;
        report.models_run = true;
        report.sequence = trace.sequence;
        report.models = {c};
        write_json_report(report, json_path);
    }
    return c.status == "pass" ? 0 : 1;
}

int cmd_synth(const std::vector<std::string>& args) {
    Common common;
    MatrixOptions matrix;
    po::options_description desc("edgerun-conformance synth");
    add_matrix_options(desc, matrix);
    add_common(desc, common);
    if (!parse(args, desc, "usage: edgerun-conformance synth [--matrix ci|full] [--models-dir DIR]")) return 0;
    const PluginRegistry registry = make_registry(common, {});
    for (const ModelEntry& m : matrix_models(registry, matrix)) std::cout << m.path << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (args.empty() || args[0] == "--help" || args[0] == "-h") {
            std::cout << "usage: edgerun-conformance COMMAND [options]   (COMMAND --help for its options)\n"
                         "  run         the suite: a candidate backend against a reference (the default command)\n"
                         "  record      write a golden trace of a model from the reference\n"
                         "  check       compare a backend with a golden trace, without the reference\n"
                         "  synth       make the synthesized model matrix\n"
                         "  thresholds  print every threshold and its reason\n";
            return args.empty() ? 2 : 0;
        }
        const std::string command = args[0][0] == '-' ? "run" : args[0];
        if (args[0][0] != '-') args.erase(args.begin());
        if (command == "run") return cmd_run(args);
        if (command == "record") return cmd_record(args);
        if (command == "check") return cmd_check(args);
        if (command == "synth") return cmd_synth(args);
        if (command == "thresholds") {
            for (const auto& line : describe_thresholds()) std::cout << line << "\n";
            return 0;
        }
        std::cerr << "edgerun-conformance: unknown command '" << command << "'\n";
        return 2;
    } catch (const po::error& e) {
        std::cerr << "edgerun-conformance: " << e.what() << "\n";
        return 2;
    } catch (const Error& e) {
        std::cerr << "edgerun-conformance: error: " << e.what() << "\n";
        return e.code() == ER_E_INVALID_ARGUMENT ? 2 : 1;
    } catch (const std::exception& e) {
        std::cerr << "edgerun-conformance: error: " << e.what() << "\n";
        return 1;
    }
}
