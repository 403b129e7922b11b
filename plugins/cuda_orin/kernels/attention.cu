// Flash-decode attention for the query tokens of a step's rows (one per row: a decode
// step, a batch of sequences, a prompt's rows under their causal lengths) over an F16 or
// INT8 KV cache.
//
// Grid: (n_splits, n_head_kv, query-head chunks x rows). A block takes one row, one KV
// head and one split of that row's sequence and serves up to kAttentionMaxGroup query
// heads of that KV head
// (GQA: the K/V bytes are loaded once for all of them). Its 4 warps take 32-key tiles in
// turn; per tile a warp
//   1. scores the keys: a few lanes per key, each dotting 16 (F16) or 32 (INT8, one scale
//      group; dp4a against an 8-bit query in decode steps, floats otherwise) dims,
//      summed with shuffles;
//   2. updates its online softmax (max, sum; softmax_merge.hpp) per query head;
//   3. accumulates p * V from one load of a V row per lane (ValueDims: 8 dims of F16,
//      16 of INT8, 8 in the float-query form), so a row is one coalesced load; four rows
//      a lane are loaded before the first is used.
// Warps are merged in shared memory, splits by a second kernel or by the row's last split
// block to finish (attention_split.cuh); splits past the current KV length (read from
// device memory) return at once and are skipped by the merge.
//
// STATUS: see kernels.hpp.
#include "attention_params.hpp"
#if ER_KERNEL_LAUNCHERS
#include "launch_kernel.cuh"
#endif
#include "attention_split.cuh"
#include "device_math.hpp"
#include "grid_dependency.cuh"
#include "softmax_merge.hpp"
#include "warp.cuh"

namespace edgerun::cuda_orin {
namespace {

constexpr int kWarps = kSplitWarps, kTile = kSplitTile, kMaxGroup = kSplitMaxGroup;

// A lane's 32 bytes of a K row (16 dims of F16 or 32 of INT8, with their scale), loaded
// before they are scored so that a warp can have several passes' keys in flight.
struct KeyBytes {
    Words4 a, b;
    uint16_t scale;
};

template <int Dim, int Kv>
__device__ KeyBytes load_key(const KvCacheLayer& c, int kv_head, int key, int seg) {
    const size_t token = size_t(kv_head) * c.n_ctx + key;
    const uint8_t* row = static_cast<const uint8_t*>(c.k) + (token * Dim + seg * (Kv == kKvF16 ? 16 : 32)) * (Kv == kKvF16 ? 2 : 1);
    KeyBytes k{load_16B(row), load_16B(row + 16), 0};
    if constexpr (Kv != kKvF16) k.scale = load_2B(c.k_scales + token * (Dim / 32) + seg);
    return k;
}

template <int Dim, int Kv>
struct KeyScorer;

// F16 keys: Dim/16 lanes per key, 16 dims each; q in float.
template <int Dim>
struct KeyScorer<Dim, kKvF16> {
    static constexpr int kLanesPerKey = Dim / 16;
    static constexpr int kDimsPerLane = 16;

