#include "weights.hpp"

#include <edgerun/dtype.hpp>
#include <edgerun/plugin_sdk.hpp>

namespace edgerun::cpu_ref {

using sdk::Failure;

std::string dtype_label(int32_t dtype) {
    const DTypeInfo* info = dtype_info(dtype);
    return info ? std::string(info->name) : "type " + std::to_string(dtype);
}

std::vector<WeightRef> load_weights(const er_model_params& params, Isa isa, uint64_t* total_bytes) {
    if (params.n_weights < 0 || (params.n_weights > 0 && !params.weights))
        throw Failure(ER_E_INVALID_ARGUMENT, "model_load: the weight table is missing");
    std::vector<WeightRef> out(static_cast<size_t>(params.n_weights));
    uint64_t total = 0;
    for (int64_t i = 0; i < params.n_weights; ++i) {
        const er_tensor_desc& t = params.weights[i];
        WeightRef& w = out[i];
        w.name = std::string(sdk::view(t.name));
        const std::string label = "weight '" + w.name + "'";
        const DTypeInfo* info = dtype_info(t.dtype);
        if (!info) throw Failure(ER_E_FORMAT, label + ": unknown tensor type id " + std::to_string(t.dtype));
        if (t.n_dims < 1 || t.n_dims > ER_MAX_DIMS)
            throw Failure(ER_E_FORMAT, label + ": " + std::to_string(t.n_dims) + " dimensions");
        int64_t rows = 1;
        for (int d = 0; d < t.n_dims; ++d) {
            if (t.ne[d] < 1) throw Failure(ER_E_FORMAT, label + ": dimension " + std::to_string(d) + " is empty");
            if (d > 0) {
                if (rows > (int64_t{1} << 40) / t.ne[d]) throw Failure(ER_E_FORMAT, label + ": too many rows");
                rows *= t.ne[d];
            }
        }
        const auto row_size = row_bytes(t.dtype, t.ne[0]);
        if (!row_size)
            throw Failure(ER_E_FORMAT, label + ": rows of " + std::to_string(t.ne[0]) + " values are not whole " +
                                           std::string(info->name) + " blocks of " +
                                           std::to_string(info->block_elems));
        const uint64_t need = *row_size * static_cast<uint64_t>(rows);
        if (t.nbytes < need)
            throw Failure(ER_E_FORMAT, label + ": " + std::to_string(t.nbytes) + " bytes, its shape needs " +
                                           std::to_string(need));
        if (!t.data && need > 0) throw Failure(ER_E_INVALID_ARGUMENT, label + ": no data");
        w.dtype = t.dtype;
        w.cols = t.ne[0];
        w.rows = rows;
        w.row_bytes = *row_size;
        w.data = static_cast<const uint8_t*>(t.data);
        w.kernels = row_kernels(t.dtype, isa);
        if (w.kernels && rows == 1) {
            w.dequantized.resize(static_cast<size_t>(w.cols));
            w.kernels->dequant(w.data, w.dequantized.data(), w.cols);
        }
        total += need;
    }
    if (total_bytes) *total_bytes = total;
    return out;
}

}  // namespace edgerun::cpu_ref
