// The er_format_iface over GgufFile and GgufWriter: the plugin's whole ABI surface, kept
// apart from the descriptor so the fuzzer and tests can drive it in-process.
#pragma once

#include "gguf_file.hpp"

#include <edgerun/abi.h>

#include <memory>

namespace edgerun::gguf {

const er_format_iface& format_iface();

// Wraps an already parsed file as an er_file for the iface (release with iface.close).
er_file* wrap_file(std::unique_ptr<GgufFile> file);

}  // namespace edgerun::gguf
