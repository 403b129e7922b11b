#include "kv_cache.hpp"

#include <edgerun/plugin_sdk.hpp>
#include <edgerun/quant/blocks.hpp>

#include <cmath>
#include <cstring>
#include <string>

namespace edgerun::cpu_ref {

using sdk::Failure;

void quantize_row_q8_0(const float* x, void* dst, int64_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t b = 0; b < n / quant::QK8_0; ++b, x += quant::QK8_0, out += sizeof(quant::BlockQ8_0)) {
        float amax = 0.0f;
        for (int i = 0; i < quant::QK8_0; ++i) {
            const float a = std::fabs(x[i]);
            amax = amax > a ? amax : a;  // llama.cpp's MAX(), NaN handling included
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        quant::BlockQ8_0 block;
        block.d = quant::fp32_to_fp16(d);
        for (int i = 0; i < quant::QK8_0; ++i) block.qs[i] = static_cast<int8_t>(std::roundf(x[i] * id));
        std::memcpy(out, &block, sizeof block);
    }
}

KvCache::KvCache(const er_context_params& p)
    : kv_type_(p.kv_type), n_ctx_(p.n_ctx), n_head_kv_(p.n_head_kv), n_seqs_(p.n_seqs > 1 ? p.n_seqs : 1) {
    auto bad = [](const std::string& what) { return Failure(ER_E_INVALID_ARGUMENT, "context: " + what); };
    if (p.n_ctx < 1) throw bad("n_ctx must be at least 1 (got " + std::to_string(p.n_ctx) + ")");
    if (p.n_layer < 0) throw bad("n_layer is negative");
    if (p.n_layer > 0 && (p.n_head_kv < 1 || p.head_dim_k < 1 || p.head_dim_v < 1))
        throw bad("KV geometry needs n_head_kv, head_dim_k and head_dim_v of at least 1");
    int64_t elem_num = 0, elem_den = 1;  // bytes per value = num / den
    switch (p.kv_type) {
        case ER_KV_F32: row_dtype_ = 0, elem_num = 4; break;
        case ER_KV_F16: row_dtype_ = 1, elem_num = 2; break;
        case ER_KV_Q8:
            row_dtype_ = 8, elem_num = 34, elem_den = 32;
            if (p.n_layer > 0 && (p.head_dim_k % 32 != 0 || p.head_dim_v % 32 != 0))
                throw Failure(ER_E_UNSUPPORTED, "context: the Q8 KV cache needs head dims that are multiples of 32 (got " +
                                                    std::to_string(p.head_dim_k) + " and " +
                                                    std::to_string(p.head_dim_v) + ")");
            break;
        default: throw bad("unknown kv_type " + std::to_string(p.kv_type));
    }
    kernels_ = row_kernels(row_dtype_);
    k_row_bytes_ = static_cast<uint64_t>(p.head_dim_k) * elem_num / elem_den;
    v_row_bytes_ = static_cast<uint64_t>(p.head_dim_v) * elem_num / elem_den;
    const uint64_t rows = static_cast<uint64_t>(p.n_layer) * static_cast<uint64_t>(n_seqs_) *
                          static_cast<uint64_t>(p.n_ctx) * static_cast<uint64_t>(p.n_layer > 0 ? p.n_head_kv : 0);
    bytes_ = rows * (k_row_bytes_ + v_row_bytes_);
    if (rows == 0) return;
    // calloc: zeroed pages the OS maps on first touch, so a large n_ctx costs nothing
    // until it is used.
    k_.reset(static_cast<uint8_t*>(std::calloc(rows, k_row_bytes_)));
    v_.reset(static_cast<uint8_t*>(std::calloc(rows, v_row_bytes_)));
    if (!k_ || !v_)
        throw Failure(ER_E_OUT_OF_MEMORY, "context: cannot allocate a KV cache of " +
                                              std::to_string(bytes_ >> 20) + " MiB");
}

void KvCache::encode_row(const float* src, int64_t n, uint8_t* dst) const {
    switch (kv_type_) {
        case ER_KV_F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); break;
        case ER_KV_F16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = quant::fp32_to_fp16(src[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            break;
        default: quantize_row_q8_0(src, dst, n); break;
    }
}

}  // namespace edgerun::cpu_ref