    __device__ static void score(const KeyBytes& key, const float (*q)[Dim], const int8_t (*)[Dim],
                                 const float (*)[Dim / 32], int seg, int n_q, float* out) {
        float k[16];
        for (int i = 0; i < 4; ++i) {
            k[2 * i] = half_to_float(uint16_t(key.a.w[i] & 0xFFFFu));
            k[2 * i + 1] = half_to_float(uint16_t(key.a.w[i] >> 16));
            k[8 + 2 * i] = half_to_float(uint16_t(key.b.w[i] & 0xFFFFu));
            k[8 + 2 * i + 1] = half_to_float(uint16_t(key.b.w[i] >> 16));
        }
        for (int g = 0; g < kMaxGroup; ++g) {
            float s = 0.0f;
            if (g < n_q)
                for (int i = 0; i < 16; ++i) s += q[g][seg * kDimsPerLane + i] * k[i];
            out[g] = s;
        }
    }
};

// INT8 keys, two ways. Dim/32 lanes per key, one 32-value scale group each.
//   - kKvQ8 (decode steps): dotted by dp4a with the query quantized to 8 bits per group,
//     score = d_k * d_q * sum. Four times less query traffic from shared memory and a
//     quarter of the instructions; its error (~|q||k|/254 per term) passed the suite on
//     the H200 for one-row steps.
//   - kKvQ8FloatQuery (steps of several rows): the group's bytes made floats (exactly),
//     dotted with the float query, then scaled: the values the reference reads, in float
//     arithmetic. The 8-bit query put a 64-row prompt step with large scores (~200) at
//     NMSE 1.7e-3 against the suite's 5e-4.
constexpr int kKvQ8FloatQuery = 3;  // an instantiation of the kernel, not a cache type

template <int Dim>
struct KeyScorer<Dim, kKvQ8> {
    static constexpr int kLanesPerKey = Dim / 32;
    static constexpr int kDimsPerLane = 32;

    __device__ static void score(const KeyBytes& key, const float (*)[Dim], const int8_t (*q8)[Dim],
                                 const float (*q8_scale)[Dim / 32], int seg, int n_q, float* out) {
        const float k_scale = half_to_float(key.scale);
        for (int g = 0; g < kMaxGroup; ++g) {
            float s = 0.0f;
            if (g < n_q) {
                const int8_t* qg = &q8[g][seg * kDimsPerLane];  // 16-byte aligned
                const Words4 qa = load_shared<Words4>(qg), qb = load_shared<Words4>(qg + 16);
                int32_t dot = 0;
                for (int i = 0; i < 4; ++i) {
                    dot = dp4a(key.a.w[i], qa.w[i], dot);
                    dot = dp4a(key.b.w[i], qb.w[i], dot);
                }
                s = k_scale * q8_scale[g][seg] * float(dot);
            }
            out[g] = s;
        }
    }
};

template <int Dim>
struct KeyScorer<Dim, kKvQ8FloatQuery> {
    static constexpr int kLanesPerKey = Dim / 32;
    static constexpr int kDimsPerLane = 32;

    __device__ static void score(const KeyBytes& key, const float (*q)[Dim], const int8_t (*)[Dim],
                                 const float (*)[Dim / 32], int seg, int n_q, float* out) {
        const float k_scale = half_to_float(key.scale);
        float k[32];
        for (int i = 0; i < 16; ++i) {
            k[i] = signed_byte_to_float(key.a.w[i / 4], i % 4);
            k[16 + i] = signed_byte_to_float(key.b.w[i / 4], i % 4);
        }
        for (int g = 0; g < kMaxGroup; ++g) {
            float s = 0.0f;
            if (g < n_q)
                for (int i = 0; i < 32; ++i) s += q[g][seg * kDimsPerLane + i] * k[i];
            out[g] = s * k_scale;
        }
    }
};

// A lane's part of a V row: loaded first, added into the accumulators later, so that a
// warp can have several rows in flight before it uses one. F16: 8 dims (16 bytes). INT8:
// 16 dims (16 bytes) in decode steps, where the bytes' conversion and the FMAs are most
// of the kernel's instructions and more dims a load means less else per byte; 8 (8
// bytes) in the float-query form, whose K scoring holds 32 floats and would spill past
// 128 registers. The INT8 scale (of the dims' 32-value group) multiplies the probability
// once per query head instead of each value.
template <int Dim, int Kv>
struct ValueDims {
    static constexpr int kDims = Kv == kKvQ8 ? 16 : 8;
    Words4 bytes;  // the first kDims / 4 words
    uint16_t scale;

