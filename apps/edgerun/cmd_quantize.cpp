// edgerun quantize: re-quantize a model file into the formats edge users run (Q4_K_M,
// Q6_K, ...), with llama.cpp's recipe (authoring/requantize.hpp does the work).
#include "cli.hpp"
#include "commands.hpp"

#include <edgerun/authoring/model_recipe.hpp>
#include <edgerun/authoring/requantize.hpp>
#include <edgerun/authoring/tensor_jobs.hpp>
#include <edgerun/interrupt.hpp>
#include <edgerun/model.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace edgerun::cli {

namespace {

using authoring::FileTypeInfo;
using authoring::TensorInfo;

struct QuantizeOptions {
    std::string input, output, type, pure;
    int threads = 0;
    bool dry_run = false;
};

std::string shape_text(const TensorInfo& t) {
    std::string s = std::to_string(t.ne[0]);
    for (int i = 1; i < t.n_dims; ++i) s += " x " + std::to_string(t.ne[i]);
    return s;
}

FileTypeInfo choose_file_type(const QuantizeOptions& o) {
    if (o.type.empty() == o.pure.empty())
        throw Error("give exactly one of --type FILE_TYPE or --pure TYPE", ER_E_INVALID_ARGUMENT);
    const auto info = o.pure.empty() ? authoring::file_type_from_name(o.type) : authoring::pure_file_type_from_name(o.pure);
    if (!info)
        throw Error((o.pure.empty() ? "--type " + o.type : "--pure " + o.pure) + ": unknown; one of " +
                        authoring::file_type_names() + (o.pure.empty() ? "" : ", or a tensor type such as Q4_K"),
                    ER_E_INVALID_ARGUMENT);
    return *info;
}

}  // namespace

int cmd_quantize(const std::vector<std::string>& args) {
    CommonOptions common;
    QuantizeOptions o;
    po::options_description desc("edgerun quantize options");
    desc.add_options()
        ("input", po::value(&o.input)->required(), "model file to read (any type edgerun decodes)")
        ("output", po::value(&o.output), "model file to write (GGUF v3)")
        ("type", po::value(&o.type), ("file type, llama.cpp's recipe: " + authoring::file_type_names()).c_str())
        ("pure", po::value(&o.pure), "one tensor type everywhere it fits (Q4_K, Q8_0, ... or a file type name)")
        ("threads,t", po::value(&o.threads)->default_value(authoring::default_thread_count()), "worker threads")
        ("dry-run", po::bool_switch(&o.dry_run), "print each tensor's type and the sizes; write nothing");
    if (!parse(args, desc, common, "usage: edgerun quantize IN.gguf OUT.gguf --type Q4_K_M|Q5_K_M|Q6_K|Q8_0|Q4_0|F16|... [--pure TYPE]",
               {{"input", 1}, {"output", 1}}))
        return 0;
    const FileTypeInfo file_type = choose_file_type(o);
    if (o.output.empty() && !o.dry_run) throw Error("no output file given (or use --dry-run)", ER_E_INVALID_ARGUMENT);
    if (o.threads < 1) throw Error("--threads must be at least 1", ER_E_INVALID_ARGUMENT);
    std::error_code ec;
    if (!o.output.empty() && std::filesystem::exists(o.output, ec) && std::filesystem::equivalent(o.input, o.output, ec))
        throw Error("output " + o.output + " is the input file; write to another path", ER_E_INVALID_ARGUMENT);

    PluginRegistry registry = load_plugins(common);
    ModelFile file(format_plugin_for(registry, o.input), o.input);
    const authoring::RequantizePlan plan = authoring::plan_requantize(file, o.input, file_type, !o.pure.empty());

    if (o.dry_run) {
        for (size_t i = 0; i < plan.tensors.size(); ++i)
            std::printf("%-40s %-18s %-6s -> %s\n", plan.tensors[i].name.c_str(), shape_text(plan.tensors[i]).c_str(),
                        std::string(dtype_name(DType(plan.tensors[i].dtype))).c_str(),
                        std::string(dtype_name(DType(plan.types[i]))).c_str());
        std::printf("%s: %.2f MiB -> %.2f MiB\n", std::string(file_type.name).c_str(), double(plan.bytes_in) / (1 << 20),
                    double(plan.bytes_out) / (1 << 20));
        return 0;
    }

    const auto start = std::chrono::steady_clock::now();
    InterruptGuard interrupt_guard;
    authoring::write_requantized(registry, file, plan, o.output, o.threads);

    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "quantize: %s -> %s (%s): %zu tensors, %.2f MiB -> %.2f MiB, %.2f bits/weight, %.1f s\n",
                 o.input.c_str(), o.output.c_str(), std::string(file_type.name).c_str(), plan.tensors.size(),
                 double(plan.bytes_in) / (1 << 20), double(plan.bytes_out) / (1 << 20),
                 8.0 * double(plan.bytes_out) / double(plan.n_weights), seconds);
    return 0;
}

}  // namespace edgerun::cli
