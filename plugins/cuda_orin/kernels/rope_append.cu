// RoPE and KV-cache append for the token being decoded: one block per head (the n_head
// query heads, then the n_head_kv key heads, each of which also stores its V head), one
// thread per dimension. Optional per-head RMSNorm first (Qwen3's q_norm/k_norm).
// The position is read from device memory, so the launch is graph-safe.
//
// STATUS: see kernels.hpp.
#include "kernel_params.hpp"
#if ER_KERNEL_LAUNCHERS
#include "launch_kernel.cuh"
#endif
#include "device_math.hpp"
#include "grid_dependency.cuh"
#include "warp.cuh"

namespace edgerun::cuda_orin {
namespace {

constexpr int kMaxHeadDim = 256;

// Stores one value of a token's K or V row into the cache. For Q8 every warp holds one
// group of 32 dims (head_dim is a multiple of 32) and quantizes it like
// kv_q8_quantize_group: the same max, scale, inverse and rounding, so the bytes match.
__device__ void store_kv(const KvCacheLayer& c, void* values, uint16_t* scales, int kv_head, int pos, int d, float x) {
    const size_t token = size_t(kv_head) * c.n_ctx + pos;
    if (c.type == kKvF16) {
        static_cast<uint16_t*>(values)[token * c.head_dim + d] = float_to_half(x);
        return;
    }
    const float scale = q8_scale(warp_max(fabsf(x)));
    static_cast<int8_t*>(values)[token * c.head_dim + d] = q8_round(x, q8_inverse(scale));
    if (d % 32 == 0) scales[kv_q8_scale_index(token, c.head_dim, d)] = float_to_half(scale);
}

__global__ void __launch_bounds__(kMaxHeadDim) rope_append_kernel(const RopeAppendParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    __shared__ float row[kMaxHeadDim];
    ER_SHARED_ARRAY(row);
    __shared__ float scratch[32];
    ER_SHARED_ARRAY(scratch);
    const int head = blockIdx.x, d = threadIdx.x, dim = p.rope.head_dim;
    const bool is_q = head < p.n_head;
    const int kv_head = head - p.n_head;
    const int pos = *p.pos;
    const KvCacheLayer cache =
        p.seq ? sequence_cache(p.cache, *p.seq, p.seq_stride_values, p.seq_stride_scales) : p.cache;

    float x = is_q ? p.q[size_t(head) * dim + d] : p.k[size_t(kv_head) * dim + d];
    const float* norm = is_q ? p.q_norm : p.k_norm;
    if (norm) x *= rsqrtf(block_sum(x * x, scratch) / float(dim) + p.norm_eps) * norm[d];

    row[d] = x;
    __syncthreads();
    const int half_rot = p.rope.n_rot / 2;
    if (d < p.rope.n_rot) {
        const bool neox = p.rope.mode == kRopeNeox;
        const int pair = neox ? d % half_rot : d / 2;
        int first, second;
        rope_pair_dims(p.rope, pair, &first, &second);
        const float factor = p.rope.freq_factors ? p.rope.freq_factors[pair] : 1.0f;
        float s, c;
        sincosf(rope_angle(p.rope, pos, pair, factor), &s, &c);
        x = d == first ? row[first] * c - row[second] * s : row[first] * s + row[second] * c;
    }

    if (is_q) {
        p.q[size_t(head) * dim + d] = x;
        return;
    }
    if (pos < 0 || pos >= cache.n_ctx) return;  // the whole block agrees: no warp is left half-way
    store_kv(cache, cache.k, cache.k_scales, kv_head, pos, d, x);
    store_kv(cache, cache.v, cache.v_scales, kv_head, pos, d, p.v[size_t(kv_head) * dim + d]);
}

}  // namespace

// One block per q head and per KV head, one thread per dimension (warps of whole Q8 groups).
inline bool valid(const RopeAppendParams& p) {
    const int dim = p.rope.head_dim;
    return p.q && p.k && p.v && p.pos && p.n_head > 0 && p.cache.n_head_kv > 0 && dim > 0 && dim <= kMaxHeadDim &&
           dim % 32 == 0 && p.rope.n_rot >= 0 && p.rope.n_rot <= dim && p.rope.n_rot % 2 == 0 &&
           p.cache.head_dim == dim && p.cache.k && p.cache.v &&
           (!p.seq || p.seq_stride_values >= int64_t(p.cache.n_head_kv) * p.cache.n_ctx * dim) &&
           (p.cache.type == kKvF16 || (p.cache.type == kKvQ8 && p.cache.k_scales && p.cache.v_scales));
}
inline dim3 rope_append_grid(const RopeAppendParams& p) { return dim3(p.n_head + p.cache.n_head_kv); }

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_rope_append(const RopeAppendParams& p, LaunchStream stream) {
    if (!valid(p)) return cudaErrorInvalidValue;
    return launch_kernel(rope_append_kernel, rope_append_grid(p), dim3(p.rope.head_dim), 0, stream, p);
}
#endif

}  // namespace edgerun::cuda_orin
