// Writing a model file through a format plugin's optional writer entries (abi.h): the
// app stays format-neutral. The file appears at its path only when finish() succeeds;
// destroying an unfinished writer discards everything.
#pragma once

#include <edgerun/host_api.hpp>
#include <edgerun/plugin_registry.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::authoring {

// The format plugin that writes files named like `path` (by extension), or an Error
// naming the extensions that can be written.
const Plugin& writer_plugin_for(const PluginRegistry& registry, const std::string& path);

class ModelWriter {
public:
    ModelWriter(const Plugin& plugin, const std::string& path);
    ~ModelWriter();
    ModelWriter(const ModelWriter&) = delete;
    ModelWriter& operator=(const ModelWriter&) = delete;

    // Raw form: scalars in `value`; arrays as value.array_type/array_count with
    // `array_data` pointing at the elements (er_str for strings).
    void set(const std::string& key, const er_meta_value& value, const void* array_data = nullptr);

    void set_string(const std::string& key, std::string_view value);
    void set_u32(const std::string& key, uint32_t value);
    void set_i32(const std::string& key, int32_t value);
    void set_f32(const std::string& key, float value);
    void set_bool(const std::string& key, bool value);
    void set_strings(const std::string& key, const std::vector<std::string>& values);
    void set_i32s(const std::string& key, const std::vector<int32_t>& values);

    void add_tensor(const std::string& name, int32_t dtype, int32_t n_dims, const int64_t* ne);
    // Once per tensor, in the order they were added.
    void write_tensor(const void* data, uint64_t nbytes);
    void finish();

private:
    Plugin plugin_;
    const er_format_iface* iface_;
    er_writer* writer_ = nullptr;
    std::string path_;
};

// Copies one metadata value of an open file (arrays element by element).
void copy_meta(const ModelFile& file, const std::string& key, const er_meta_value& value, ModelWriter& out);

}  // namespace edgerun::authoring
