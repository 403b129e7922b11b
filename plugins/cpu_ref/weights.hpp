// The model's weights as cpu_ref holds them: pointers into the host bytes given at
// model_load (usually the file mapping, valid while the model lives), never copies.
// Rows are dequantized as they are used. Only single-row weights (norms, biases, rope
// factors: a few KB) are also kept dequantized to F32.
#pragma once

#include "kernels.hpp"

#include <edgerun/abi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace edgerun::cpu_ref {

struct WeightRef {
    std::string name;
    int32_t dtype = -1;
    int64_t cols = 0;        // ne[0]: values per row
    int64_t rows = 0;        // ne[1] * ne[2] * ne[3]
    uint64_t row_bytes = 0;
    const uint8_t* data = nullptr;
    const RowKernels* kernels = nullptr;  // nullptr when this backend cannot dequantize the type
    std::vector<float> dequantized;       // single-row weights only: the row as F32

    const uint8_t* row(int64_t r) const { return data + static_cast<uint64_t>(r) * row_bytes; }
};

// Validates the weight table (types, shapes, byte counts) and builds the references;
// throws sdk::Failure naming the first bad weight.
std::vector<WeightRef> load_weights(const er_model_params& params, Isa isa, uint64_t* total_bytes);

// "Q4_K" for a GGUF type id, "type 99" for an unknown one.
std::string dtype_label(int32_t dtype);

}  // namespace edgerun::cpu_ref
