// C entries to the quantizers and decoders for the Python scripts (ctypes): they run our
// quantizer on exactly the rows llama.cpp quantizes, and decode our blocks with an
// independent decoder (python gguf) to check the packing.
#include <edgerun/dtype.hpp>
#include <edgerun/quant/blocks.hpp>
#include <edgerun/quant/quantize.hpp>

#define SHIM_EXPORT extern "C" __attribute__((visibility("default")))

SHIM_EXPORT int edgerun_quantize_rows(int32_t dtype, const float* src, void* dst, int64_t n_rows, int64_t n_per_row) {
    if (!edgerun::row_bytes(dtype, n_per_row)) return -1;
    return edgerun::quant::quantize_rows(dtype, src, dst, n_rows, n_per_row) ? 0 : -1;
}

SHIM_EXPORT int edgerun_dequantize(int32_t dtype, const void* src, float* dst, int64_t n) {
    if (!edgerun::row_bytes(dtype, n)) return -1;
    return edgerun::quant::dequantize_row(dtype, src, dst, n) ? 0 : -1;
}
