// formats_gguf: reads (and writes) GGUF v2/v3 model files. The interface lives in
// format_iface.cpp; this file only names the plugin.
#include "format_iface.hpp"

#include <edgerun/plugin_sdk.hpp>

namespace {

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_FORMAT, "formats_gguf", "0.2.0",
                           "GGUF v2/v3 model files: validated mmap reader and streaming writer",
                           &edgerun::gguf::format_iface()};

}  // namespace

EDGERUN_DEFINE_PLUGIN(kPlugin)
