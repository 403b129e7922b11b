// Which type each tensor of a model gets for a file type such as Q4_K_M: the same choice
// llama.cpp's quantizer makes (src/llama-quant.cpp), so files we write have the tensor
// table users expect and benchmarks compare like with like. Pure function of the tensor
// table and a few hyperparameters; shared by `edgerun quantize` and `edgerun synth`.
#pragma once

#include <edgerun/dtype.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::authoring {

// llama.cpp's file type ids (general.file_type), for the ones we can produce.
enum class FileType : int32_t {
    ALL_F32 = 0, MOSTLY_F16 = 1, MOSTLY_Q4_0 = 2, MOSTLY_Q4_1 = 3, MOSTLY_Q8_0 = 7,
    MOSTLY_Q5_0 = 8, MOSTLY_Q5_1 = 9, MOSTLY_Q4_K_S = 14, MOSTLY_Q4_K_M = 15,
    MOSTLY_Q5_K_S = 16, MOSTLY_Q5_K_M = 17, MOSTLY_Q6_K = 18, MOSTLY_BF16 = 32,
};

struct FileTypeInfo {
    FileType id;
    std::string_view name;  // as users type it: "Q4_K_M", "F16"
    DType default_type;     // the type most tensors get
};

const std::vector<FileTypeInfo>& file_types();
// Case-insensitive; accepts a file type ("Q4_K_M") only.
std::optional<FileTypeInfo> file_type_from_name(std::string_view name);
// For --pure: a tensor type ("Q4_K") or a file type name; gives the file type whose
// default is that tensor type (what general.file_type records).
std::optional<FileTypeInfo> pure_file_type_from_name(std::string_view name);
// "Q4_0, Q4_1, ..." for messages.
std::string file_type_names();

struct TensorInfo {
    std::string name;
    int32_t dtype = 0;  // the source type
    int32_t n_dims = 0;
    std::array<int64_t, 4> ne{1, 1, 1, 1};
};

struct RecipeParams {
    FileType file_type = FileType::MOSTLY_Q4_K_M;
    bool pure = false;          // the default type everywhere (still falling back by shape)
    std::string arch;           // general.architecture
    int64_t n_layer = 0;        // <arch>.block_count
    int64_t n_head = 0;         // only to tell a 70B llama (more bits on attn_v)
    int64_t n_head_kv = 0;
    int64_t n_expert = 0;       // <arch>.expert_count, 0 when absent
};

// The type of each tensor, in the order given. A tensor that keeps its type is copied.
// Throws edgerun::Error for a tensor no type fits.
std::vector<int32_t> plan_tensor_types(const std::vector<TensorInfo>& tensors, const RecipeParams& params);

// Whether a tensor is ever quantized (2-D or more, a weight, not a norm, ...).
bool tensor_is_quantizable(const TensorInfo& tensor, std::string_view arch);

}  // namespace edgerun::authoring
