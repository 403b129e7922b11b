// Test tool for comparing the formats_gguf plugin with the python `gguf` package.
//
//   gguf_tool dump FILE            everything the plugin reads from FILE, as JSON
//   gguf_tool write-sample FILE    writes a file with every metadata type and several
//                                  tensor types through the plugin's writer
//
// Strings are printed as hex (token texts may hold any bytes); floats with enough digits
// to round-trip.
#include <edgerun/dtype.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/plugin_registry.hpp>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

using edgerun::to_view;

const er_format_iface* g_iface = nullptr;

std::string hex(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (unsigned char c : s) {
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
    return out + "\"";
}

std::string number(const er_meta_value& v) {
    char buf[64];
    switch (v.type) {
        case ER_META_U8: case ER_META_U16: case ER_META_U32: case ER_META_U64: case ER_META_BOOL:
            std::snprintf(buf, sizeof buf, "%" PRIu64, v.v.u64);
            return buf;
        case ER_META_I8: case ER_META_I16: case ER_META_I32: case ER_META_I64:
            std::snprintf(buf, sizeof buf, "%" PRId64, v.v.i64);
            return buf;
        default:
            if (std::isnan(v.v.f64)) return "\"nan\"";
            if (std::isinf(v.v.f64)) return v.v.f64 > 0 ? "\"inf\"" : "\"-inf\"";
            std::snprintf(buf, sizeof buf, "%.17g", v.v.f64);
            return buf;
    }
}

std::string value_json(er_file* file, const er_meta_value& v) {
    if (v.type == ER_META_STRING) return hex(to_view(v.v.str));
    if (v.type != ER_META_ARRAY) return number(v);
    std::string out = "{\"array_type\": " + std::to_string(v.array_type) + ", \"values\": [";
    for (uint64_t i = 0; i < v.array_count; ++i) {
        er_meta_value e{};
        er_error err{};
        edgerun::check(g_iface->meta_array_at(file, &v, i, &e, &err), err, "array element");
        if (i) out += ", ";
        out += value_json(file, e);
    }
    return out + "]}";
}

int dump(const std::string& path) {
    er_file* file = nullptr;
    er_error err{};
    edgerun::check(g_iface->open(path.c_str(), &file, &err), err, path);
    std::cout << "{\"describe\": \"" << to_view(g_iface->describe(file)) << "\",\n \"metadata\": [\n";
    for (uint64_t i = 0; i < g_iface->meta_count(file); ++i) {
        er_str key{};
        er_meta_value v{};
        edgerun::check(g_iface->meta_at(file, i, &key, &v, &err), err, "metadata");
        std::cout << (i ? ",\n" : "") << "  {\"key\": " << hex(to_view(key)) << ", \"type\": " << v.type
                  << ", \"value\": " << value_json(file, v) << "}";
    }
    std::cout << "],\n \"tensors\": [\n";
    for (uint64_t i = 0; i < g_iface->tensor_count(file); ++i) {
        er_tensor_desc t{};
        edgerun::check(g_iface->tensor_at(file, i, &t, &err), err, "tensor");
        std::cout << (i ? ",\n" : "") << "  {\"name\": " << hex(to_view(t.name)) << ", \"type\": " << t.dtype
                  << ", \"shape\": [";
        for (int d = 0; d < t.n_dims; ++d) std::cout << (d ? ", " : "") << t.ne[d];
        std::cout << "], \"nbytes\": " << t.nbytes << ", \"offset\": " << t.file_offset << "}";
    }
    std::cout << "],\n \"model\": ";
    auto model = edgerun::sized<er_model_desc>();
    if (g_iface->model_desc(file, &model, &err) == ER_OK) {
        std::cout << "{\"arch\": \"" << model.arch << "\", \"n_vocab\": " << model.n_vocab << ", \"n_ctx_train\": "
                  << model.n_ctx_train << ", \"n_embd\": " << model.n_embd << ", \"n_layer\": " << model.n_layer
                  << ", \"n_head\": " << model.n_head << ", \"n_head_kv\": " << model.n_head_kv << ", \"head_dim_k\": "
                  << model.head_dim_k << ", \"n_ff\": " << model.n_ff << ", \"n_rot\": " << model.n_rot
                  << ", \"file_type\": " << model.file_type << "}";
    } else {
        std::cout << "null";
    }
    std::cout << ",\n \"vocab\": ";
    auto vocab = edgerun::sized<er_vocab_desc>();
    if (g_iface->vocab_desc(file, &vocab, &err) == ER_OK) {
        std::cout << "{\"kind\": " << vocab.kind << ", \"n_tokens\": " << vocab.n_tokens << ", \"n_merges\": " << vocab.n_merges
                  << ", \"bos\": " << vocab.bos_id << ", \"eos\": " << vocab.eos_id << ", \"unk\": " << vocab.unk_id
                  << ", \"pad\": " << vocab.pad_id << ", \"add_bos\": " << vocab.add_bos << "}";
    } else {
        std::cout << "null";
    }
    std::cout << "}\n";
    g_iface->close(file);
    return 0;
}

// Writes a file holding every metadata type (scalars and arrays) and tensors of several
// types, with data bytes that depend on the tensor and position.
int write_sample(const std::string& path) {
    er_writer* w = nullptr;
    er_error err{};
    edgerun::check(g_iface->writer_create(path.c_str(), &w, &err), err, path);
    const auto meta = [&](const char* key, er_meta_value v, const void* array = nullptr) {
        edgerun::check(g_iface->writer_set_meta(w, key, &v, array, &err), err, key);
    };
    const auto u = [](int32_t type, uint64_t x) { er_meta_value v{}; v.type = type; v.v.u64 = x; return v; };
    const auto s = [](int32_t type, int64_t x) { er_meta_value v{}; v.type = type; v.v.i64 = x; return v; };
    const auto f = [](int32_t type, double x) { er_meta_value v{}; v.type = type; v.v.f64 = x; return v; };
    const auto arr = [](int32_t type, uint64_t n) { er_meta_value v{}; v.type = ER_META_ARRAY; v.array_type = type; v.array_count = n; return v; };
    const std::string name = "sample \xc3\xa9\xe2\x82\xac";
    er_meta_value text{};
    text.type = ER_META_STRING;
    text.v.str = er_str{name.data(), name.size()};

    meta("general.architecture", [] { er_meta_value v{}; v.type = ER_META_STRING; v.v.str = er_str{"llama", 5}; return v; }());
    meta("general.name", text);
    meta("general.alignment", u(ER_META_U32, 64));
    meta("t.u8", u(ER_META_U8, 255));
    meta("t.i8", s(ER_META_I8, -128));
    meta("t.u16", u(ER_META_U16, 65535));
    meta("t.i16", s(ER_META_I16, -32768));
    meta("t.u32", u(ER_META_U32, 4294967295u));
    meta("t.i32", s(ER_META_I32, INT32_MIN));
    meta("t.u64", u(ER_META_U64, UINT64_MAX));
    meta("t.i64", s(ER_META_I64, INT64_MIN));
    meta("t.f32", f(ER_META_F32, 3.14159265358979));
    meta("t.f64", f(ER_META_F64, 2.718281828459045));
    meta("t.bool", u(ER_META_BOOL, 1));
    const uint8_t a_u8[] = {0, 1, 254};
    const int8_t a_i8[] = {-1, 2};
    const uint16_t a_u16[] = {7};
    const int16_t a_i16[] = {-300, 300};
    const uint32_t a_u32[] = {1, 2, 3, 4};
    const int32_t a_i32[] = {-5, 6};
    const uint64_t a_u64[] = {UINT64_MAX, 0};
    const int64_t a_i64[] = {INT64_MAX};
    const float a_f32[] = {0.5f, -1e-7f, 3e38f};
    const double a_f64[] = {1e-300, -0.0};
    const uint8_t a_bool[] = {1, 0};
    const std::string words[] = {"a", "", "\xe2\x96\x81word", std::string("x\0y", 3)};
    const er_str a_str[] = {{words[0].data(), words[0].size()}, {words[1].data(), 0},
                            {words[2].data(), words[2].size()}, {words[3].data(), words[3].size()}};
    meta("a.u8", arr(ER_META_U8, 3), a_u8);
    meta("a.i8", arr(ER_META_I8, 2), a_i8);
    meta("a.u16", arr(ER_META_U16, 1), a_u16);
    meta("a.i16", arr(ER_META_I16, 2), a_i16);
    meta("a.u32", arr(ER_META_U32, 4), a_u32);
    meta("a.i32", arr(ER_META_I32, 2), a_i32);
    meta("a.u64", arr(ER_META_U64, 2), a_u64);
    meta("a.i64", arr(ER_META_I64, 1), a_i64);
    meta("a.f32", arr(ER_META_F32, 3), a_f32);
    meta("a.f64", arr(ER_META_F64, 2), a_f64);
    meta("a.bool", arr(ER_META_BOOL, 2), a_bool);
    meta("a.str", arr(ER_META_STRING, 4), a_str);
    meta("a.empty", arr(ER_META_F32, 0), nullptr);

    struct T {
        const char* name;
        int32_t dtype;
        std::vector<int64_t> ne;
    };
    const std::vector<T> tensors = {{"token_embd.weight", 8, {64, 10}}, {"blk.0.attn_norm.weight", 0, {64}},
                                    {"blk.0.attn_q.weight", 12, {256, 4}}, {"blk.0.ffn_up.weight", 14, {256, 2, 3}},
                                    {"blk.0.bf16", 30, {8, 2, 2, 2}}, {"blk.0.q4_1", 3, {32, 3}}};
    std::vector<uint64_t> sizes;
    for (const T& t : tensors) {
        er_tensor_desc d{};
        d.name = er_str{t.name, std::strlen(t.name)};
        d.dtype = t.dtype;
        d.n_dims = static_cast<int32_t>(t.ne.size());
        for (size_t i = 0; i < t.ne.size(); ++i) d.ne[i] = t.ne[i];
        edgerun::check(g_iface->writer_add_tensor(w, &d, &err), err, t.name);
        uint64_t rows = 1;
        for (size_t i = 1; i < t.ne.size(); ++i) rows *= static_cast<uint64_t>(t.ne[i]);
        sizes.push_back(*edgerun::row_bytes(t.dtype, t.ne[0]) * rows);
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
        std::string data(sizes[i], '\0');
        for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<char>((k * 29 + i * 7) & 0xFF);
        edgerun::check(g_iface->writer_write_tensor(w, data.data(), data.size(), &err), err, tensors[i].name);
    }
    const er_status status = g_iface->writer_finish(w, &err);
    edgerun::check(status, err, "finish");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: gguf_tool dump|write-sample FILE\n";
        return 2;
    }
    try {
        edgerun::PluginRegistry registry;
        registry.scan_directory(EDGERUN_BUILD_PLUGIN_DIR);
        const edgerun::Plugin* plugin = registry.find(ER_PLUGIN_FORMAT, "formats_gguf");
        if (!plugin) throw edgerun::Error("formats_gguf plugin not found in " EDGERUN_BUILD_PLUGIN_DIR);
        g_iface = plugin->iface<er_format_iface>();
        const std::string mode = argv[1];
        if (mode == "dump") return dump(argv[2]);
        if (mode == "write-sample") return write_sample(argv[2]);
        std::cerr << "gguf_tool: unknown mode '" << mode << "'\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "gguf_tool: " << e.what() << "\n";
        return 1;
    }
}
