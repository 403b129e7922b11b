// edgerun quantize: re-quantize a model file into the formats edge users run (Q4_K_M,
// Q6_K, ...). Every tensor the recipe changes is dequantized to float and quantized again;
// the others are copied byte for byte. All metadata is copied, general.file_type set.
#include "cli.hpp"
#include "commands.hpp"

#include <edgerun/authoring/model_recipe.hpp>
#include <edgerun/authoring/model_writer.hpp>
#include <edgerun/authoring/tensor_jobs.hpp>

#include <edgerun/model.hpp>
#include <edgerun/quant/blocks.hpp>
#include <edgerun/quant/quantize.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace edgerun::cli {

namespace {

using authoring::FileTypeInfo;
using authoring::TensorInfo;

struct QuantizeOptions {
    std::string input, output, type, pure;
    int threads = 0;
    bool dry_run = false;
};

int64_t meta_int(const ModelFile& file, const std::string& key, int64_t fallback) {
    const auto v = file.meta_find(key.c_str());
    if (!v) return fallback;
    switch (v->type) {
        case ER_META_U8: case ER_META_U16: case ER_META_U32: case ER_META_U64: return int64_t(v->v.u64);
        case ER_META_I8: case ER_META_I16: case ER_META_I32: case ER_META_I64: return v->v.i64;
        default: throw Error(file.plugin().path + ": metadata " + key + " is not an integer", ER_E_FORMAT);
    }
}

std::string meta_string(const ModelFile& file, const std::string& key) {
    const auto v = file.meta_find(key.c_str());
    if (!v || v->type != ER_META_STRING) return {};
    return to_string(v->v.str);
}

int64_t rows_of(const TensorInfo& t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

bool decodable(int32_t dtype) {
    float probe[256];
    static const uint8_t zeros[512] = {};
    const DTypeInfo* info = dtype_info(dtype);
    return info && info->block_elems <= 256 && info->block_bytes <= 512 &&
           quant::dequantize_row(dtype, zeros, probe, info->block_elems);
}

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

// One tensor: dequantize its rows, check them, quantize them, into `out`.
void requantize(const er_tensor_desc& src, const TensorInfo& t, int32_t target, std::vector<uint8_t>& out,
                int threads, authoring::Progress& progress) {
    const int64_t n_per_row = t.ne[0], n_rows = rows_of(t);
    const uint64_t src_row = *row_bytes(src.dtype, n_per_row), dst_row = *row_bytes(target, n_per_row);
    out.resize(dst_row * uint64_t(n_rows));
    const int64_t chunk_rows = std::max<int64_t>(1, (int64_t(1) << 18) / n_per_row);
    const auto* in = static_cast<const uint8_t*>(src.data);
    authoring::parallel_rows(n_rows, chunk_rows, threads, [&](int64_t first, int64_t end) {
        std::vector<float> rows(size_t((end - first) * n_per_row));
        for (int64_t r = first; r < end; ++r)
            quant::dequantize_row(src.dtype, in + uint64_t(r) * src_row, &rows[size_t((r - first) * n_per_row)], n_per_row);
        for (size_t i = 0; i < rows.size(); ++i)
            if (!std::isfinite(rows[i]))
                throw Error("tensor " + t.name + " holds a non-finite value in row " +
                                std::to_string(first + int64_t(i) / n_per_row),
                            ER_E_FORMAT);
        quant::quantize_rows(target, rows.data(), out.data() + uint64_t(first) * dst_row, end - first, n_per_row);
        progress.advance(uint64_t((end - first) * n_per_row));
    });
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
    const std::vector<er_tensor_desc> descs = file.tensors();

    authoring::RecipeParams recipe;
    recipe.file_type = file_type.id;
    recipe.pure = !o.pure.empty();
    recipe.arch = meta_string(file, "general.architecture");
    recipe.n_layer = meta_int(file, recipe.arch + ".block_count", 0);
    recipe.n_head = meta_int(file, recipe.arch + ".attention.head_count", 0);
    recipe.n_head_kv = meta_int(file, recipe.arch + ".attention.head_count_kv", recipe.n_head);
    recipe.n_expert = meta_int(file, recipe.arch + ".expert_count", 0);

    std::vector<TensorInfo> tensors;
    for (const er_tensor_desc& d : descs) {
        TensorInfo t{to_string(d.name), d.dtype, d.n_dims, {d.ne[0], d.ne[1], d.ne[2], d.ne[3]}};
        const auto size = row_bytes(d.dtype, t.ne[0]);
        if (!size || *size * uint64_t(rows_of(t)) != d.nbytes)
            throw Error(o.input + ": tensor " + t.name + " has " + std::to_string(d.nbytes) +
                            " bytes, not what its type and shape need",
                        ER_E_FORMAT);
        tensors.push_back(std::move(t));
    }
    const std::vector<int32_t> types = authoring::plan_tensor_types(tensors, recipe);

    uint64_t bytes_in = 0, bytes_out = 0, work = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = tensors[i];
        bytes_in += descs[i].nbytes;
        bytes_out += *row_bytes(types[i], t.ne[0]) * uint64_t(rows_of(t));
        if (types[i] == t.dtype) continue;
        if (!decodable(t.dtype))
            throw Error("tensor " + t.name + ": cannot decode its type " + std::string(dtype_name(DType(t.dtype))) +
                            " to re-quantize it",
                        ER_E_UNSUPPORTED);
        if (!quant::can_quantize(types[i]))
            throw Error("tensor " + t.name + ": no quantizer for " + std::string(dtype_name(DType(types[i]))),
                        ER_E_UNSUPPORTED);
        work += uint64_t(t.ne[0] * rows_of(t));
    }

    if (o.dry_run) {
        for (size_t i = 0; i < tensors.size(); ++i)
            std::printf("%-40s %-18s %-6s -> %s\n", tensors[i].name.c_str(), shape_text(tensors[i]).c_str(),
                        std::string(dtype_name(DType(tensors[i].dtype))).c_str(),
                        std::string(dtype_name(DType(types[i]))).c_str());
        std::printf("%s: %.2f MiB -> %.2f MiB\n", std::string(file_type.name).c_str(), double(bytes_in) / (1 << 20),
                    double(bytes_out) / (1 << 20));
        return 0;
    }

    const auto start = std::chrono::steady_clock::now();
    authoring::InterruptGuard interrupt_guard;
    authoring::ModelWriter out(authoring::writer_plugin_for(registry, o.output), o.output);
    bool wrote_file_type = false, wrote_version = false;
    for (uint64_t i = 0; i < file.meta_count(); ++i) {
        auto [key, value] = file.meta_at(i);
        if (key == "split.no" || key == "split.count" || key == "split.tensors.count") continue;
        if (key == "general.file_type") {
            out.set_u32(key, uint32_t(file_type.id));
            wrote_file_type = true;
        } else if (key == "general.quantization_version") {
            out.set_u32(key, 2);  // the block layouts of GGML_QNT_VERSION 2
            wrote_version = true;
        } else {
            authoring::copy_meta(file, key, value, out);
        }
    }
    if (!wrote_version) out.set_u32("general.quantization_version", 2);
    if (!wrote_file_type) out.set_u32("general.file_type", uint32_t(file_type.id));
    for (size_t i = 0; i < tensors.size(); ++i)
        out.add_tensor(tensors[i].name, types[i], tensors[i].n_dims, tensors[i].ne.data());

    authoring::Progress progress(work, "w");
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < tensors.size(); ++i) {
        authoring::InterruptGuard::throw_if_interrupted();
        progress.set_label(tensors[i].name);
        if (types[i] == tensors[i].dtype) {
            out.write_tensor(descs[i].data, descs[i].nbytes);
        } else {
            requantize(descs[i], tensors[i], types[i], buffer, o.threads, progress);
            out.write_tensor(buffer.data(), buffer.size());
        }
        if (file.iface().release_range) file.iface().release_range(file.raw(), descs[i].data, descs[i].nbytes);
    }
    authoring::InterruptGuard::throw_if_interrupted();
    out.finish();
    progress.finish();

    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    uint64_t weights = 0;
    for (const TensorInfo& t : tensors) weights += uint64_t(t.ne[0] * rows_of(t));
    std::fprintf(stderr, "quantize: %s -> %s (%s): %zu tensors, %.2f MiB -> %.2f MiB, %.2f bits/weight, %.1f s\n",
                 o.input.c_str(), o.output.c_str(), std::string(file_type.name).c_str(), tensors.size(),
                 double(bytes_in) / (1 << 20), double(bytes_out) / (1 << 20), 8.0 * double(bytes_out) / double(weights),
                 seconds);
    return 0;
}

}  // namespace edgerun::cli
