// Re-quantizing a model file into another file type (`edgerun quantize`): llama.cpp's
// recipe picks each tensor's type (model_recipe.hpp); a tensor whose type changes is
// dequantized to float, checked for non-finite values and quantized again, the others are
// copied byte for byte. All metadata is copied, general.file_type and
// general.quantization_version set.
#pragma once

#include <edgerun/authoring/model_recipe.hpp>
#include <edgerun/host_api.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace edgerun {
class PluginRegistry;
}

namespace edgerun::authoring {

struct RequantizePlan {
    FileTypeInfo file_type;
    std::vector<er_tensor_desc> sources;  // the input's tensors, in its order
    std::vector<TensorInfo> tensors;      // the same, as the recipe sees them
    std::vector<int32_t> types;           // the type each tensor gets
    uint64_t bytes_in = 0, bytes_out = 0;
    uint64_t values_to_quantize = 0;      // of the tensors whose type changes
    uint64_t n_weights = 0;               // every tensor's values
};

// Checks every tensor of `file` (read from `path`) and chooses its type; throws Error for
// a tensor whose size does not match its shape, or whose type cannot be re-quantized.
RequantizePlan plan_requantize(const ModelFile& file, const std::string& path, const FileTypeInfo& file_type,
                               bool pure);

// Writes `path` as planned, on `threads` threads; the file appears only once complete.
// Throws Error, also when an InterruptGuard saw Ctrl-C.
void write_requantized(const PluginRegistry& registry, const ModelFile& file, const RequantizePlan& plan,
                       const std::string& path, int threads);

}  // namespace edgerun::authoring
