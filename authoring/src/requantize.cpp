#include <edgerun/authoring/model_writer.hpp>
#include <edgerun/authoring/requantize.hpp>
#include <edgerun/authoring/tensor_jobs.hpp>

#include <edgerun/interrupt.hpp>
#include <edgerun/quant/blocks.hpp>
#include <edgerun/quant/quantize.hpp>

#include <algorithm>
#include <cmath>

namespace edgerun::authoring {

namespace {

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

bool dequantizable(int32_t dtype) {
    float probe[256];
    static const uint8_t zeros[512] = {};
    const DTypeInfo* info = dtype_info(dtype);
    return info && info->block_elems <= 256 && info->block_bytes <= 512 &&
           quant::dequantize_row(dtype, zeros, probe, info->block_elems);
}

// One tensor: dequantize its rows, check them, quantize them, into `out`.
void requantize(const er_tensor_desc& src, const TensorInfo& t, int32_t target, std::vector<uint8_t>& out,
                int threads, Progress& progress) {
    const int64_t n_per_row = t.ne[0], n_rows = rows_of(t);
    const uint64_t src_row = *row_bytes(src.dtype, n_per_row), dst_row = *row_bytes(target, n_per_row);
    out.resize(dst_row * uint64_t(n_rows));
    const int64_t chunk_rows = std::max<int64_t>(1, (int64_t(1) << 18) / n_per_row);
    const auto* in = static_cast<const uint8_t*>(src.data);
    parallel_rows(n_rows, chunk_rows, threads, [&](int64_t first, int64_t end) {
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

RequantizePlan plan_requantize(const ModelFile& file, const std::string& path, const FileTypeInfo& file_type,
                               bool pure) {
    RequantizePlan plan;
    plan.file_type = file_type;
    RecipeParams recipe;
    recipe.file_type = file_type.id;
    recipe.pure = pure;
    recipe.arch = meta_string(file, "general.architecture");
    recipe.n_layer = meta_int(file, recipe.arch + ".block_count", 0);
    recipe.n_head = meta_int(file, recipe.arch + ".attention.head_count", 0);
    recipe.n_head_kv = meta_int(file, recipe.arch + ".attention.head_count_kv", recipe.n_head);
    recipe.n_expert = meta_int(file, recipe.arch + ".expert_count", 0);

    plan.sources = file.tensors();
    const std::vector<er_tensor_desc>& descs = plan.sources;
    for (const er_tensor_desc& d : descs) {
        TensorInfo t{to_string(d.name), d.dtype, d.n_dims, {d.ne[0], d.ne[1], d.ne[2], d.ne[3]}};
        const auto size = row_bytes(d.dtype, t.ne[0]);
        if (!size || *size * uint64_t(rows_of(t)) != d.nbytes)
            throw Error(path + ": tensor " + t.name + " has " + std::to_string(d.nbytes) +
                            " bytes, not what its type and shape need",
                        ER_E_FORMAT);
        plan.tensors.push_back(std::move(t));
    }
    plan.types = plan_tensor_types(plan.tensors, recipe);

    for (size_t i = 0; i < plan.tensors.size(); ++i) {
        const TensorInfo& t = plan.tensors[i];
        plan.bytes_in += descs[i].nbytes;
        plan.bytes_out += *row_bytes(plan.types[i], t.ne[0]) * uint64_t(rows_of(t));
        plan.n_weights += uint64_t(t.ne[0] * rows_of(t));
        if (plan.types[i] == t.dtype) continue;
        if (!dequantizable(t.dtype))
            throw Error("tensor " + t.name + ": cannot decode its type " + std::string(dtype_name(DType(t.dtype))) +
                            " to re-quantize it",
                        ER_E_UNSUPPORTED);
        if (!quant::can_quantize(plan.types[i]))
            throw Error("tensor " + t.name + ": no quantizer for " + std::string(dtype_name(DType(plan.types[i]))),
                        ER_E_UNSUPPORTED);
        plan.values_to_quantize += uint64_t(t.ne[0] * rows_of(t));
    }
    return plan;
}

void write_requantized(const PluginRegistry& registry, const ModelFile& file, const RequantizePlan& plan,
                       const std::string& path, int threads) {
    const std::vector<er_tensor_desc>& descs = plan.sources;
    ModelWriter out(writer_plugin_for(registry, path), path);
    bool wrote_file_type = false, wrote_version = false;
    for (uint64_t i = 0; i < file.meta_count(); ++i) {
        auto [key, value] = file.meta_at(i);
        if (key == "split.no" || key == "split.count" || key == "split.tensors.count") continue;
        if (key == "general.file_type") {
            out.set_u32(key, uint32_t(plan.file_type.id));
            wrote_file_type = true;
        } else if (key == "general.quantization_version") {
            out.set_u32(key, 2);  // the block layouts of GGML_QNT_VERSION 2
            wrote_version = true;
        } else {
            copy_meta(file, key, value, out);
        }
    }
    if (!wrote_version) out.set_u32("general.quantization_version", 2);
    if (!wrote_file_type) out.set_u32("general.file_type", uint32_t(plan.file_type.id));
    for (size_t i = 0; i < plan.tensors.size(); ++i)
        out.add_tensor(plan.tensors[i].name, plan.types[i], plan.tensors[i].n_dims, plan.tensors[i].ne.data());

    Progress progress(plan.values_to_quantize, "w");
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
        InterruptGuard::throw_if_requested();
        progress.set_label(plan.tensors[i].name);
        if (plan.types[i] == plan.tensors[i].dtype) {
            out.write_tensor(descs[i].data, descs[i].nbytes);
        } else {
            requantize(descs[i], plan.tensors[i], plan.types[i], buffer, threads, progress);
            out.write_tensor(buffer.data(), buffer.size());
        }
        if (file.iface().release_range) file.iface().release_range(file.raw(), descs[i].data, descs[i].nbytes);
    }
    InterruptGuard::throw_if_requested();
    out.finish();
    progress.finish();
}

}  // namespace edgerun::authoring
