// The general, unfused graph ops (graph_op_params.hpp): RMSNorm over groups, RoPE of
// many rows, add and SwiGLU, KV append of many rows, and causal attention of many rows over
// any head dim. Every op of the llama/qwen2/qwen3 graphs
// runs through these (or the GEMV, embedding and flash-decode kernels) for any step.
// Correct and plain first; the fused and faster paths are the backend's choice.
//
// STATUS: see kernels.hpp.
#include "graph_op_params.hpp"
#if ER_KERNEL_LAUNCHERS
#include "launch_kernel.cuh"
#endif
#include "device_math.hpp"
#include "grid_dependency.cuh"
#include "embed_rows.hpp"
#include "planted_faults.hpp"
#include "warp.cuh"
#include "weight_type_switch.cuh"

namespace edgerun::cuda_orin {
namespace {

constexpr int kRowThreads = 128;

__device__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float m = -INFINITY;
    for (int w = 0; w < n_warps; ++w) m = fmaxf(m, scratch[w]);
    __syncthreads();  // scratch is reused by the caller's next reduction
    return m;
}

// Block (group, row): one group of `group` values of one row.
__global__ void rms_norm_kernel(const RmsNormParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    __shared__ float scratch[32];
    ER_SHARED_ARRAY(scratch);
    const size_t base = size_t(blockIdx.y) * p.width + size_t(blockIdx.x) * p.group;
    float sum_sq = 0.0f;
    for (int i = threadIdx.x; i < p.group; i += blockDim.x) {
        const float x = p.x[base + i];
        sum_sq += x * x;
    }
    const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / float(p.group) + p.eps);
    for (int i = threadIdx.x; i < p.group; i += blockDim.x) p.out[base + i] = p.x[base + i] * inv_rms * p.weight[i];
}

// Block (head, row), one thread per pair of dims: rotated pairs first, then the copied
// dims past n_rot, two per thread.
__global__ void rope_rows_kernel(const RopeRowsParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    const int t = threadIdx.x, dim = p.rope.head_dim, half_rot = p.rope.n_rot / 2;
    if (t >= dim / 2) return;
    const size_t base = size_t(blockIdx.y) * p.width + size_t(blockIdx.x) * dim;
    if (t < half_rot) {
        int first, second;
        rope_pair_dims(p.rope, t, &first, &second);
        const float factor = p.rope.freq_factors ? p.rope.freq_factors[t] : 1.0f;
        float s, c;
        sincosf(rope_angle(p.rope, p.rows.pos[blockIdx.y], t, factor), &s, &c);
        const float a = p.x[base + first], b = p.x[base + second];
        p.out[base + first] = a * c - b * s;
        p.out[base + second] = a * s + b * c;
    } else {
        const int d = p.rope.n_rot + 2 * (t - half_rot);
        p.out[base + d] = p.x[base + d];
        p.out[base + d + 1] = p.x[base + d + 1];
    }
}

__global__ void elementwise_kernel(const ElementwiseParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const float a = p.a[i], b = p.b[p.b_period > 0 ? i % p.b_period : i];
    p.out[i] = p.op == kElementwiseAdd ? a + b : a / (1.0f + expf(-a)) * b;
}

// Stores value d of a token's K or V head into the cache (Q8: one warp per 32 dims, the
// same max, scale and rounding as kv_q8_quantize_group).
__device__ void store_cache_value(const KvCacheLayer& c, void* values, uint16_t* scales, size_t token, int d, float x) {
    if (c.type == kKvF32) {
        if (d < c.head_dim) static_cast<float*>(values)[token * c.head_dim + d] = x;
        return;
    }
    if (c.type == kKvF16) {
        if (d < c.head_dim) static_cast<uint16_t*>(values)[token * c.head_dim + d] = float_to_half(x);
        return;
    }
    const float scale = q8_scale(warp_max(fabsf(x)));
    static_cast<int8_t*>(values)[token * c.head_dim + d] = q8_round(x, q8_inverse(scale));
    if (d % 32 == 0) scales[kv_q8_scale_index(token, c.head_dim, d)] = float_to_half(scale);
}

// Block (kv head, row), a thread per dim (rounded up to whole warps).
__global__ void kv_append_kernel(const KvAppendParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    const int kv_head = blockIdx.x, r = blockIdx.y, d = threadIdx.x;
    const KvCacheLayer& c = p.cache.layer;
    const int pos = p.rows.pos[r], seq = p.rows.seq[r];
    if (pos < 0 || pos >= c.n_ctx) return;  // the whole block agrees
    const size_t token = size_t(kv_head) * c.n_ctx + pos;
    const size_t src = size_t(r) * c.n_head_kv * c.head_dim + size_t(kv_head) * c.head_dim + d;
    const KvCacheLayer own = sequence_cache(c, seq, p.cache.seq_stride_values, p.cache.seq_stride_scales);
    const bool inside = d < c.head_dim;
    store_cache_value(c, own.k, own.k_scales, token, d, inside ? p.k[src] : 0.0f);
    store_cache_value(c, own.v, own.v_scales, token, d, inside ? p.v[src] : 0.0f);
}

