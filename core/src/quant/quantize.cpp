#include <edgerun/dtype.hpp>
#include <edgerun/quant/quantize.hpp>

#include <cstring>

namespace edgerun::quant {

namespace {

template <typename Block, int QK>
void quantize_blocks(const float* src, void* dst, int64_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t i = 0; i < n / QK; ++i) {
        Block block;
        quantize_block(src + i * QK, block);
        std::memcpy(out + i * int64_t(sizeof(Block)), &block, sizeof block);
    }
}

}  // namespace

bool can_quantize(int32_t dtype) {
    switch (DType(dtype)) {
        case DType::F32: case DType::F16: case DType::BF16:
        case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
        case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
            return true;
        default:
            return false;
    }
}

bool quantize_rows(int32_t dtype, const float* src, void* dst, int64_t n_rows, int64_t n_per_row) {
    // Rows are contiguous in both layouts, so a whole range is one run of blocks.
    const int64_t n = n_rows * n_per_row;
    auto* out = static_cast<uint8_t*>(dst);
    switch (DType(dtype)) {
        case DType::F32: std::memcpy(dst, src, size_t(n) * sizeof(float)); return true;
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_fp16(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return true;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_bf16(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return true;
        case DType::Q4_0: quantize_blocks<BlockQ4_0, QK4_0>(src, dst, n); return true;
        case DType::Q4_1: quantize_blocks<BlockQ4_1, QK4_1>(src, dst, n); return true;
        case DType::Q5_0: quantize_blocks<BlockQ5_0, QK5_0>(src, dst, n); return true;
        case DType::Q5_1: quantize_blocks<BlockQ5_1, QK5_1>(src, dst, n); return true;
        case DType::Q8_0: quantize_blocks<BlockQ8_0, QK8_0>(src, dst, n); return true;
        case DType::Q4_K: quantize_blocks<BlockQ4_K, QK_K>(src, dst, n); return true;
        case DType::Q5_K: quantize_blocks<BlockQ5_K, QK_K>(src, dst, n); return true;
        case DType::Q6_K: quantize_blocks<BlockQ6_K, QK_K>(src, dst, n); return true;
        default: return false;
    }
}

}  // namespace edgerun::quant
