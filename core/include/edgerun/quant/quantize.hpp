// Quantizers: float rows to GGUF blocks. Pure host math, the inverse of blocks.hpp.
//
// Every quantizer searches its scales (and minimums) for the least squared error of the
// dequantized block against the input, rather than taking a block's max and min: at 4 and 5
// bits that search is worth 5-20% of RMSE against the naive choice. No importance data is
// given, so the error is plain squared error, except for Q4_0 and Q5_0, where each
// weight's error counts in proportion to its magnitude (measured to lower the KL
// divergence of a real model at those widths; see quantize_legacy.cpp). The dequantized
// values are computed exactly as blocks.hpp dequantizes them, fp16 rounding of the stored
// scales included.
//
// Thread-safe and deterministic: the output depends only on the input values, so callers
// may split a tensor across threads by rows in any way.
#pragma once

#include <edgerun/quant/blocks.hpp>

#include <cstdint>

namespace edgerun::quant {

// True for the GGUF type ids quantize_rows can produce: F32, F16, BF16, Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
bool can_quantize(int32_t dtype);

// Quantizes `n_rows` rows of `n_per_row` floats into `dst`, which holds
// row_bytes(dtype, n_per_row) * n_rows bytes. n_per_row must be a multiple of the type's
// block size (checked by the caller: see dtype.hpp's row_bytes). Inputs must be finite.
// Returns false for a type can_quantize refuses.
bool quantize_rows(int32_t dtype, const float* src, void* dst, int64_t n_rows, int64_t n_per_row);

// One block each; `x` holds the block's QK values.
void quantize_block(const float* x, BlockQ4_0& y);
void quantize_block(const float* x, BlockQ4_1& y);
void quantize_block(const float* x, BlockQ5_0& y);
void quantize_block(const float* x, BlockQ5_1& y);
void quantize_block(const float* x, BlockQ8_0& y);
void quantize_block(const float* x, BlockQ4_K& y);
void quantize_block(const float* x, BlockQ5_K& y);
void quantize_block(const float* x, BlockQ6_K& y);

}  // namespace edgerun::quant