__device__ float cache_value(const KvCacheLayer& c, const void* values, const uint16_t* scales, size_t token, int d) {
    if (c.type == kKvF32) return static_cast<const float*>(values)[token * c.head_dim + d];
    if (c.type == kKvF16) return half_to_float(static_cast<const uint16_t*>(values)[token * c.head_dim + d]);
    const int8_t q = static_cast<const int8_t*>(values)[token * c.head_dim + d];
    return half_to_float(scales[token * (c.head_dim / 32) + d / 32]) * float(q);
}

// Block (query head, row): scores of every visible key, a two-pass softmax, then p * V.
__global__ void attention_rows_kernel(const AttentionRowsParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    __shared__ float scratch[32];
    ER_SHARED_ARRAY(scratch);
    const int head = blockIdx.x, r = blockIdx.y;
    const KvCacheLayer& c = p.cache.layer;
    const int dim = c.head_dim, kv_head = head / (p.n_head / c.n_head_kv);
    const int kv_len = min(max(p.rows.kv_len[r], 0), c.n_ctx), seq = p.rows.seq[r];
    const KvCacheLayer own = sequence_cache(c, seq, p.cache.seq_stride_values, p.cache.seq_stride_scales);
    const float* q = p.q + (size_t(r) * p.n_head + head) * dim;
    float* scores = p.scores + (size_t(r) * p.n_head + head) * c.n_ctx;

    float m = -INFINITY;
    for (int t = threadIdx.x; t < kv_len; t += blockDim.x) {
        const size_t token = size_t(kv_head) * c.n_ctx + t;
        float s = 0.0f;
        for (int d = 0; d < dim; ++d) s += q[d] * cache_value(c, own.k, own.k_scales, token, d);
        s *= p.scale;
        scores[t] = s;
        m = fmaxf(m, s);
    }
    m = block_max(m, scratch);
    float l = 0.0f;
    for (int t = threadIdx.x; t < kv_len; t += blockDim.x) {
        const float e = expf(scores[t] - m);
        scores[t] = e;
        l += e;
    }
    l = block_sum(l, scratch);  // its barriers also make every score visible
    float* out = p.out + (size_t(r) * p.n_head + head) * dim;
    for (int d = threadIdx.x; d < dim; d += blockDim.x) {
        float acc = 0.0f;
        for (int t = 0; t < kv_len; ++t) acc += scores[t] * cache_value(c, own.v, own.v_scales, size_t(kv_head) * c.n_ctx + t, d);
        out[d] = l > 0.0f ? acc / l : 0.0f;
    }
}

// Block per row, threads over the row's tasks: the weights exactly as cpu_ref dequantizes
// them (embed_rows.hpp, shared with the embedding lookup).
__global__ void dequantize_rows_kernel(const DequantizeRowsParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    const int r = blockIdx.x, row = p.row0 + r;
    const int64_t at = int64_t(r) * p.w.n_cols;
    for (int task = threadIdx.x; task < tasks_per_row(p.w); task += blockDim.x) {
        visit_weight_type(p.w.type, false, [&](auto type) {
            if (p.out_is_f16)
                dequantize_task_exact<decltype(type)::value>(p.w, row, task, static_cast<uint16_t*>(p.out) + at);
            else
                dequantize_task_exact<decltype(type)::value>(p.w, row, task, static_cast<float*>(p.out) + at);
            return true;
        });
    }
}

// Block per row, threads over its values.
__global__ void half_rows_kernel(const HalfRowsParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    const int r = blockIdx.x;
    for (int i = threadIdx.x; i < p.cols; i += blockDim.x)
        p.out[int64_t(r) * p.cols + i] = float_to_half(p.x[int64_t(r) * p.ld + i]);
}

}  // namespace

