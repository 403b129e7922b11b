// edgerun inspect FILE: what a model file holds (container, metadata, tensors), and what
// decoding it costs per token (bytes read, and the bandwidth roofline on edge devices).
#include "cli.hpp"
#include "commands.hpp"

#include <edgerun/dtype.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/kv_type.hpp>
#include <edgerun/meta_type.hpp>
#include <edgerun/model.hpp>
#include <edgerun/roofline.hpp>
#include <edgerun/traffic.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

namespace edgerun::cli {

namespace {

constexpr int64_t kDefaultContextCap = 4096;
constexpr size_t kArrayPreview = 4;
constexpr size_t kStringPreview = 60;

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string megabytes(uint64_t bytes) { return fixed(static_cast<double>(bytes) / 1e6, 1) + " MB"; }

std::string pad(std::string s, size_t width) {
    if (s.size() < width) s.append(width - s.size(), ' ');
    return s;
}

std::string pad_left(std::string s, size_t width) {
    if (s.size() < width) s.insert(0, width - s.size(), ' ');
    return s;
}

// A string from the file made safe for one terminal line: escapes, and a cut (at a
// character boundary, noting the full length) when long.
std::string escape_line(std::string_view s, size_t max_bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    size_t n = std::min(s.size(), max_bytes);
    while (n < s.size() && n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c == 0x7F) { out += "\\x"; out += kHex[c >> 4]; out += kHex[c & 15]; }
        else out += static_cast<char>(c);
    }
    if (n < s.size()) out += "...";
    return out;
}

std::string escaped(std::string_view s, size_t max_bytes) {
    std::string out = "\"" + escape_line(s, max_bytes) + "\"";
    if (s.size() > max_bytes) out += " (" + std::to_string(s.size()) + " bytes)";
    return out;
}

std::string scalar_text(const er_meta_value& v) {
    switch (v.type) {
        case ER_META_U8: case ER_META_U16: case ER_META_U32: case ER_META_U64: return std::to_string(v.v.u64);
        case ER_META_I8: case ER_META_I16: case ER_META_I32: case ER_META_I64: return std::to_string(v.v.i64);
        case ER_META_BOOL: return v.v.u64 ? "true" : "false";
        case ER_META_F32: { char b[32]; std::snprintf(b, sizeof b, "%.9g", v.v.f64); return b; }
        case ER_META_F64: { char b[32]; std::snprintf(b, sizeof b, "%.17g", v.v.f64); return b; }
        case ER_META_STRING: return escaped(to_view(v.v.str), kStringPreview);
        default: return "?";
    }
}

std::string value_text(const ModelFile& file, const er_meta_value& v) {
    if (v.type != ER_META_ARRAY) return scalar_text(v);
    std::string out = "[" + std::string(meta_type_name(v.array_type)) + " x " + std::to_string(v.array_count) + "]";
    const uint64_t shown = std::min<uint64_t>(v.array_count, kArrayPreview);
    for (uint64_t i = 0; i < shown; ++i) {
        const er_meta_value e = file.meta_array_at(v, i);
        out += (i ? ", " : " ");
        out += e.type == ER_META_ARRAY
                   ? "[" + std::string(meta_type_name(e.array_type)) + " x " + std::to_string(e.array_count) + "]"
                   : e.type == ER_META_STRING ? escaped(to_view(e.v.str), 24) : scalar_text(e);
    }
    if (shown < v.array_count) out += ", ...";
    return out;
}

std::string shape_text(const er_tensor_desc& t) {
    if (t.n_dims == 0) return "scalar";
    std::string s = std::to_string(t.ne[0]);
    for (int32_t d = 1; d < t.n_dims; ++d) {
        s += 'x';
        s += std::to_string(t.ne[d]);
    }
    return s;
}

std::string dtype_label(int32_t id) {
    const DTypeInfo* info = dtype_info(id);
    return info ? std::string(info->name) : "type" + std::to_string(id);
}

void print_metadata(const ModelFile& file) {
    const uint64_t n = file.meta_count();
    std::cout << "\nmetadata (" << n << " keys)\n";
    size_t key_width = 0;
    std::vector<std::pair<std::string, er_meta_value>> entries;
    for (uint64_t i = 0; i < n; ++i) {
        entries.push_back(file.meta_at(i));
        key_width = std::max(key_width, std::min<size_t>(entries.back().first.size(), 44));
    }
    for (const auto& [key, value] : entries)
        std::cout << "  " << pad(escape_line(key, 80), key_width) << "  " << pad(std::string(meta_type_name(value.type)), 6)
                  << "  " << value_text(file, value) << "\n";
}

std::optional<er_model_desc> print_model(const ModelFile& file) {
    auto desc = sized<er_model_desc>();
    er_error err{};
    if (file.iface().model_desc(file.raw(), &desc, &err) != ER_OK) {
        std::cout << "\nmodel: no model hyperparameters (" << err.message << ")\n";
        return std::nullopt;
    }
    std::cout << "\nmodel\n"
              << "  arch " << desc.arch << ", name " << escaped(desc.name, 80) << ", file type " << desc.file_type << "\n"
              << "  n_vocab " << desc.n_vocab << ", n_ctx_train " << desc.n_ctx_train << ", n_embd " << desc.n_embd
              << ", n_layer " << desc.n_layer << ", n_ff " << desc.n_ff << "\n"
              << "  n_head " << desc.n_head << ", n_head_kv " << desc.n_head_kv << ", head_dim " << desc.head_dim_k;
    if (desc.head_dim_v != desc.head_dim_k) std::cout << " (v " << desc.head_dim_v << ")";
    char numbers[160];
    std::snprintf(numbers, sizeof numbers, ", n_rot %lld, rms_eps %g, rope_freq_base %g, rope_freq_scale %g\n",
                  static_cast<long long>(desc.n_rot), desc.rms_eps, desc.rope_freq_base, desc.rope_freq_scale);
    std::cout << numbers;
    return desc;
}

void print_vocab(const ModelFile& file) {
    auto desc = sized<er_vocab_desc>();
    er_error err{};
    if (file.iface().vocab_desc(file.raw(), &desc, &err) != ER_OK) {
        std::cout << "\nvocabulary: unusable (" << err.message << ")\n";
        return;
    }
    static constexpr const char* kKinds[] = {"none", "SPM", "BPE"};
    std::cout << "\nvocabulary\n  " << kKinds[desc.kind] << " (model " << escaped(to_view(desc.model), 40) << ", pre "
              << escaped(to_view(desc.pre), 40) << "), " << desc.n_tokens << " tokens, " << desc.n_merges << " merges"
              << (desc.has_scores ? ", scores" : "") << "\n  bos " << desc.bos_id << ", eos " << desc.eos_id << ", eot "
              << desc.eot_id << ", unk " << desc.unk_id << ", pad " << desc.pad_id << ", add_bos " << desc.add_bos
              << ", add_eos " << desc.add_eos << ", add_space_prefix " << desc.add_space_prefix << ", chat template "
              << (desc.chat_template.size ? std::to_string(desc.chat_template.size) + " bytes" : std::string("none")) << "\n";
}

void print_tensors(const std::vector<er_tensor_desc>& tensors) {
    std::cout << "\ntensors (" << tensors.size() << ")\n";
    if (tensors.empty()) {
        std::cout << "  none: a vocabulary-only file\n";
        return;
    }
    size_t name_width = 4;
    for (const auto& t : tensors) name_width = std::max(name_width, static_cast<size_t>(t.name.size));
    std::cout << "  " << pad("NAME", name_width) << "  " << pad("TYPE", 7) << "  " << pad("SHAPE", 16) << "  "
              << pad_left("BYTES", 12) << "  " << pad_left("OFFSET", 12) << "\n";
    for (const auto& t : tensors)
        std::cout << "  " << pad(to_string(t.name), name_width) << "  " << pad(dtype_label(t.dtype), 7) << "  "
                  << pad(shape_text(t), 16) << "  " << pad_left(std::to_string(t.nbytes), 12) << "  "
                  << pad_left(std::to_string(t.file_offset), 12) << "\n";

    struct Total {
        uint64_t count = 0, bytes = 0, elements = 0;
    };
    std::map<int32_t, Total> by_type;
    Total all;
    for (const auto& t : tensors) {
        uint64_t elements = 1;
        for (int32_t d = 0; d < t.n_dims; ++d) elements *= static_cast<uint64_t>(t.ne[d]);
        for (Total* total : {&by_type[t.dtype], &all}) {
            total->count += 1;
            total->bytes += t.nbytes;
            total->elements += elements;
        }
    }
    std::vector<std::pair<int32_t, Total>> rows(by_type.begin(), by_type.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
    std::cout << "\ntotals by type\n  " << pad("TYPE", 7) << "  " << pad_left("COUNT", 6) << "  " << pad_left("BYTES", 12)
              << "  " << pad_left("SHARE", 7) << "  " << pad_left("BITS/WEIGHT", 11) << "\n";
    const auto row = [&](const std::string& label, const Total& t) {
        std::cout << "  " << pad(label, 7) << "  " << pad_left(std::to_string(t.count), 6) << "  "
                  << pad_left(std::to_string(t.bytes), 12) << "  "
                  << pad_left(fixed(all.bytes ? 100.0 * static_cast<double>(t.bytes) / static_cast<double>(all.bytes) : 0, 1) + "%", 7)
                  << "  " << pad_left(fixed(t.elements ? 8.0 * static_cast<double>(t.bytes) / static_cast<double>(t.elements) : 0, 3), 11)
                  << "\n";
    };
    for (const auto& [type, total] : rows) row(dtype_label(type), total);
    row("total", all);
}

// What one decode step reads. From the decode graph, counted as `bench` and `--trace`
// count it (decode_traffic), when edgerun builds a graph for the file's architecture;
// otherwise estimated from the tensor table, and labelled so.
struct DecodeCost {
    roofline::TokenBytes bytes;
    roofline::Geometry geometry;
    std::string estimate_reason;  // empty: counted from the decode graph
};

DecodeCost decode_cost(const std::vector<er_tensor_desc>& tensors, const std::optional<er_model_desc>& model, int64_t ctx,
                       int32_t kv_type) {
    std::string reason = "no model hyperparameters";
    if (model) {
        try {
            const HParams hp = hparams_from_desc(*model);
            const WeightTable weights(tensors);
            const Graph graph = find_architecture(hp.arch).build(hp, weights, 1);
            const roofline::Geometry g = roofline::geometry_of(hp);
            return {roofline::bytes_per_token(decode_traffic(graph, weights, ctx, kv_type), g), g, ""};
        } catch (const Error& e) {
            reason = e.what();
        }
    }
    const roofline::Geometry g = model ? roofline::geometry_of(*model) : roofline::Geometry{};
    return {roofline::bytes_per_token(tensors, g, ctx, kv_type), g, reason};
}

void print_cost(const std::vector<er_tensor_desc>& tensors, const std::optional<er_model_desc>& model, int64_t ctx,
                int32_t kv_type, const std::vector<const roofline::Device*>& targets, std::optional<double> bandwidth) {
    std::cout << "\nbytes read per decoded token at context " << ctx << " (KV cache " << kv_type_name(kv_type);
    if (tensors.empty()) {
        std::cout << ")\n  not applicable: the file has no tensors\n";
        return;
    }
    const DecodeCost cost = decode_cost(tensors, model, ctx, kv_type);
    if (!cost.estimate_reason.empty())
        std::cout << "; estimated from the tensor table, no decode graph: " << escape_line(cost.estimate_reason, 120);
    std::cout << ")\n";
    const roofline::TokenBytes& b = cost.bytes;
    const roofline::Geometry& g = cost.geometry;
    std::cout << "  weights      " << pad_left(std::to_string(b.weights), 12) << " bytes  " << pad_left(megabytes(b.weights), 10)
              << "  (LM head " << megabytes(b.lm_head) << (b.tied_embeddings ? ", tied: token_embd read in full" : "")
              << "; embedding lookups read one row)\n";
    std::cout << "  KV cache     " << pad_left(std::to_string(b.kv), 12) << " bytes  " << pad_left(megabytes(b.kv), 10);
    if (model)
        std::cout << "  (" << g.n_layer << " layers x " << g.n_head_kv << " KV heads x (" << g.head_dim_k << " + "
                  << g.head_dim_v << ") x " << ctx << " x " << fixed(kv_bytes_per_value(kv_type), 4) << " B)\n";
    else
        std::cout << "  (unknown: no model hyperparameters)\n";
    std::cout << "  activations  " << pad_left(std::to_string(b.activations), 12) << " bytes  "
              << pad_left(megabytes(b.activations), 10) << "  (estimate)\n";
    std::cout << "  total        " << pad_left(std::to_string(b.total()), 12) << " bytes  " << pad_left(megabytes(b.total()), 10)
              << "\n";

    std::cout << "\nroofline: tokens/s <= bandwidth / bytes per token\n";
    if (bandwidth)
        std::cout << "  " << pad(fixed(*bandwidth, 1) + " GB/s", 26) << "  " << pad_left(fixed(roofline::tokens_per_second(*bandwidth, b.total()), 1), 9)
                  << " tokens/s\n";
    for (const roofline::Device* d : targets)
        std::cout << "  " << pad(std::string(d->name), 16) << pad_left(fixed(d->bandwidth_gbps, 0) + " GB/s", 10) << "  "
                  << pad_left(fixed(roofline::tokens_per_second(d->bandwidth_gbps, b.total()), 1), 9) << " tokens/s  ("
                  << d->description << ")\n";
}

}  // namespace

int cmd_inspect(const std::vector<std::string>& args) {
    CommonOptions common;
    std::string path, kv_name = "f16", device_name;
    int64_t ctx = 0;
    double bandwidth = 0;
    po::options_description desc("edgerun inspect options");
    desc.add_options()
        ("file", po::value(&path), "the model file")
        ("ctx,c", po::value(&ctx), "context length for the KV term (default: the model's n_ctx_train, at most 4096)")
        ("kv-type", po::value(&kv_name)->default_value(kv_name), "KV cache element type: f16, f32 or q8")
        ("bandwidth", po::value(&bandwidth), "memory bandwidth in GB/s for the roofline")
        ("device", po::value(&device_name), "roofline for a device: orin-nano, orin-nano-super, orin-agx, h100");
    if (!parse(args, desc, common, "usage: edgerun inspect FILE [-c N] [--kv-type f16|f32|q8] [--bandwidth GB/s | --device NAME]",
               {{"file", 1}}))
        return 0;

    if (path.empty()) throw Error("inspect: no file given (usage: edgerun inspect FILE)", ER_E_INVALID_ARGUMENT);
    const int32_t kv_type = parse_kv_type(kv_name);
    if (ctx < 0) throw Error("--ctx: must be positive", ER_E_INVALID_ARGUMENT);
    std::optional<double> chosen_bandwidth;
    if (bandwidth < 0 || !std::isfinite(bandwidth)) throw Error("--bandwidth: must be a positive number of GB/s", ER_E_INVALID_ARGUMENT);
    if (bandwidth > 0) chosen_bandwidth = bandwidth;
    std::vector<const roofline::Device*> targets;
    if (!device_name.empty()) {
        const roofline::Device* d = roofline::find_device(device_name);
        if (!d) throw Error("--device: unknown device '" + device_name + "' (orin-nano, orin-nano-super, orin-agx, h100)", ER_E_INVALID_ARGUMENT);
        targets.push_back(d);
    } else if (!chosen_bandwidth) {
        for (const roofline::Device& d : roofline::devices()) targets.push_back(&d);
    }

    PluginRegistry registry = load_plugins(common);
    const Plugin& format = format_plugin_for(registry, path);
    ModelFile file(format, path);
    // Read everything that can fail before printing, so a bad file prints one error line.
    const std::vector<er_tensor_desc> tensors = file.tensors();

    std::cout << path << ": " << file.describe() << " (" << format.name() << ")\n";
    print_metadata(file);
    const std::optional<er_model_desc> model = print_model(file);
    print_vocab(file);
    print_tensors(tensors);
    if (ctx == 0) ctx = model && model->n_ctx_train > 0 ? std::min(model->n_ctx_train, kDefaultContextCap) : kDefaultContextCap;
    print_cost(tensors, model, ctx, kv_type, targets, chosen_bandwidth);
    return 0;
}

}  // namespace edgerun::cli
