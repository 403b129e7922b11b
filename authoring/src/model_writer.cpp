#include <edgerun/authoring/model_writer.hpp>
#include <edgerun/meta_type.hpp>

#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <sstream>

namespace edgerun::authoring {

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool lists_extension(const char* extensions, const std::string& ext) {
    if (!extensions || ext.empty()) return false;
    std::istringstream words(extensions);
    for (std::string word; words >> word;)
        if (lower(word) == ext) return true;
    return false;
}

bool can_write(const er_format_iface& f) {
    return f.struct_size >= sizeof(er_format_iface) && f.writer_create && f.writer_set_meta && f.writer_add_tensor &&
           f.writer_write_tensor && f.writer_finish && f.writer_abort;
}

// Packs one scalar er_meta_value as its GGUF element type, little-endian as the host.
void pack_scalar(int32_t type, const er_meta_value& v, uint8_t* out) {
    switch (type) {
        case ER_META_U8: case ER_META_BOOL: { const uint8_t x = uint8_t(v.v.u64); std::memcpy(out, &x, 1); break; }
        case ER_META_I8: { const int8_t x = int8_t(v.v.i64); std::memcpy(out, &x, 1); break; }
        case ER_META_U16: { const uint16_t x = uint16_t(v.v.u64); std::memcpy(out, &x, 2); break; }
        case ER_META_I16: { const int16_t x = int16_t(v.v.i64); std::memcpy(out, &x, 2); break; }
        case ER_META_U32: { const uint32_t x = uint32_t(v.v.u64); std::memcpy(out, &x, 4); break; }
        case ER_META_I32: { const int32_t x = int32_t(v.v.i64); std::memcpy(out, &x, 4); break; }
        case ER_META_F32: { const float x = float(v.v.f64); std::memcpy(out, &x, 4); break; }
        case ER_META_U64: std::memcpy(out, &v.v.u64, 8); break;
        case ER_META_I64: std::memcpy(out, &v.v.i64, 8); break;
        case ER_META_F64: std::memcpy(out, &v.v.f64, 8); break;
        default: break;
    }
}

}  // namespace

const Plugin& writer_plugin_for(const PluginRegistry& registry, const std::string& path) {
    const std::string ext = lower(std::filesystem::path(path).extension().string());
    std::string known;
    const Plugin* any_writer = nullptr;
    for (const Plugin* plugin : registry.of_kind(ER_PLUGIN_FORMAT)) {
        const auto& iface = *plugin->iface<er_format_iface>();
        if (!can_write(iface)) continue;
        if (lists_extension(iface.file_extensions, ext)) return *plugin;
        any_writer = plugin;
        if (!known.empty()) known += ' ';
        known += iface.file_extensions ? iface.file_extensions : "?";
    }
    if (!any_writer) throw Error("no format plugin found that writes model files (is formats_gguf installed?)", ER_E_NOT_FOUND);
    throw Error(path + ": no format plugin writes '" + ext + "' files; writable: " + known, ER_E_INVALID_ARGUMENT);
}

ModelWriter::ModelWriter(const Plugin& plugin, const std::string& path)
    : plugin_(plugin), iface_(plugin.iface<er_format_iface>()), path_(path) {
    if (!can_write(*iface_)) throw Error(std::string(plugin.name()) + " cannot write model files", ER_E_UNSUPPORTED);
    er_error err{};
    check(iface_->writer_create(path.c_str(), &writer_, &err), err, path);
}

ModelWriter::~ModelWriter() {
    if (writer_) iface_->writer_abort(writer_);
}

void ModelWriter::set(const std::string& key, const er_meta_value& value, const void* array_data) {
    er_error err{};
    check(iface_->writer_set_meta(writer_, key.c_str(), &value, array_data, &err), err, path_ + ": metadata " + key);
}

void ModelWriter::set_string(const std::string& key, std::string_view value) {
    er_meta_value v{};
    v.type = ER_META_STRING;
    v.v.str = {value.data(), value.size()};
    set(key, v);
}

void ModelWriter::set_u32(const std::string& key, uint32_t value) {
    er_meta_value v{};
    v.type = ER_META_U32;
    v.v.u64 = value;
    set(key, v);
}

void ModelWriter::set_i32(const std::string& key, int32_t value) {
    er_meta_value v{};
    v.type = ER_META_I32;
    v.v.i64 = value;
    set(key, v);
}

void ModelWriter::set_f32(const std::string& key, float value) {
    er_meta_value v{};
    v.type = ER_META_F32;
    v.v.f64 = value;
    set(key, v);
}

void ModelWriter::set_bool(const std::string& key, bool value) {
    er_meta_value v{};
    v.type = ER_META_BOOL;
    v.v.u64 = value ? 1 : 0;
    set(key, v);
}

void ModelWriter::set_strings(const std::string& key, const std::vector<std::string>& values) {
    std::vector<er_str> strs;
    strs.reserve(values.size());
    for (const std::string& s : values) strs.push_back({s.data(), s.size()});
    er_meta_value v{};
    v.type = ER_META_ARRAY;
    v.array_type = ER_META_STRING;
    v.array_count = strs.size();
    set(key, v, strs.data());
}

void ModelWriter::set_i32s(const std::string& key, const std::vector<int32_t>& values) {
    er_meta_value v{};
    v.type = ER_META_ARRAY;
    v.array_type = ER_META_I32;
    v.array_count = values.size();
    set(key, v, values.data());
}

void ModelWriter::add_tensor(const std::string& name, int32_t dtype, int32_t n_dims, const int64_t* ne) {
    er_tensor_desc desc{};
    desc.name = {name.data(), name.size()};
    desc.dtype = dtype;
    desc.n_dims = n_dims;
    for (int i = 0; i < ER_MAX_DIMS; ++i) desc.ne[i] = i < n_dims ? ne[i] : 1;
    er_error err{};
    check(iface_->writer_add_tensor(writer_, &desc, &err), err, path_ + ": tensor " + name);
}

void ModelWriter::write_tensor(const void* data, uint64_t nbytes) {
    er_error err{};
    check(iface_->writer_write_tensor(writer_, data, nbytes, &err), err, path_);
}

void ModelWriter::finish() {
    er_error err{};
    er_writer* writer = writer_;
    writer_ = nullptr;  // finish frees it, whatever the outcome
    check(iface_->writer_finish(writer, &err), err, path_);
}

void copy_meta(const ModelFile& file, const std::string& key, const er_meta_value& value, ModelWriter& out) {
    if (value.type != ER_META_ARRAY) {
        out.set(key, value);
        return;
    }
    const uint64_t n = value.array_count;
    if (value.array_type == ER_META_STRING) {
        std::vector<er_str> strs(n);
        for (uint64_t i = 0; i < n; ++i) strs[i] = file.meta_array_at(value, i).v.str;
        out.set(key, value, strs.data());
        return;
    }
    const size_t size = meta_scalar_size(value.array_type);
    if (size == 0) {
        spdlog::warn("metadata {}: nested arrays cannot be written; key dropped", key);
        return;
    }
    std::vector<uint8_t> bytes(n * size);
    for (uint64_t i = 0; i < n; ++i) pack_scalar(value.array_type, file.meta_array_at(value, i), &bytes[i * size]);
    out.set(key, value, bytes.data());
}

}  // namespace edgerun::authoring
