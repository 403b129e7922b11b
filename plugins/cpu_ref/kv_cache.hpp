// The KV cache of one context, and the reference layout every backend's cache is
// judged against.
//
// Geometry: n_layer layers, n_seqs sequences of n_ctx positions, n_head_kv heads; K rows
// hold head_dim_k values, V rows head_dim_v. K and V are separate arrays, each
//
//     [layer][sequence][position][kv head][row of head_dim values]
//
// so one (layer, sequence, position, head) row is contiguous, V is not transposed,
// writing a position touches only that position's rows (appending a token never
// rewrites older ones), and a sequence's rows of one layer are one block found from
// the sequence index alone. Row encodings by er_context_params.kv_type:
//
//   ER_KV_F32: head_dim IEEE floats.
//   ER_KV_F16: head_dim IEEE halves, rounded to nearest even from F32.
//   ER_KV_Q8:  head_dim / 32 blocks (head_dim must be a multiple of 32), each exactly a
//              GGUF Q8_0 block of 34 bytes: a little-endian fp16 scale d, then 32 int8
//              values q. For the 32 floats x of a block:
//                  amax = max |x_i|                  (in F32)
//                  d    = amax / 127                 (F32 division)
//                  id   = d != 0 ? 1 / d : 0         (F32, from the unrounded d)
//                  q_i  = roundf(x_i * id)           (round half away from zero)
//                  stored scale = fp16(d)            (round to nearest even)
//              and a value reads back as fp16_to_fp32(stored scale) * q_i.
//              This is llama.cpp's reference Q8_0 quantizer (quantize_row_q8_0_ref),
//              so one scale covers 32 values of one token and one head only.
//
// Positions at or past the last step's end are stale. The cache is zero-filled at
// creation, so reading a position that was never written gives zeros, never garbage.
#pragma once

#include "kernels.hpp"

#include <edgerun/abi.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace edgerun::cpu_ref {

class KvCache {
public:
    // Throws sdk::Failure on a bad geometry or when memory runs out.
    explicit KvCache(const er_context_params& params);

    int32_t kv_type() const { return kv_type_; }
    int32_t row_dtype() const { return row_dtype_; }  // the GGUF type of one row: F32, F16 or Q8_0
    const RowKernels& kernels() const { return *kernels_; }
    uint64_t bytes() const { return bytes_; }

    int32_t n_seqs() const { return n_seqs_; }
    uint8_t* k_row(int32_t layer, int32_t seq, int32_t pos, int32_t head) {
        return k_.get() + offset(layer, seq, pos, head, k_row_bytes_);
    }
    uint8_t* v_row(int32_t layer, int32_t seq, int32_t pos, int32_t head) {
        return v_.get() + offset(layer, seq, pos, head, v_row_bytes_);
    }
    uint64_t k_row_bytes() const { return k_row_bytes_; }
    uint64_t v_row_bytes() const { return v_row_bytes_; }

    // Encodes one row of F32 values into the cache's format at `dst`.
    void encode_row(const float* src, int64_t n, uint8_t* dst) const;

private:
    struct FreeDeleter {
        void operator()(uint8_t* p) const { std::free(p); }
    };

    uint64_t offset(int32_t layer, int32_t seq, int32_t pos, int32_t head, uint64_t row_bytes) const {
        return (((static_cast<uint64_t>(layer) * n_seqs_ + seq) * n_ctx_ + pos) * n_head_kv_ + head) * row_bytes;
    }

    int32_t kv_type_, row_dtype_;
    int32_t n_ctx_, n_head_kv_, n_seqs_;
    uint64_t k_row_bytes_, v_row_bytes_, bytes_;
    const RowKernels* kernels_;
    std::unique_ptr<uint8_t, FreeDeleter> k_, v_;
};

// llama.cpp's reference Q8_0 quantizer, as the layout comment above defines it.
void quantize_row_q8_0(const float* x, void* dst, int64_t n);

}  // namespace edgerun::cpu_ref