    __device__ void load(const KvCacheLayer& c, int kv_head, int key, int seg) {
        const size_t token = size_t(kv_head) * c.n_ctx + key;
        const uint8_t* dims = static_cast<const uint8_t*>(c.v) + token * Dim + seg * kDims;
        if constexpr (kDims == 16) {
            bytes = load_16B(dims);
        } else {
            const Words2 half = load_8B(dims);
            bytes.w[0] = half.w[0];
            bytes.w[1] = half.w[1];
        }
        scale = load_2B(c.v_scales + token * (Dim / 32) + seg * kDims / 32);
    }
    __device__ void add_to(float (&acc)[kMaxGroup][kDims], const float (*probs)[kTile], int j, int n_q) const {
        const float d = half_to_float(scale);
        float v[kDims];
        for (int i = 0; i < kDims; ++i) v[i] = signed_byte_to_float(bytes.w[i / 4], i % 4);
        for (int g = 0; g < n_q; ++g) {
            const float prob = probs[g][j] * d;
            for (int i = 0; i < kDims; ++i) acc[g][i] += prob * v[i];
        }
    }
};

template <int Dim>
struct ValueDims<Dim, kKvF16> {
    static constexpr int kDims = 8;
    Words4 halves;

    __device__ void load(const KvCacheLayer& c, int kv_head, int key, int seg) {
        const size_t token = size_t(kv_head) * c.n_ctx + key;
        halves = load_16B(static_cast<const uint8_t*>(c.v) + (token * Dim + seg * kDims) * 2);
    }
    __device__ void add_to(float (&acc)[kMaxGroup][kDims], const float (*probs)[kTile], int j, int n_q) const {
        float v[kDims];
        for (int i = 0; i < 4; ++i) {
            v[2 * i] = half_to_float(uint16_t(halves.w[i] & 0xFFFFu));
            v[2 * i + 1] = half_to_float(uint16_t(halves.w[i] >> 16));
        }
        for (int g = 0; g < n_q; ++g) {
            const float prob = probs[g][j];
            for (int i = 0; i < kDims; ++i) acc[g][i] += prob * v[i];
        }
    }
};

template <int Dim, int Kv>
__global__ void __launch_bounds__(kWarps * 32, 4) attention_split_kernel(const AttentionParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    using Scorer = KeyScorer<Dim, Kv>;
    constexpr int kKeysPerPass = 32 / Scorer::kLanesPerKey;
    constexpr int kKeyPasses = kTile / kKeysPerPass, kKeyBatch = 2;
    static_assert(kKeyPasses % kKeyBatch == 0, "a tile's key passes come in whole batches");
    constexpr int kValueDims = ValueDims<Dim, Kv>::kDims;  // a lane's, from one load
    constexpr int kValueLanes = Dim / kValueDims;          // lanes covering one V row
    constexpr int kValueKeys = 32 / kValueLanes;           // V rows per step
    constexpr int kValueSteps = kTile / kValueKeys, kValueBatch = 4;
    static_assert(kValueSteps % kValueBatch == 0, "a tile's V steps come in whole batches");

    alignas(16) __shared__ float q_f[kMaxGroup][Dim];
    ER_SHARED_ARRAY(q_f);
    alignas(16) __shared__ int8_t q_8[kMaxGroup][Dim];  // read 16 bytes at a time
    ER_SHARED_ARRAY(q_8);
    __shared__ float q_8_scale[kMaxGroup][Dim / 32];
    ER_SHARED_ARRAY(q_8_scale);
    __shared__ float probs[kWarps][kMaxGroup][kTile];
    ER_SHARED_ARRAY(probs);
    __shared__ float warp_o[kWarps][kMaxGroup][Dim];
    ER_SHARED_ARRAY(warp_o);
    __shared__ float warp_ml[kWarps][kMaxGroup][2];
    ER_SHARED_ARRAY(warp_ml);

    const SplitBlock b = split_block(p);
    if (split_is_empty(p, b)) return;
    const int kv_head = b.kv_head, q_head0 = b.q_head0, n_q = b.n_q, begin = b.begin, end = b.end;
    const KvCacheLayer& cache = b.cache;
    const float* q = p.q + size_t(b.row) * p.n_head * Dim;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // The query, scaled so scores come out in the log2 domain, and for dp4a its 8-bit form.
    const float q_scale = p.scale * kLog2e;
    for (int i = threadIdx.x; i < kMaxGroup * Dim; i += blockDim.x) {
        const int g = i / Dim, d = i % Dim;
        q_f[g][d] = g < n_q ? q[size_t(q_head0 + g) * Dim + d] * q_scale : 0.0f;
    }
    __syncthreads();
    if constexpr (Kv == kKvQ8) {
        for (int group = warp; group < kMaxGroup * Dim / 32; group += kWarps) {
            const int g = group / (Dim / 32), j = group % (Dim / 32);
            const float v = q_f[g][32 * j + lane];
            const float d = q8_scale(warp_max(fabsf(v)));
            q_8[g][32 * j + lane] = q8_round(v, q8_inverse(d));
            if (lane == 0) q_8_scale[g][j] = d;
        }
        __syncthreads();
    }

    float m[kMaxGroup], l[kMaxGroup], acc[kMaxGroup][kValueDims];
    for (int g = 0; g < kMaxGroup; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
        for (int i = 0; i < kValueDims; ++i) acc[g][i] = 0.0f;
    }

    const int key_slot = lane / Scorer::kLanesPerKey, key_seg = lane % Scorer::kLanesPerKey;
    const int value_slot = lane / kValueLanes, value_seg = lane % kValueLanes;
    for (int tile = begin + warp * kTile; tile < end; tile += kWarps * kTile) {
        // 1. Scores of the tile's keys, kKeyBatch passes' keys loaded before the first is
        // scored. Keys past the end load the last key; step 2 drops their scores.
        for (int pass = 0; pass < kKeyPasses && tile + pass * kKeysPerPass < end; pass += kKeyBatch) {
            KeyBytes keys[kKeyBatch];
#pragma unroll
            for (int b = 0; b < kKeyBatch; ++b)
                keys[b] = load_key<Dim, Kv>(cache, kv_head, min(tile + (pass + b) * kKeysPerPass + key_slot, end - 1), key_seg);
#pragma unroll
            for (int b = 0; b < kKeyBatch; ++b) {
                const int j = (pass + b) * kKeysPerPass + key_slot;
                float s[kMaxGroup];
                Scorer::score(keys[b], q_f, q_8, q_8_scale, key_seg, n_q, s);
                for (int g = 0; g < kMaxGroup; ++g) {
                    const float total = group_sum(s[g], Scorer::kLanesPerKey);
                    if (key_seg == 0) probs[warp][g][j] = total;
                }
            }
        }
        __syncwarp();
        // 2. Online softmax per query head; scores become probabilities in place, 0 past
        // the end (where step 1 may have written nothing).
        for (int g = 0; g < n_q; ++g) {
            const float s = tile + lane < end ? probs[warp][g][lane] : -INFINITY;
            const float factor = online_softmax_rescale(&m[g], warp_max(s));
            const float prob = s == -INFINITY ? 0.0f : exp2f(s - m[g]);
            l[g] = l[g] * factor + warp_sum(prob);
            probs[warp][g][lane] = prob;
            for (int i = 0; i < kValueDims; ++i) acc[g][i] *= factor;
        }
        __syncwarp();
        // 3. acc += p * V, kValueBatch rows a lane loaded before any is used: one at a time
        // left a warp 256 bytes in flight (INT8), far too few to cover DRAM latency. Keys
        // past the end load the last key's row (in the cache, finite) under a probability
        // of 0, which adds nothing.
        for (int step = 0; step < kValueSteps && tile + step * kValueKeys < end; step += kValueBatch) {
            ValueDims<Dim, Kv> v[kValueBatch];
#pragma unroll
            for (int b = 0; b < kValueBatch; ++b)
                v[b].load(cache, kv_head, min(tile + (step + b) * kValueKeys + value_slot, end - 1), value_seg);
#pragma unroll
            for (int b = 0; b < kValueBatch; ++b) v[b].add_to(acc, probs[warp], (step + b) * kValueKeys + value_slot, n_q);
        }
        __syncwarp();  // probs is overwritten by the next tile's scores
    }

    // Lanes holding the same dims for different keys add up; then warps merge.
    for (int g = 0; g < kMaxGroup; ++g)
        for (int i = 0; i < kValueDims; ++i)
            for (int offset = kValueLanes; offset < 32; offset *= 2)
                acc[g][i] += __shfl_xor_sync(kFullMask, acc[g][i], offset);
    if (value_slot == 0)
        for (int g = 0; g < kMaxGroup; ++g)
            for (int i = 0; i < kValueDims; ++i) warp_o[warp][g][value_seg * kValueDims + i] = acc[g][i];
    if (lane == 0)
        for (int g = 0; g < kMaxGroup; ++g) {
            warp_ml[warp][g][0] = m[g];
            warp_ml[warp][g][1] = l[g];
        }
    __syncthreads();
    finish_split<Dim>(p, b, warp_o, warp_ml);
}

// One block per query head and row, one thread per dim: the merge of the non-empty splits
// (of the split kernel or of the tiled one, attention_tiles.cu), merged_output's.
__global__ void attention_merge_kernel(const AttentionParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    __shared__ float scratch[32];
    ER_SHARED_ARRAY(scratch);
    const int head = blockIdx.x, row = blockIdx.y, d = threadIdx.x;
    const size_t query = size_t(row) * p.n_head + head;
    const int n_parts = merged_splits(p, row);
    const float m = block_max(splits_max<false>(p, query, n_parts, d, blockDim.x), scratch);
    store_attention_output(p, query * p.cache.head_dim + d, merged_output<false>(p, query, n_parts, m, d));
}

// INT8 caches: which KeyScorer a launch takes, dp4a for decode steps, the float query for
// steps of several rows.
inline bool scores_by_dp4a(const AttentionParams& p) { return p.n_rows == 1; }

// The six instantiations (head dim x cache type and query form), named so NVRTC compiles them too.
template __global__ void attention_split_kernel<64, kKvF16>(const AttentionParams);
template __global__ void attention_split_kernel<128, kKvF16>(const AttentionParams);
template __global__ void attention_split_kernel<64, kKvQ8>(const AttentionParams);
template __global__ void attention_split_kernel<128, kKvQ8>(const AttentionParams);
template __global__ void attention_split_kernel<64, kKvQ8FloatQuery>(const AttentionParams);
template __global__ void attention_split_kernel<128, kKvQ8FloatQuery>(const AttentionParams);

}  // namespace

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_attention(const AttentionParams& p, LaunchStream stream) {
    const AttentionGrid g = plan_attention(p);
    if (g.splits == 0) return cudaErrorInvalidValue;
    const dim3 grid(g.splits, g.kv_heads, g.chunks * g.rows);
    const bool f16 = p.cache.type == kKvF16, dp4a = scores_by_dp4a(p);
    const auto split = p.cache.head_dim == 64
                           ? (f16 ? attention_split_kernel<64, kKvF16>
                                  : dp4a ? attention_split_kernel<64, kKvQ8> : attention_split_kernel<64, kKvQ8FloatQuery>)
                           : (f16 ? attention_split_kernel<128, kKvF16>
                                  : dp4a ? attention_split_kernel<128, kKvQ8> : attention_split_kernel<128, kKvQ8FloatQuery>);
    const cudaError_t err = p.tiles ? launch_attention_tiles(p, grid, stream)
                            : p.mma ? launch_attention_mma(p, grid, stream)
                                    : launch_kernel(split, grid, dim3(kWarps * 32), 0, stream, p);
    if (err != cudaSuccess || !attention_merges(p)) return err;
    return launch_kernel(attention_merge_kernel, dim3(p.n_head, p.n_rows), dim3(p.cache.head_dim), 0, stream, p);
}
#endif

}  // namespace edgerun::cuda_orin