// Launch shapes, shared by the CUDA launchers and the emulated device.
struct GraphOpShape {
    dim3 grid, block;
};
inline GraphOpShape rms_norm_shape(const RmsNormParams& p) {
    return {dim3(unsigned(p.width / p.group), unsigned(p.n_rows)), dim3(kRowThreads)};
}
inline GraphOpShape rope_rows_shape(const RopeRowsParams& p) {
    return {dim3(unsigned(p.width / p.rope.head_dim), unsigned(p.n_rows)),
            dim3(unsigned(ceil_div(p.rope.head_dim / 2, 32) * 32))};
}
inline GraphOpShape elementwise_shape(const ElementwiseParams& p) {
    return {dim3(unsigned((p.n + 255) / 256)), dim3(256)};
}
inline GraphOpShape kv_append_shape(const KvAppendParams& p) {
    return {dim3(unsigned(p.cache.layer.n_head_kv), unsigned(p.n_rows)),
            dim3(unsigned(ceil_div(p.cache.layer.head_dim, 32) * 32))};
}
inline GraphOpShape attention_rows_shape(const AttentionRowsParams& p) {
    return {dim3(unsigned(p.n_head), unsigned(p.n_rows)), dim3(kRowThreads)};
}
inline GraphOpShape dequantize_rows_shape(const DequantizeRowsParams& p) {
    return {dim3(unsigned(p.n_rows)), dim3(kRowThreads)};
}
inline GraphOpShape half_rows_shape(const HalfRowsParams& p) { return {dim3(unsigned(p.rows)), dim3(kRowThreads)}; }

// The parameter checks every implementation makes before a launch.
inline bool valid(const RmsNormParams& p) {
    return p.x && p.out && p.weight && p.n_rows > 0 && p.group > 0 && p.width % p.group == 0;
}
inline bool valid(const RopeRowsParams& p) {
    const RopeConfig& r = p.rope;
    return p.x && p.out && p.rows.pos && p.n_rows > 0 && r.head_dim > 0 && r.head_dim <= 2048 && r.head_dim % 2 == 0 &&
           p.width % r.head_dim == 0 && r.n_rot >= 2 && r.n_rot <= r.head_dim && r.n_rot % 2 == 0;
}
inline bool valid(const ElementwiseParams& p) { return p.a && p.b && p.out && p.n > 0 && p.b_period >= 0; }
inline bool valid(const DequantizeRowsParams& p) {
    return p.out && p.w.plane[0] && is_gemv_weight_type(p.w.type) && p.n_rows > 0 && p.row0 >= 0 &&
           int64_t{p.row0} + p.n_rows <= p.w.n_rows;
}
inline bool valid(const HalfRowsParams& p) { return p.x && p.out && p.rows > 0 && p.cols > 0 && p.ld >= p.cols; }
inline bool valid_cache(const KvLayerAllSeqs& c) {
    const KvCacheLayer& l = c.layer;
    return l.k && l.v && l.n_ctx > 0 && l.n_head_kv > 0 && l.head_dim > 0 && l.head_dim <= 1024 &&
           (l.type == kKvF32 || l.type == kKvF16 || (l.type == kKvQ8 && l.head_dim % 32 == 0 && l.k_scales && l.v_scales));
}
inline bool valid(const KvAppendParams& p) {
    return p.k && p.v && p.n_rows > 0 && p.rows.pos && p.rows.seq && valid_cache(p.cache);
}
inline bool valid(const AttentionRowsParams& p) {
    return p.q && p.out && p.scores && p.n_rows > 0 && p.n_head > 0 && p.rows.kv_len && p.rows.seq &&
           valid_cache(p.cache) && p.n_head % p.cache.layer.n_head_kv == 0;
}

#if ER_KERNEL_LAUNCHERS
namespace {
template <class Params, class Shape, class Kernel>
cudaError_t launch_checked(const Params& p, Shape shape, Kernel kernel, LaunchStream stream) {
    if (!valid(p)) return cudaErrorInvalidValue;
    const GraphOpShape s = shape(p);
    return launch_kernel(kernel, s.grid, s.block, 0, stream, p);
}
}  // namespace

cudaError_t launch_rms_norm(const RmsNormParams& p, LaunchStream stream) {
    return launch_checked(p, rms_norm_shape, rms_norm_kernel, stream);
}
cudaError_t launch_rope_rows(const RopeRowsParams& p, LaunchStream stream) {
    return launch_checked(p, rope_rows_shape, rope_rows_kernel, stream);
}
cudaError_t launch_elementwise(const ElementwiseParams& p, LaunchStream stream) {
    return launch_checked(p, elementwise_shape, elementwise_kernel, stream);
}
cudaError_t launch_kv_append(const KvAppendParams& p, LaunchStream stream) {
    return launch_checked(p, kv_append_shape, kv_append_kernel, stream);
}
cudaError_t launch_attention_rows(const AttentionRowsParams& p, LaunchStream stream) {
    return launch_checked(p, attention_rows_shape, attention_rows_kernel, stream);
}
cudaError_t launch_dequantize_rows(const DequantizeRowsParams& p, LaunchStream stream) {
    return launch_checked(p, dequantize_rows_shape, dequantize_rows_kernel, stream);
}
cudaError_t launch_half_rows(const HalfRowsParams& p, LaunchStream stream) {
    return launch_checked(p, half_rows_shape, half_rows_kernel, stream);
}
#endif

}  // namespace edgerun::cuda_orin
